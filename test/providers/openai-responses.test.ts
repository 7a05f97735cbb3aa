import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { ConfigError, ModelError } from '../../src/core/errors.ts';
import type { ContentPart, Message } from '../../src/core/messages.ts';
import type { ModelResponse, ToolSpec } from '../../src/core/model.ts';
import { type OpenAIResponsesOptions, openaiResponses } from '../../src/providers/openai-responses.ts';
import * as wire from '../fixtures/wire/openai-responses.ts';
import { recordingRequest, useWireServer } from '../support/wire-session.ts';

const { serve, bodyOf, current } = useWireServer();

function provider(url: string, options: OpenAIResponsesOptions = {}) {
  return openaiResponses('gpt-test', { apiKey: 'test-key', baseURL: url, ...options });
}

const request = recordingRequest;

const multiplyTool: ToolSpec = {
  name: 'multiply',
  description: 'Multiply two numbers.',
  parameters: {
    type: 'object',
    properties: { a: { type: 'integer' }, b: { type: 'integer' } },
    required: ['a', 'b'],
  },
};

function assistantFrom(response: ModelResponse): Message {
  const message: Message = { role: 'assistant', content: response.text, toolCalls: response.toolCalls };
  if (response.reasoning) message.reasoning = response.reasoning;
  return message;
}

