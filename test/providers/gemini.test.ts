import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { ConfigError, ModelError } from '../../src/core/errors.ts';
import type { ContentPart, Message } from '../../src/core/messages.ts';
import type { ModelResponse, ToolSpec } from '../../src/core/model.ts';
import { anthropic } from '../../src/providers/anthropic.ts';
import { type GeminiOptions, gemini } from '../../src/providers/gemini.ts';
import { openai } from '../../src/providers/openai-chat.ts';
import * as wire from '../fixtures/wire/gemini.ts';
import { recordingRequest, useWireServer } from '../support/wire-session.ts';

const { serve, bodyOf, current } = useWireServer();

function counterIds(): () => string {
  let next = 0;
  return () => `call_${++next}`;
}

function provider(url: string, options: GeminiOptions = {}) {
  return gemini('gemini-test-flash', {
    apiKey: 'test-key',
    baseURL: url,
    generateId: counterIds(),
    ...options,
  });
}

const request = recordingRequest;

const weatherTool: ToolSpec = {
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

function assistantFrom(response: ModelResponse): Message {
  const message: Message = { role: 'assistant', content: response.text, toolCalls: response.toolCalls };
  if (response.reasoning) message.reasoning = response.reasoning;
  return message;
}

describe('gemini(): streaming against the wire', () => {
  it('streams text and thoughts, normalizes usage (output includes thoughts), sends a proper request', async () => {
    const { url } = await serve({ sse: wire.streamedText });
    const req = request([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Say hello.' },
    ]);
    const response = await provider(url).generate(req);

    expect(response.text).toBe('Hello, world.');
    expect(response.stopReason).toBe('end_turn');
    expect(response.rawStopReason).toBe('STOP');
    expect(response.usage).toEqual({ input: 40, output: 16, cached: 32, reasoning: 12 });
    expect(response.reasoning).toEqual([
      { provider: 'gemini', text: '**Planning**\n\nA greeting.', data: { type: 'thought' } },
    ]);
    expect(req.deltas).toEqual([
      { type: 'reasoning', text: '**Planning**\n\nA greeting.' },
      { type: 'text', text: 'Hello' },
      { type: 'text', text: ', world.' },
    ]);

    const seen = current().requests[0]!;
    // This SDK version defaults to the v1 API.
    expect(seen.path).toBe('/v1/models/gemini-test-flash:streamGenerateContent?alt=sse');
    expect(seen.headers['x-goog-api-key']).toBe('test-key');
    expect(seen.body).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'Say hello.' }] }],
      systemInstruction: { role: 'user', parts: [{ text: 'Be brief.' }] },
      // automaticContinuation is a client-side switch: it must not reach the wire.
      generationConfig: {},
    });
  });

  it('STOP in a later chunk than the function calls still means tool_use; missing ids are synthesized', async () => {
    const { url } = await serve({ sse: wire.functionCallsThenStop }, { sse: wire.answerAfterTools });
    const model = provider(url);
    const history: Message[] = [{ role: 'user', content: 'Weather in Paris and Rome?' }];
    const first = request(history, { tools: [weatherTool] });
    const response = await model.generate(first);

    expect(response.stopReason).toBe('tool_use');
    expect(response.rawStopReason).toBe('STOP');
    expect(response.toolCalls).toEqual([
      { id: 'call_1', name: 'get_weather', args: { city: 'Paris' } },
      { id: 'call_2', name: 'get_weather', args: { city: 'Rome' } },
    ]);
    expect(response.reasoning).toEqual([
      {
        provider: 'gemini',
        data: { type: 'thought_signature', signature: 'CiQB-signature-1', functionCallId: 'call_1' },
      },
    ]);
    expect(first.deltas).toEqual([
      { type: 'tool_call', index: 0, id: 'call_1', name: 'get_weather', argsDelta: '{"city":"Paris"}' },
      { type: 'tool_call', index: 1, id: 'call_2', name: 'get_weather', argsDelta: '{"city":"Rome"}' },
    ]);
    expect(bodyOf(0).tools).toEqual([
      {
        functionDeclarations: [
          {
            name: 'get_weather',
            description: 'Weather for a city',
            parametersJsonSchema: weatherTool.parameters,
          },
        ],
      },
    ]);

    const followUp: Message[] = [
      ...history,
      assistantFrom(response),
      { role: 'tool', toolCallId: 'call_1', name: 'get_weather', content: '18C' },
      { role: 'tool', toolCallId: 'call_2', content: '21C' },
    ];
    const second = await model.generate(request(followUp, { tools: [weatherTool] }));
    expect(second.text).toBe('Paris 18C, Rome 21C.');
    expect(second.stopReason).toBe('end_turn');
    expect(bodyOf(1).contents).toEqual([
      { role: 'user', parts: [{ text: 'Weather in Paris and Rome?' }] },
      {
        role: 'model',
        parts: [
          {
            functionCall: { id: 'call_1', name: 'get_weather', args: { city: 'Paris' } },
            thoughtSignature: 'CiQB-signature-1',
          },
          { functionCall: { id: 'call_2', name: 'get_weather', args: { city: 'Rome' } } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { id: 'call_1', name: 'get_weather', response: { output: '18C' } } },
          { functionResponse: { id: 'call_2', name: 'get_weather', response: { output: '21C' } } },
        ],
      },
    ]);
  });

  it('keeps a function call id the server sent', async () => {
    const { url } = await serve({ sse: wire.functionCallWithId });
    const response = await provider(url).generate(request([{ role: 'user', content: 'time?' }]));
    expect(response.toolCalls).toEqual([{ id: 'fc-server-1', name: 'get_time', args: {} }]);
    expect(response.stopReason).toBe('tool_use');
  });

  it('synthesized ids are unique across calls by default', async () => {
    const { url } = await serve({ sse: wire.functionCallsThenStop }, { sse: wire.functionCallsThenStop });
    const model = gemini('gemini-test-flash', { apiKey: 'k', baseURL: url });
    const a = await model.generate(request([{ role: 'user', content: 'x' }]));
    const b = await model.generate(request([{ role: 'user', content: 'x' }]));
    const ids = [...a.toolCalls, ...b.toolCalls].map((call) => call.id);
    expect(new Set(ids).size).toBe(4);
    for (const id of ids) expect(id).toMatch(/^call_[0-9a-f]{32}$/);
  });

  it.each([
    ['MAX_TOKENS', wire.maxTokens, 'max_tokens'],
    ['SAFETY', wire.safety, 'content_filter'],
  ] as const)('maps finishReason %s', async (raw, frames, expected) => {
    const { url } = await serve({ sse: frames });
    const response = await provider(url).generate(request([{ role: 'user', content: 'x' }]));
    expect(response.stopReason).toBe(expected);
    expect(response.rawStopReason).toBe(raw);
  });

  it('a prompt blocked before any candidate is content_filter, not a truncated stream', async () => {
    const { url } = await serve({ sse: wire.promptBlocked });
    const response = await provider(url, { maxRetries: 0 }).generate(
      request([{ role: 'user', content: 'x' }]),
    );
    expect(response).toMatchObject({
      stopReason: 'content_filter',
      rawStopReason: 'PROHIBITED_CONTENT',
      text: '',
    });
    expect(response.usage.input).toBe(9);
  });

  it('structured output: responseMimeType application/json with responseJsonSchema; settings mapped', async () => {
    const { url } = await serve({ sse: wire.structuredAnswer });
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const response = await provider(url).generate(
      request([{ role: 'user', content: 'Capital of France as JSON' }], {
        output: { name: 'answer', schema },
        settings: { maxOutputTokens: 200, temperature: 0, topP: 0.9, stopSequences: ['END'] },
      }),
    );
    expect(JSON.parse(response.text)).toEqual({ city: 'Paris' });
    expect(bodyOf(0).generationConfig).toEqual({
      responseMimeType: 'application/json',
      responseJsonSchema: schema,
      maxOutputTokens: 200,
      temperature: 0,
      topP: 0.9,
      stopSequences: ['END'],
    });
  });

  it('sends images as inlineData (base64) and fileData (url)', async () => {
    const { url } = await serve({ sse: wire.streamedText });
    await provider(url).generate(
      request([
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these?' },
            { type: 'image', data: 'iVBORw0KGgo=', mediaType: 'image/png' },
            { type: 'image', url: 'https://example.com/cat.webp' },
          ],
        },
      ]),
    );
    expect(bodyOf(0).contents).toEqual([
      {
        role: 'user',
        parts: [
          { text: 'What is in these?' },
          { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } },
          { fileData: { fileUri: 'https://example.com/cat.webp', mimeType: 'image/webp' } },
        ],
      },
    ]);
  });

  it('a data: URL image goes inline; a URL without an extension takes the mediaType given', async () => {
    const { url } = await serve({ sse: wire.streamedText });
    await provider(url).generate(
      request([
        {
          role: 'user',
          content: [
            { type: 'image', url: 'data:image/jpeg;base64,/9j/4AAQ' },
            { type: 'image', url: 'https://example.com/render?id=7', mediaType: 'image/png' },
            { type: 'image', url: 'gs://bucket/photo.JPG' },
          ],
        },
      ]),
    );
    expect(bodyOf(0).contents).toEqual([
      {
        role: 'user',
        parts: [
          { inlineData: { mimeType: 'image/jpeg', data: '/9j/4AAQ' } },
          { fileData: { fileUri: 'https://example.com/render?id=7', mimeType: 'image/png' } },
          { fileData: { fileUri: 'gs://bucket/photo.JPG', mimeType: 'image/jpeg' } },
        ],
      },
    ]);
  });

  it('image forms Gemini cannot take are ConfigErrors, and nothing is sent', async () => {
    const { url } = await serve({ sse: wire.streamedText });
    const model = provider(url);
    const cases: { part: ContentPart; message: RegExp }[] = [
      {
        part: { type: 'image', url: 'https://example.com/render?id=7' },
        message: /pass \{ url, mediaType \}/,
      },
      { part: { type: 'image', url: 'file:///tmp/cat.png' }, message: /gs:\/\/ URLs or base64/ },
      {
        part: { type: 'image', data: 'AAAA', mediaType: 'application/pdf' },
        message: /image\/\* media type/,
      },
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

  it("another provider's tools are a ConfigError, at creation and per request, and nothing is sent", async () => {
    const { url } = await serve({ sse: wire.streamedText });
    expect(() => provider(url, { settings: { providerTools: [anthropic.tools.webSearch()] } })).toThrow(
      /gemini\("gemini-test-flash"\) cannot run the provider tool "web_search".*anthropic/,
    );
    await expect(
      provider(url).generate(
        request([{ role: 'user', content: 'x' }], {
          settings: { providerTools: [openai.tools.webSearch()] },
        }),
      ),
    ).rejects.toThrow(ConfigError);
    expect(current().requests).toHaveLength(0);
  });

  it('a missing key is a ConfigError naming GEMINI_API_KEY', () => {
    const saved = [process.env.GEMINI_API_KEY, process.env.GOOGLE_API_KEY];
    delete process.env.GEMINI_API_KEY;
    delete process.env.GOOGLE_API_KEY;
    try {
      expect(() => gemini('gemini-test-flash')).toThrow(ConfigError);
      expect(() => gemini('gemini-test-flash')).toThrow(/GEMINI_API_KEY/);
    } finally {
      if (saved[0] !== undefined) process.env.GEMINI_API_KEY = saved[0];
      if (saved[1] !== undefined) process.env.GOOGLE_API_KEY = saved[1];
    }
  });
});

describe('gemini(): faults', () => {
  it('a stream that ends without a finishReason after text went out: truncated_stream, not retried', async () => {
    const { url } = await serve({ sse: wire.streamedText.slice(0, 2) }, { sse: wire.streamedText });
    const req = request([{ role: 'user', content: 'x' }]);
    const error = await provider(url, { sleep: async () => {} })
      .generate(req)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ kind: 'truncated_stream', retryable: false });
    expect(req.deltas.length).toBeGreaterThan(0);
    expect(current().requests).toHaveLength(1);
  });

  it('a connection cut before any chunk is a retryable truncated_stream error, and is retried', async () => {
    const { url } = await serve(
      { sse: wire.streamedText, truncateAfterChunks: 0 },
      { sse: wire.streamedText },
    );
    const single = await provider(url, { maxRetries: 0 })
      .generate(request([{ role: 'user', content: 'x' }]))
      .catch((e: unknown) => e);
    expect(single).toMatchObject({ kind: 'truncated_stream', retryable: true });
    await current().close();
    const again = await serve({ sse: wire.streamedText, truncateAfterChunks: 0 }, { sse: wire.streamedText });
    const sleeps: number[] = [];
    const response = await provider(again.url, { sleep: async (ms) => void sleeps.push(ms) }).generate(
      request([{ role: 'user', content: 'x' }]),
    );
    expect(response.text).toBe('Hello, world.');
    expect(again.requests).toHaveLength(2);
    expect(sleeps).toHaveLength(1);
  });

  it('half a JSON chunk is a retryable truncated_stream', async () => {
    const { url } = await serve({ sse: ['data: {"candidates": [{"content": {"par'] });
    const error = await provider(url, { maxRetries: 0 })
      .generate(request([{ role: 'user', content: 'x' }]))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'truncated_stream', retryable: true });
  });

  it('429 keeps the retry delay of the body (RetryInfo) and the status', async () => {
    const body = JSON.stringify({
      error: {
        code: 429,
        message: 'Resource exhausted',
        status: 'RESOURCE_EXHAUSTED',
        details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '7s' }],
      },
    });
    const { url } = await serve({ status: 429, body });
    const error = await provider(url, { maxRetries: 0 })
      .generate(request([{ role: 'user', content: 'x' }]))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'rate_limited', status: 429, retryable: true, retryAfterMs: 7000 });
    expect(current().requests).toHaveLength(1);
  });

  it('503 with a retry-after header: overloaded, retryable, the header read through our fetch wrapper', async () => {
    const { url } = await serve({
      status: 503,
      headers: { 'retry-after': '2' },
      body: wire.errorBody(503, 'UNAVAILABLE', 'The model is overloaded.'),
    });
    const error = await provider(url, { maxRetries: 0 })
      .generate(request([{ role: 'user', content: 'x' }]))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'overloaded', status: 503, retryable: true, retryAfterMs: 2000 });
  });
});

describe('gemini(): stalls and aborts', () => {
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
    const { url } = await serve({ sse: wire.streamedText, stallAfterChunks: 1 }, { sse: wire.streamedText });
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
    const { url } = await serve({ sse: wire.streamedText, stallAfterChunks: 1 });
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
