import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { ConfigError, ModelError } from '../../src/core/errors.ts';
import type { ContentPart, Message } from '../../src/core/messages.ts';
import type { ModelResponse, ToolSpec } from '../../src/core/model.ts';
import { type AnthropicOptions, anthropic } from '../../src/providers/anthropic.ts';
import * as wire from '../fixtures/wire/anthropic.ts';
import { recordingRequest, useWireServer } from '../support/wire-session.ts';

const { serve, bodyOf, current } = useWireServer();

function provider(url: string, options: AnthropicOptions = {}) {
  return anthropic('claude-test-1', { apiKey: 'test-key', baseURL: url, ...options });
}

const request = recordingRequest;

const weatherTools: ToolSpec[] = [
  {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
  },
  { name: 'get_time', description: 'The time now', parameters: { type: 'object', properties: {} } },
];

describe('anthropic(): streaming against the wire', () => {
  it('streams text, reports usage with cache tokens counted as input, and sends a proper request', async () => {
    const { url } = await serve({ sse: wire.streamedText });
    const req = request([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Say hello.' },
    ]);
    const response = await provider(url).generate(req);

    expect(response.text).toBe('Hello, world.');
    expect(response.stopReason).toBe('end_turn');
    expect(response.rawStopReason).toBe('end_turn');
    expect(response.usage).toEqual({ input: 142, output: 7, cached: 100, reasoning: 0 });
    expect(response.toolCalls).toEqual([]);
    expect(req.deltas).toEqual([
      { type: 'text', text: 'Hello' },
      { type: 'text', text: ', ' },
      { type: 'text', text: 'world.' },
    ]);

    const seen = current().requests[0]!;
    expect(seen.path).toBe('/v1/messages');
    // This SDK version authenticates with a bearer token.
    expect(seen.headers.authorization).toBe('Bearer test-key');
    expect(seen.body).toEqual({
      model: 'claude-test-1',
      max_tokens: 4096,
      stream: true,
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Say hello.' }],
    });
  });

  it('assembles two parallel tool calls from input_json_delta pieces; an empty partial_json gives {}', async () => {
    const { url } = await serve({ sse: wire.parallelToolUse });
    const req = request([{ role: 'user', content: 'Weather in Paris, and the time?' }], {
      tools: weatherTools,
    });
    const response = await provider(url).generate(req);

    expect(response.stopReason).toBe('tool_use');
    expect(response.text).toBe('Looking both up.');
    expect(response.toolCalls).toEqual([
      { id: 'toolu_A', name: 'get_weather', args: { location: 'Paris' } },
      { id: 'toolu_B', name: 'get_time', args: {} },
    ]);
    const toolDeltas = req.deltas.filter((delta) => delta.type === 'tool_call');
    expect(toolDeltas).toEqual([
      { type: 'tool_call', index: 0, id: 'toolu_A', name: 'get_weather', argsDelta: '' },
      { type: 'tool_call', index: 0, argsDelta: '{"loca' },
      { type: 'tool_call', index: 0, argsDelta: 'tion": "Par' },
      { type: 'tool_call', index: 0, argsDelta: 'is"}' },
      { type: 'tool_call', index: 1, id: 'toolu_B', name: 'get_time', argsDelta: '' },
    ]);
    expect(bodyOf(0).tools).toEqual([
      { name: 'get_weather', description: 'Weather for a city', input_schema: weatherTools[0]!.parameters },
      { name: 'get_time', description: 'The time now', input_schema: weatherTools[1]!.parameters },
    ]);
  });

  it('keeps thinking blocks (with signature) and redacted ones, and sends them back unchanged before tool_use', async () => {
    const { url } = await serve({ sse: wire.thinkingToolUse }, { sse: wire.thinkingAnswer });
    const model = provider(url);
    const history: Message[] = [{ role: 'user', content: 'Largest city in my country?' }];
    const tools = [
      { name: 'get_user_country', description: '', parameters: { type: 'object', properties: {} } },
    ];
    const first = request(history, {
      tools,
      settings: { providerOptions: { thinking: { type: 'enabled', budget_tokens: 2000 } } },
    });
    const response = await model.generate(first);

    expect(response.stopReason).toBe('tool_use');
    expect(response.usage.reasoning).toBe(40);
    expect(response.reasoning).toEqual([
      {
        provider: 'anthropic',
        text: 'The user wants the country first.',
        data: {
          type: 'thinking',
          thinking: 'The user wants the country first.',
          signature: 'EqQBCkYIARgCIkB-signature',
        },
      },
      { provider: 'anthropic', data: { type: 'redacted_thinking', data: 'EmwKAhgBEgy-redacted' } },
    ]);
    expect(first.deltas.filter((delta) => delta.type === 'reasoning')).toEqual([
      { type: 'reasoning', text: 'The user wants ' },
      { type: 'reasoning', text: 'the country first.' },
    ]);
    expect(bodyOf(0).thinking).toEqual({ type: 'enabled', budget_tokens: 2000 });

    const followUp: Message[] = [
      ...history,
      assistantFrom(response),
      { role: 'tool', toolCallId: 'toolu_C', name: 'get_user_country', content: 'Mexico' },
    ];
    const second = await model.generate(request(followUp, { tools }));
    expect(second.text).toBe('Mexico City.');
    expect(bodyOf(1).messages).toEqual([
      { role: 'user', content: 'Largest city in my country?' },
      {
        role: 'assistant',
        content: [
          {
            type: 'thinking',
            thinking: 'The user wants the country first.',
            signature: 'EqQBCkYIARgCIkB-signature',
          },
          { type: 'redacted_thinking', data: 'EmwKAhgBEgy-redacted' },
          { type: 'text', text: 'Let me check your country.' },
          { type: 'tool_use', id: 'toolu_C', name: 'get_user_country', input: {} },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_C', content: 'Mexico' }] },
    ]);
  });

  it('max_tokens in the middle of a tool input: stop reason max_tokens, the partial call is dropped, not parsed', async () => {
    const { url } = await serve({ sse: wire.maxTokensMidTool });
    const response = await provider(url).generate(request([{ role: 'user', content: 'Write taxes.txt' }]));

    expect(response.stopReason).toBe('max_tokens');
    expect(response.text).toBe('Writing the file.');
    expect(response.toolCalls).toEqual([]);
    expect(response.raw).toMatchObject({
      incompleteToolCalls: [
        { id: 'toolu_D', name: 'make_file', rawArgs: '{"filename": "taxes.txt", "lines": ["# Guide",' },
      ],
    });
  });

  it.each([
    ['refusal', wire.refusal, 'refusal'],
    ['pause_turn', wire.pauseTurn, 'pause_turn'],
    ['stop_sequence', wire.stopSequence, 'stop_sequence'],
  ] as const)('maps stop_reason %s', async (raw, frames, expected) => {
    const { url } = await serve({ sse: frames });
    const response = await provider(url).generate(request([{ role: 'user', content: 'x' }]));
    expect(response.stopReason).toBe(expected);
    expect(response.rawStopReason).toBe(raw);
    if (expected === 'refusal') expect(response.refusal).toBe('I cannot help with that.');
    else expect(response.refusal).toBeUndefined();
  });

  it('structured output goes through output_config.format (json_schema), settings through their fields', async () => {
    const { url } = await serve({ sse: wire.structuredAnswer });
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const response = await provider(url, { maxTokens: 1000 }).generate(
      request([{ role: 'user', content: 'Capital of France as JSON' }], {
        output: { name: 'answer', schema },
        settings: { temperature: 0.2, stopSequences: ['END'] },
      }),
    );
    expect(JSON.parse(response.text)).toEqual({ city: 'Paris' });
    const body = bodyOf(0);
    expect(body.output_config).toEqual({ format: { type: 'json_schema', schema } });
    expect(body.tools).toBeUndefined();
    expect(body.max_tokens).toBe(1000);
    expect(body.temperature).toBe(0.2);
    expect(body.stop_sequences).toEqual(['END']);
  });

  it('sends images in user messages as image blocks (base64 and url)', async () => {
    const { url } = await serve({ sse: wire.streamedText });
    await provider(url).generate(
      request([
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these?' },
            { type: 'image', data: 'iVBORw0KGgo=', mediaType: 'image/png' },
            { type: 'image', url: 'https://example.com/cat.jpg' },
          ],
        },
      ]),
    );
    expect(bodyOf(0).messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in these?' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
        ],
      },
    ]);
  });

  it('a data: URL image goes as a base64 block', async () => {
    const { url } = await serve({ sse: wire.streamedText });
    await provider(url).generate(
      request([{ role: 'user', content: [{ type: 'image', url: 'data:image/webp;base64,UklGRg==' }] }]),
    );
    expect(bodyOf(0).messages).toEqual([
      {
        role: 'user',
        content: [{ type: 'image', source: { type: 'base64', media_type: 'image/webp', data: 'UklGRg==' } }],
      },
    ]);
  });

  it('image forms the API cannot take are ConfigErrors, and nothing is sent', async () => {
    const { url } = await serve({ sse: wire.streamedText });
    const model = provider(url);
    const cases: { part: ContentPart; message: RegExp }[] = [
      { part: { type: 'image', data: 'AAAA', mediaType: 'image/tiff' }, message: /image\/tiff/ },
      {
        part: { type: 'image', data: 'data:image/png;base64,AAAA', mediaType: 'image/png' },
        message: /bare base64/,
      },
      { part: { type: 'image', url: 'file:///tmp/cat.png' }, message: /http\(s\) URLs or base64/ },
      { part: { type: 'image', url: 'data:image/bmp;base64,AAAA' }, message: /image\/bmp/ },
    ];
    for (const { part, message } of cases) {
      const error = await model
        .generate(request([{ role: 'user', content: [part] }]))
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(message);
    }
    expect(current().requests).toHaveLength(0);
  });

  it('a missing key is a ConfigError naming ANTHROPIC_API_KEY', () => {
    const saved = process.env.ANTHROPIC_API_KEY;
    delete process.env.ANTHROPIC_API_KEY;
    try {
      expect(() => anthropic('claude-test-1')).toThrow(ConfigError);
      expect(() => anthropic('claude-test-1')).toThrow(/ANTHROPIC_API_KEY/);
    } finally {
      if (saved !== undefined) process.env.ANTHROPIC_API_KEY = saved;
    }
  });
});