describe('openaiResponses(): streaming against the wire', () => {
  it('streams output_text deltas, reads usage (cached, reasoning), sends a stateless request', async () => {
    const { url } = await serve({ sse: wire.streamedText });
    const req = request([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Say hello.' },
    ]);
    const response = await provider(url).generate(req);

    expect(response.text).toBe('Hello.');
    expect(response.stopReason).toBe('end_turn');
    expect(response.rawStopReason).toBe('completed');
    expect(response.usage).toEqual({ input: 50, output: 9, cached: 32, reasoning: 4 });
    expect(req.deltas).toEqual([
      { type: 'text', text: 'Hel' },
      { type: 'text', text: 'lo' },
      { type: 'text', text: '.' },
    ]);
    const seen = current().requests[0]!;
    expect(seen.path).toBe('/responses');
    expect(seen.headers.authorization).toBe('Bearer test-key');
    expect(seen.body).toEqual({
      model: 'gpt-test',
      input: [{ role: 'user', content: 'Say hello.' }],
      instructions: 'Be brief.',
      stream: true,
      store: false,
      include: ['reasoning.encrypted_content'],
    });
  });

  it('function_call arguments stream in pieces; the reasoning item is carried back in the next request', async () => {
    const { url } = await serve({ sse: wire.reasoningThenFunctionCall }, { sse: wire.answerAfterTool });
    const model = provider(url);
    const history: Message[] = [{ role: 'user', content: 'What is 12 * 3? Use the tool.' }];
    const first = request(history, {
      tools: [multiplyTool],
      settings: { providerOptions: { reasoning: { effort: 'low' } } },
    });
    const response = await model.generate(first);

    expect(response.stopReason).toBe('tool_use');
    expect(response.toolCalls).toEqual([{ id: 'call_mul', name: 'multiply', args: { a: 12, b: 3 } }]);
    expect(response.usage).toEqual({ input: 60, output: 40, cached: 0, reasoning: 24 });
    expect(response.reasoning).toEqual([
      { provider: 'openai-responses', text: 'Need the multiply tool.', data: wire.reasoningItem },
    ]);
    expect(first.deltas).toEqual([
      { type: 'reasoning', text: 'Need the multiply tool.' },
      { type: 'tool_call', index: 0, id: 'call_mul', name: 'multiply', argsDelta: '' },
      { type: 'tool_call', index: 0, argsDelta: '{"' },
      { type: 'tool_call', index: 0, argsDelta: 'a' },
      { type: 'tool_call', index: 0, argsDelta: '":12' },
      { type: 'tool_call', index: 0, argsDelta: ',"b' },
      { type: 'tool_call', index: 0, argsDelta: '":3}' },
    ]);
    expect(bodyOf(0).tools).toEqual([{ type: 'function', strict: false, ...multiplyTool }]);
    expect(bodyOf(0).reasoning).toEqual({ effort: 'low' });

    const followUp: Message[] = [
      ...history,
      assistantFrom(response),
      { role: 'tool', toolCallId: 'call_mul', name: 'multiply', content: '36' },
    ];
    const second = await model.generate(request(followUp, { tools: [multiplyTool] }));
    expect(second.text).toBe('12 × 3 = 36');
    expect(bodyOf(1).input).toEqual([
      { role: 'user', content: 'What is 12 * 3? Use the tool.' },
      wire.reasoningItem,
      { type: 'function_call', call_id: 'call_mul', name: 'multiply', arguments: '{"a":12,"b":3}' },
      { type: 'function_call_output', call_id: 'call_mul', output: '36' },
    ]);
  });

  it('two parallel function calls; one without arguments gets {}', async () => {
    const { url } = await serve({ sse: wire.parallelFunctionCalls });
    const response = await provider(url).generate(request([{ role: 'user', content: 'Weather and time?' }]));
    expect(response.stopReason).toBe('tool_use');
    expect(response.toolCalls).toEqual([
      { id: 'call_a', name: 'get_weather', args: { city: 'Paris' } },
      { id: 'call_b', name: 'get_time', args: {} },
    ]);
  });

  it('incomplete (max_output_tokens) is max_tokens', async () => {
    const { url } = await serve({ sse: wire.incompleteMaxTokens });
    const response = await provider(url).generate(
      request([{ role: 'user', content: 'Long story.' }], { settings: { maxOutputTokens: 16 } }),
    );
    expect(response.stopReason).toBe('max_tokens');
    expect(response.rawStopReason).toBe('max_output_tokens');
    expect(response.text).toBe('A very long');
    expect(bodyOf(0).max_output_tokens).toBe(16);
  });

  it('a refusal is reported as refusal with its message', async () => {
    const { url } = await serve({ sse: wire.refusal });
    const response = await provider(url).generate(request([{ role: 'user', content: 'Bad thing.' }]));
    expect(response.stopReason).toBe('refusal');
    expect(response.refusal).toBe("I'm sorry, I cannot.");
    expect(response.text).toBe('');
  });

  it('structured output goes through text.format json_schema', async () => {
    const { url } = await serve({ sse: wire.structuredAnswer });
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const response = await provider(url).generate(
      request([{ role: 'user', content: 'Capital of France?' }], { output: { name: 'answer', schema } }),
    );
    expect(JSON.parse(response.text)).toEqual({ city: 'Paris' });
    expect(bodyOf(0).text).toEqual({
      format: { type: 'json_schema', name: 'answer', schema, strict: false },
    });
    expect(bodyOf(0).tools).toBeUndefined();
  });

  it('sends images as input_image parts (url, and base64 as a data URL)', async () => {
    const { url } = await serve({ sse: wire.streamedText });
    await provider(url).generate(
      request([
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these?' },
            { type: 'image', url: 'https://example.com/cat.jpg', detail: 'low' },
            { type: 'image', data: 'iVBORw0KGgo=', mediaType: 'image/png' },
          ],
        },
      ]),
    );
    expect(bodyOf(0).input).toEqual([
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'What is in these?' },
          { type: 'input_image', image_url: 'https://example.com/cat.jpg', detail: 'low' },
          { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'auto' },
        ],
      },
    ]);
  });

  it('image forms the Responses API cannot take are ConfigErrors, and nothing is sent', async () => {
    const { url } = await serve({ sse: wire.streamedText });
    const model = provider(url);
    const cases: { part: ContentPart; message: RegExp }[] = [
      { part: { type: 'image', url: 'file:///tmp/cat.png' }, message: /http\(s\) URLs or data:image/ },
      { part: { type: 'image', data: 'AAAA', mediaType: 'text/plain' }, message: /image\/\* media type/ },
      {
        part: { type: 'image', data: 'data:image/png;base64,AAAA', mediaType: 'image/png' },
        message: /bare base64/,
      },
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

  it('a missing key is a ConfigError naming OPENAI_API_KEY', () => {
    const saved = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      expect(() => openaiResponses('gpt-test')).toThrow(ConfigError);
      expect(() => openaiResponses('gpt-test')).toThrow(/OPENAI_API_KEY/);
    } finally {
      if (saved !== undefined) process.env.OPENAI_API_KEY = saved;
    }
  });
});

describe('openaiResponses(): faults', () => {
  it('response.failed becomes a typed ModelError', async () => {
    const { url } = await serve({ sse: wire.failed });
    const error = await provider(url, { maxRetries: 0 })
      .generate(request([{ role: 'user', content: 'x' }]))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ kind: 'server', retryable: true });
  });

  it('a stream cut before any delta is a retryable truncated_stream error', async () => {
    const { url } = await serve({ sse: wire.streamedText, truncateAfterChunks: 2 });
    const error = await provider(url, { maxRetries: 0 })
      .generate(request([{ role: 'user', content: 'x' }]))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'truncated_stream', retryable: true });
  });

  it('a stream cut after text went out is truncated_stream and is not retried', async () => {
    const { url } = await serve(
      { sse: wire.streamedText, truncateAfterChunks: 5 },
      { sse: wire.streamedText },
    );
    const req = request([{ role: 'user', content: 'x' }]);
    const error = await provider(url, { sleep: async () => {} })
      .generate(req)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'truncated_stream', retryable: false });
    expect(req.deltas.length).toBeGreaterThan(0);
    expect(current().requests).toHaveLength(1);
  });

  it('a stream that ends cleanly without response.completed is truncated_stream', async () => {
    const { url } = await serve({ sse: wire.streamedText.slice(0, 2) });
    const error = await provider(url, { maxRetries: 0 })
      .generate(request([{ role: 'user', content: 'x' }]))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'truncated_stream', retryable: true });
  });

  it('half a JSON line in an event is a retryable truncated_stream', async () => {
    const { url } = await serve({
      sse: ['event: response.created\ndata: {"type":"response.created","respo'],
    });
    const error = await provider(url, { maxRetries: 0 })
      .generate(request([{ role: 'user', content: 'x' }]))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'truncated_stream', retryable: true });
  });

  it('429 carries retry-after', async () => {
    const { url } = await serve({ status: 429, headers: { 'retry-after': '3' }, body: wire.rateLimitBody });
    const error = await provider(url, { maxRetries: 0 })
      .generate(request([{ role: 'user', content: 'x' }]))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'rate_limited', status: 429, retryable: true, retryAfterMs: 3000 });
  });
});

describe('openaiResponses(): stalls and aborts', () => {
  const firstDeltaFrame = wire.streamedText.findIndex((frame) =>
    frame.includes('response.output_text.delta'),
  );

  async function failure(promise: Promise<unknown>): Promise<unknown> {
    return promise.then(
      (value) => {
        throw new Error(`expected a failure, got ${JSON.stringify(value)}`);
      },
      (error: unknown) => error,
    );
  }

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

  it('a stream that stalls after a delta times out and is not retried', async () => {
    const { url } = await serve(
      { sse: wire.streamedText, stallAfterChunks: firstDeltaFrame + 1 },
      { sse: wire.streamedText },
    );
    const clock = new SimulatedClock();
    const req = request([{ role: 'user', content: 'x' }]);
    let sawDelta: () => void = () => {};
    const delta = new Promise<void>((resolve) => {
      sawDelta = resolve;
    });
    const pending = provider(url, { clock, timeoutMs: 30_000, sleep: async () => {} }).generate({
      ...req,
      onDelta: (d) => {
        req.deltas.push(d);
        sawDelta();
      },
    });
    await delta;
    clock.increment(30_000);
    expect(await failure(pending)).toMatchObject({ kind: 'timeout', retryable: false });
    expect(current().requests).toHaveLength(1);
  });

  it("the caller's abort ends a stalled call at once with an AbortError, and nothing is retried", async () => {
    const { url } = await serve({ stallMs: 600_000, sse: wire.streamedText }, { sse: wire.streamedText });
    const controller = new AbortController();
    const pending = provider(url, { sleep: async () => {} }).generate(
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
    const { url } = await serve({ sse: wire.streamedText, stallAfterChunks: firstDeltaFrame + 1 });
    const controller = new AbortController();
    const req = request([{ role: 'user', content: 'x' }], { signal: controller.signal });
    const pending = provider(url).generate({
      ...req,
      onDelta: (delta) => {
        req.deltas.push(delta);
        controller.abort();
      },
    });
    const error = await failure(pending);
    expect(error).toMatchObject({ name: 'AbortError' });
    expect(req.deltas).toHaveLength(1);
  });
});