/** Back-off sleeps recorded instead of waited, so retry tests never sleep on real time. */
function recordedSleeps(): { sleeps: number[]; sleep: (ms: number, signal: AbortSignal) => Promise<void> } {
  const sleeps: number[] = [];
  return {
    sleeps,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  };
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a failure, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

describe('anthropic(): faults', () => {
  it('a stream that ends cleanly before message_stop is a retryable truncated_stream error', async () => {
    const { url } = await serve({ sse: wire.streamedText.slice(0, 3) });
    const error = await failure(
      provider(url, { maxRetries: 0 }).generate(request([{ role: 'user', content: 'x' }])),
    );
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ kind: 'truncated_stream', retryable: true });
  });

  it('a connection cut after text went out: truncated_stream, not retried (part of the answer was shown)', async () => {
    const { url } = await serve(
      { sse: wire.streamedText, truncateAfterChunks: 5 },
      { sse: wire.streamedText },
    );
    const req = request([{ role: 'user', content: 'x' }]);
    const error = await failure(provider(url, { sleep: recordedSleeps().sleep }).generate(req));
    expect(error).toMatchObject({ kind: 'truncated_stream', retryable: false });
    expect(req.deltas).toEqual([
      { type: 'text', text: 'Hello' },
      { type: 'text', text: ', ' },
    ]);
    expect(current().requests).toHaveLength(1);
  });

  it('a connection cut before anything was streamed is retried, and the retry answers', async () => {
    const { sleeps, sleep } = recordedSleeps();
    const { url } = await serve(
      { sse: wire.streamedText, truncateAfterChunks: 2 },
      { sse: wire.streamedText },
    );
    const req = request([{ role: 'user', content: 'x' }]);
    const response = await provider(url, { sleep, random: () => 0 }).generate(req);
    expect(response.text).toBe('Hello, world.');
    expect(current().requests).toHaveLength(2);
    expect(current().requests[1]!.body).toEqual(current().requests[0]!.body);
    expect(sleeps).toHaveLength(1);
  });

  it('a reset before any answer is a retryable network error', async () => {
    const { url } = await serve({ resetBeforeResponse: true });
    const error = await failure(
      provider(url, { maxRetries: 0 }).generate(request([{ role: 'user', content: 'x' }])),
    );
    expect(error).toMatchObject({ kind: 'network', retryable: true });
  });

  it('529 overloaded: retryable with the retry-after the server sent, then retried after exactly that wait', async () => {
    const { sleeps, sleep } = recordedSleeps();
    const { url } = await serve(
      { status: 529, headers: { 'retry-after': '4' }, body: wire.overloadedBody },
      { sse: wire.streamedText },
    );
    const single = await failure(
      anthropic('claude-test-1', { apiKey: 'k', baseURL: url, maxRetries: 0 }).generate(
        request([{ role: 'user', content: 'x' }]),
      ),
    );
    expect(single).toBeInstanceOf(ModelError);
    expect(single).toMatchObject({ kind: 'overloaded', status: 529, retryable: true, retryAfterMs: 4000 });

    await current().close();
    const again = await serve(
      { status: 529, headers: { 'retry-after': '4' }, body: wire.overloadedBody },
      { sse: wire.streamedText },
    );
    const response = await provider(again.url, { sleep }).generate(request([{ role: 'user', content: 'x' }]));
    expect(response.text).toBe('Hello, world.');
    expect(sleeps).toEqual([4000]);
  });

  it('an overloaded_error event inside a 200 stream is overloaded and retryable', async () => {
    const frames = [wire.streamedText[0]!, `event: error\ndata: ${wire.overloadedBody}`];
    const { url } = await serve({ sse: frames });
    const error = await failure(
      provider(url, { maxRetries: 0 }).generate(request([{ role: 'user', content: 'x' }])),
    );
    expect(error).toMatchObject({ kind: 'overloaded', retryable: true });
  });

  it('429 is rate_limited with retry-after-ms; 500 is a retryable server error', async () => {
    const { url } = await serve(
      { status: 429, headers: { 'retry-after-ms': '1500' }, body: wire.rateLimitBody },
      { status: 500, body: wire.serverErrorBody },
    );
    const model = provider(url, { maxRetries: 0 });
    expect(await failure(model.generate(request([{ role: 'user', content: 'x' }])))).toMatchObject({
      kind: 'rate_limited',
      status: 429,
      retryable: true,
      retryAfterMs: 1500,
    });
    expect(await failure(model.generate(request([{ role: 'user', content: 'x' }])))).toMatchObject({
      kind: 'server',
      status: 500,
      retryable: true,
    });
  });

  it('a tool input that is not valid JSON is kept as raw text for the loop to answer with an error', async () => {
    const { url } = await serve({ sse: wire.invalidToolJson });
    const response = await provider(url).generate(
      request([{ role: 'user', content: 'x' }], { tools: weatherTools }),
    );
    expect(response.stopReason).toBe('tool_use');
    expect(response.toolCalls).toEqual([
      { id: 'toolu_bad', name: 'get_weather', args: '{"location": Paris}' },
    ]);
  });

  it('a stalled request times out as ModelError timeout (simulated clock, no real wait)', async () => {
    const { url } = await serve({ stallMs: 600_000, sse: wire.streamedText });
    const clock = new SimulatedClock();
    const pending = provider(url, { clock, timeoutMs: 30_000, maxRetries: 0 }).generate(
      request([{ role: 'user', content: 'x' }]),
    );
    while (current().requests.length === 0) await new Promise((resolve) => setImmediate(resolve));
    clock.increment(30_000);
    expect(await failure(pending)).toMatchObject({ kind: 'timeout', retryable: true });
  });

  it("the caller's abort ends a stalled call at once with an AbortError, and nothing is retried", async () => {
    const { url } = await serve({ stallMs: 600_000, sse: wire.streamedText }, { sse: wire.streamedText });
    const controller = new AbortController();
    const pending = provider(url, { sleep: recordedSleeps().sleep }).generate(
      request([{ role: 'user', content: 'x' }], { signal: controller.signal }),
    );
    while (current().requests.length === 0) await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    const error = await failure(pending);
    expect(error).toMatchObject({ name: 'AbortError' });
    expect(error).not.toBeInstanceOf(ModelError);
    expect(current().requests).toHaveLength(1);
  });

  it("the caller's abort in the middle of a stream is an AbortError, not a truncated stream", async () => {
    const { url } = await serve({ sse: wire.streamedText, stallAfterChunks: 5 });
    const controller = new AbortController();
    const req = request([{ role: 'user', content: 'x' }], { signal: controller.signal });
    const pending = provider(url).generate({
      ...req,
      onDelta: (delta) => {
        req.deltas.push(delta);
        controller.abort();
      },
    });
    // The first frames arrive at once, then the server holds the stream open; the abort comes with the first delta.
    const error = await failure(pending);
    expect(error).toMatchObject({ name: 'AbortError' });
    expect(req.deltas).toEqual([{ type: 'text', text: 'Hello' }]);
  });

  it('half a JSON line in an event is a retryable truncated_stream', async () => {
    const { url } = await serve({
      sse: [wire.streamedText[0]!, 'event: content_block_start\ndata: {"type":"content_blo'],
    });
    const error = await failure(
      provider(url, { maxRetries: 0 }).generate(request([{ role: 'user', content: 'x' }])),
    );
    expect(error).toMatchObject({ kind: 'truncated_stream', retryable: true });
  });

  it('an event of the wrong shape is invalid_response and is not retried', async () => {
    const { url } = await serve(
      { sse: ['event: message_start\ndata: {"type":"message_start"}'] },
      { sse: wire.streamedText },
    );
    const error = await failure(
      provider(url, { sleep: recordedSleeps().sleep }).generate(request([{ role: 'user', content: 'x' }])),
    );
    expect(error).toMatchObject({ kind: 'invalid_response', retryable: false });
    expect(current().requests).toHaveLength(1);
  });

  it('400 is a bad_request that is not retried; 401 is authentication', async () => {
    const badRequest = JSON.stringify({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'messages: field required' },
    });
    const { url } = await serve(
      { status: 400, body: badRequest },
      { status: 401, body: { type: 'error', error: { type: 'authentication_error', message: 'bad key' } } },
    );
    const { sleeps, sleep } = recordedSleeps();
    const model = provider(url, { sleep });
    expect(await failure(model.generate(request([{ role: 'user', content: 'x' }])))).toMatchObject({
      kind: 'bad_request',
      status: 400,
      retryable: false,
    });
    expect(current().requests).toHaveLength(1);
    expect(await failure(model.generate(request([{ role: 'user', content: 'x' }])))).toMatchObject({
      kind: 'authentication',
      status: 401,
      retryable: false,
    });
    expect(current().requests).toHaveLength(2);
    expect(sleeps).toEqual([]);
  });
});

/** The assistant message the loop would append for a response. */
function assistantFrom(response: ModelResponse): Message {
  const message: Message = { role: 'assistant', content: response.text, toolCalls: response.toolCalls };
  if (response.reasoning) message.reasoning = response.reasoning;
  return message;
}
