import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { z } from 'zod';
import { ConfigError, ModelError } from '../../src/core/errors.ts';
import type { ModelDelta, ModelRequest } from '../../src/core/model.ts';
import { defineAgent, run, stream, tool } from '../../src/index.ts';
import { openai, openaiCompatible } from '../../src/providers/index.ts';
import type { OpenAIChatOptions } from '../../src/providers/openai-chat.ts';
import {
  chunk,
  doneFrame,
  frame,
  refusalStream,
  textStream,
  toolCallStream,
  usageChunk,
} from '../fixtures/wire/openai-chat.ts';
import { sequence, startWireServer, type WireReply, type WireServer } from '../support/wire-server.ts';

const servers: WireServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(...replies: WireReply[]): Promise<WireServer> {
  const server = await startWireServer(sequence(...replies));
  servers.push(server);
  return server;
}

const noWait = { sleep: async () => {} };

function model(server: WireServer, options: OpenAIChatOptions = {}) {
  let n = 0;
  return openai('gpt-test', {
    apiKey: 'sk-test',
    baseURL: `${server.url}/v1`,
    generateId: () => `gen_${++n}`,
    ...noWait,
    ...options,
  });
}

function request(overrides: Partial<ModelRequest> = {}): ModelRequest & { deltas: ModelDelta[] } {
  const deltas: ModelDelta[] = [];
  return {
    messages: [
      { role: 'system', content: 'Be terse.' },
      { role: 'user', content: 'Hi' },
    ],
    tools: [],
    settings: {},
    signal: new AbortController().signal,
    onDelta: (delta) => deltas.push(delta),
    deltas,
    ...overrides,
  };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

const weatherTool = {
  name: 'weather',
  description: 'Weather in a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
};

describe('openai() Chat Completions on the wire (the official SDK parses)', () => {
  it('streams text deltas, reads usage, and sends the request OpenAI expects', async () => {
    const server = await serve({ sse: textStream(['Hel', 'lo', '!'], { usage: [12, 3, 8, 1] }) });
    const req = request({ tools: [weatherTool], settings: { maxOutputTokens: 50 } });
    const response = await model(server).generate(req);
    expect(response).toMatchObject({
      text: 'Hello!',
      toolCalls: [],
      stopReason: 'end_turn',
      rawStopReason: 'stop',
      usage: { input: 12, output: 3, cached: 8, reasoning: 1 },
    });
    expect(req.deltas).toEqual([
      { type: 'text', text: 'Hel' },
      { type: 'text', text: 'lo' },
      { type: 'text', text: '!' },
    ]);
    const [sent] = server.requests;
    expect(sent?.path).toBe('/v1/chat/completions');
    expect(sent?.headers.authorization).toBe('Bearer sk-test');
    expect(sent?.body).toMatchObject({
      model: 'gpt-test',
      stream: true,
      stream_options: { include_usage: true },
      max_completion_tokens: 50,
      messages: [
        { role: 'system', content: 'Be terse.' },
        { role: 'user', content: 'Hi' },
      ],
      tools: [{ type: 'function', function: { name: 'weather', strict: true } }],
    });
  });

  it('assembles parallel tool calls with split arguments and streams their deltas', async () => {
    const server = await serve({
      sse: toolCallStream([
        { id: 'call_A', name: 'weather', args: ['{"ci', 'ty": "Pa', 'ris"}'] },
        { id: 'call_B', name: 'weather', args: ['', '{"city"', ': "Rome"}'] },
      ]),
    });
    const req = request({ tools: [weatherTool] });
    const response = await model(server).generate(req);
    expect(response.toolCalls).toEqual([
      { id: 'call_A', name: 'weather', args: { city: 'Paris' } },
      { id: 'call_B', name: 'weather', args: { city: 'Rome' } },
    ]);
    expect(response.stopReason).toBe('tool_use');
    expect(response.usage).toEqual({ input: 20, output: 10, cached: 0, reasoning: 0 });
    const argText = (index: number) =>
      req.deltas
        .filter((d) => d.type === 'tool_call' && d.index === index)
        .map((d) => (d.type === 'tool_call' ? d.argsDelta : ''))
        .join('');
    expect(argText(0)).toBe('{"city": "Paris"}');
    expect(argText(1)).toBe('{"city": "Rome"}');
  });

  it('handles the compatible-server quirks: index 1 first, ids "" and "0", no finish_reason, usage chunk', async () => {
    const server = await serve({
      sse: toolCallStream(
        [
          { id: '', name: 'weather', args: ['{"city":', '"Oslo"}'] },
          { id: '0', name: 'weather', args: ['{"city":"Bergen"}'] },
        ],
        { firstIndex: 1, finish: null, usage: [7, 5] },
      ),
    });
    let n = 0;
    const local = openaiCompatible({ baseURL: `${server.url}/v1`, name: 'ollama' })('llama3.2', {
      generateId: () => `gen_${++n}`,
      ...noWait,
    });
    const req = request({ tools: [weatherTool], settings: { maxOutputTokens: 9 } });
    const response = await local.generate(req);
    expect(local.provider).toBe('ollama');
    expect(response.toolCalls).toEqual([
      { id: 'gen_1', name: 'weather', args: { city: 'Oslo' } },
      { id: 'gen_2', name: 'weather', args: { city: 'Bergen' } },
    ]);
    expect(response.stopReason).toBe('tool_use');
    expect(response.rawStopReason).toBeUndefined();
    expect(response.usage).toMatchObject({ input: 7, output: 5 });
    expect(req.deltas[0]).toEqual({
      type: 'tool_call',
      index: 0,
      id: 'gen_1',
      name: 'weather',
      argsDelta: '{"city":',
    });
    // Compatible defaults: max_tokens, no strict; no key means no OpenAI key leaks to another server.
    expect(server.requests[0]?.body).toMatchObject({ max_tokens: 9 });
    expect(server.requests[0]?.body).not.toHaveProperty('max_completion_tokens');
    expect(JSON.stringify(server.requests[0]?.body)).not.toContain('"strict":true');
    expect(server.requests[0]?.headers.authorization).toBe('Bearer not-needed');
  });

  it('a text stream with no finish_reason but [DONE] is a complete answer with stop reason unknown', async () => {
    const server = await serve({ sse: textStream(['ok'], { finish: null, usage: null }) });
    const response = await model(server).generate(request());
    expect(response).toMatchObject({ text: 'ok', stopReason: 'unknown' });
  });

  it('reports a refusal', async () => {
    const server = await serve({ sse: refusalStream(["I'm very sorry, ", "but I can't help with that."]) });
    const response = await model(server).generate(request());
    expect(response).toMatchObject({
      text: '',
      refusal: "I'm very sorry, but I can't help with that.",
      stopReason: 'refusal',
    });
  });

  it('reports finish_reason length as max_tokens, never a normal end', async () => {
    const server = await serve({ sse: textStream(['{"'], { finish: 'length', usage: [40, 1] }) });
    const response = await model(server).generate(request());
    expect(response).toMatchObject({ text: '{"', stopReason: 'max_tokens', rawStopReason: 'length' });
  });

  it('keeps invalid JSON arguments as raw text (the tool runner answers the model with an error)', async () => {
    const server = await serve({
      sse: toolCallStream([{ id: 'call_X', name: 'weather', args: ['{"city": Par'] }]),
    });
    const response = await model(server).generate(request({ tools: [weatherTool] }));
    expect(response.toolCalls).toEqual([{ id: 'call_X', name: 'weather', args: '{"city": Par' }]);
  });

  it('sends images as image_url parts', async () => {
    const server = await serve({ sse: textStream(['A cat.']) });
    await model(server).generate(
      request({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is it?' },
              { type: 'image', data: 'aGVsbG8=', mediaType: 'image/png', detail: 'high' },
            ],
          },
        ],
      }),
    );
    expect(server.requests[0]?.body).toMatchObject({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is it?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,aGVsbG8=', detail: 'high' } },
          ],
        },
      ],
    });
  });

  it('sends the output schema as response_format json_schema', async () => {
    const server = await serve({ sse: textStream(['{"total":5}']) });
    const schema = {
      type: 'object',
      properties: { total: { type: 'number' } },
      required: ['total'],
      additionalProperties: false,
    };
    await model(server).generate(request({ output: { name: 'answer', schema } }));
    expect(server.requests[0]?.body).toMatchObject({
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } },
    });
  });
});

describe('openai() failures on the wire: retries, timeouts, fallback', () => {
  it('retries a 429 after the retry-after it asked for (1 s, not waited for real), then succeeds', async () => {
    const server = await serve(
      {
        status: 429,
        headers: { 'retry-after': '1' },
        body: { error: { message: 'Rate limit', type: 'requests', code: 'rate_limit_exceeded' } },
      },
      { sse: textStream(['fine']) },
    );
    const waits: number[] = [];
    const response = await model(server, { sleep: async (ms) => void waits.push(ms) }).generate(request());
    expect(response.text).toBe('fine');
    expect(waits).toEqual([1000]);
    expect(server.requests).toHaveLength(2);
  });

  it('retries a 500, then succeeds', async () => {
    const server = await serve(
      { status: 500, body: { error: { message: 'boom', type: 'server_error' } } },
      { sse: textStream(['fine']) },
    );
    expect((await model(server).generate(request())).text).toBe('fine');
    expect(server.requests).toHaveLength(2);
  });

  it('gives up with a typed error after maxRetries, and does not retry a 400', async () => {
    const failing = await serve(
      { status: 503, body: { error: { message: 'busy' } } },
      { status: 503, body: { error: { message: 'busy' } } },
    );
    const error = await rejection(model(failing, { maxRetries: 1 }).generate(request()));
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ kind: 'overloaded', status: 503, retryable: false });
    expect(failing.requests).toHaveLength(2);
    const bad = await serve({
      status: 400,
      body: { error: { message: 'bad', type: 'invalid_request_error' } },
    });
    expect(await rejection(model(bad).generate(request()))).toMatchObject({
      kind: 'bad_request',
      status: 400,
    });
    expect(bad.requests).toHaveLength(1);
  });

  it('retries a connection reset before the response', async () => {
    const server = await serve({ resetBeforeResponse: true }, { sse: textStream(['after reset']) });
    expect((await model(server).generate(request())).text).toBe('after reset');
    expect(server.requests).toHaveLength(2);
  });

  it('retries a stream cut before any delta went out (truncated SSE)', async () => {
    const server = await serve(
      { sse: textStream(['lost']), truncateAfterChunks: 1 },
      { sse: textStream(['whole']) },
    );
    const req = request();
    const response = await model(server).generate(req);
    expect(response.text).toBe('whole');
    expect(req.deltas).toEqual([{ type: 'text', text: 'whole' }]);
    expect(server.requests).toHaveLength(2);
  });

  it('a stream cut after a delta went out is a typed error, not retried', async () => {
    const server = await serve(
      { sse: textStream(['Hel', 'lo']), truncateAfterChunks: 2 },
      { sse: textStream(['x']) },
    );
    const req = request();
    const error = await rejection(model(server).generate(req));
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).retryable).toBe(false);
    expect((error as ModelError).kind).toBe('truncated_stream');
    expect((error as Error).message).toContain('not retried');
    expect(req.deltas).toEqual([{ type: 'text', text: 'Hel' }]);
    expect(server.requests).toHaveLength(1);
  });

  it('a stream cut in the middle of an event (half a JSON line) is retried as truncated', async () => {
    const whole = frame(chunk({ content: 'never' }));
    const server = await serve(
      { status: 200, headers: { 'content-type': 'text/event-stream' }, raw: `${whole.slice(0, 40)}` },
      { sse: textStream(['ok']) },
    );
    expect((await model(server).generate(request())).text).toBe('ok');
    expect(server.requests).toHaveLength(2);
  });

  it('a stalled request ends as ModelError timeout (simulated clock, no real wait)', async () => {
    const server = await serve({ stallMs: 60_000 });
    const clock = new SimulatedClock();
    const pending = model(server, { clock, timeoutMs: 30_000, maxRetries: 0 }).generate(request());
    while (server.requests.length === 0) await new Promise((resolve) => setImmediate(resolve));
    clock.increment(30_000);
    const error = await rejection(pending);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ kind: 'timeout' });
  });

  it('uses the fallback model once retries are exhausted', async () => {
    const primary = await serve(
      { status: 500, body: { error: { message: 'down' } } },
      { status: 500, body: { error: { message: 'down' } } },
    );
    const backup = await serve({ sse: textStream(['from backup']) });
    const fallback = openaiCompatible({ baseURL: `${backup.url}/v1`, name: 'backup' })('small');
    const response = await model(primary, { maxRetries: 1, fallback }).generate(request());
    expect(response.text).toBe('from backup');
    expect(primary.requests).toHaveLength(2);
    expect(backup.requests[0]?.body).toMatchObject({ model: 'small' });
  });

  it('an abort while the stream is open ends with an AbortError, not retried', async () => {
    const server = await serve({ sse: textStream(['a', 'b', 'c']), chunkDelayMs: 60_000 });
    const controller = new AbortController();
    const pending = model(server).generate(request({ signal: controller.signal }));
    while (server.requests.length === 0) await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    expect(await rejection(pending)).toMatchObject({ name: 'AbortError' });
    expect(server.requests).toHaveLength(1);
  });
});

describe('openai factory', () => {
  it('names OPENAI_API_KEY when the key is missing', () => {
    const saved = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      expect(() => openai('gpt-5-mini')).toThrow(ConfigError);
      expect(() => openai('gpt-5-mini')).toThrow(/OPENAI_API_KEY/);
    } finally {
      if (saved !== undefined) process.env.OPENAI_API_KEY = saved;
    }
  });

  it('openai.responses is the Responses API provider, openai() the Chat Completions one', () => {
    expect(openai('m', { apiKey: 'k' }).provider).toBe('openai-chat');
    expect(openai.responses('gpt-5.5', { apiKey: 'k' }).provider).toBe('openai-responses');
    expect(openai.chat('m', { apiKey: 'k' }).model).toBe('m');
  });

  it('openaiCompatible needs a baseURL', () => {
    expect(() => openaiCompatible({ baseURL: '' })).toThrow(ConfigError);
  });
});

describe('an agent on openai() against the wire server', () => {
  it('runs a tool and sends its result back as role tool with the tool_call_id', async () => {
    const server = await serve(
      { sse: toolCallStream([{ id: 'call_add_1', name: 'add', args: ['{"a": 2,', ' "b": 3}'] }]) },
      { sse: textStream(['{"total":', ' 5}'], { usage: [30, 4] }) },
    );
    const add = tool({
      name: 'add',
      description: 'Adds two numbers',
      input: z.object({ a: z.number(), b: z.number() }),
      execute: async ({ a, b }) => a + b,
    });
    const agent = defineAgent({
      name: 'calculator',
      instructions: 'Use the tools, then answer.',
      model: model(server),
      tools: [add],
      output: z.object({ total: z.number() }),
    });
    const s = stream(agent, 'What is 2 + 3?');
    const types: string[] = [];
    for await (const event of s) types.push(event.type);
    const result = await s.result;
    expect(result.status).toBe('completed');
    expect(result.output).toEqual({ total: 5 });
    expect(types).toContain('delta');
    expect(server.requests).toHaveLength(2);
    const second = server.requests[1]?.body as { messages: unknown[] };
    expect(second.messages.slice(-2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_add_1', type: 'function', function: { name: 'add', arguments: '{"a":2,"b":3}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_add_1', content: expect.stringContaining('5') },
    ]);
  });

  it('answers invalid JSON arguments with an error result the model sees on the next request', async () => {
    const server = await serve(
      { sse: toolCallStream([{ id: 'call_bad', name: 'add', args: ['{"a": 2, "b": '] }]) },
      { sse: textStream(['{"total": 0}']) },
    );
    const add = tool({
      name: 'add',
      description: 'Adds two numbers',
      input: z.object({ a: z.number(), b: z.number() }),
      execute: async ({ a, b }) => a + b,
    });
    const agent = defineAgent({ name: 'calc', instructions: 'x', model: model(server), tools: [add] });
    const result = await run(agent, 'Add');
    expect(result.status).not.toBe('failed');
    const second = server.requests[1]?.body as { messages: Array<Record<string, unknown>> };
    const toolMessage = second.messages.find((m) => m.role === 'tool');
    expect(toolMessage).toMatchObject({ tool_call_id: 'call_bad' });
    expect(String(toolMessage?.content).toLowerCase()).toMatch(/invalid|json|argument/);
  });
});

// Keep the fixture helpers honest: a stream built from them parses to the expected shape.
describe('fixture helpers', () => {
  it('produce usage-only and [DONE] frames the SDK accepts', async () => {
    const server = await serve({ sse: [frame(usageChunk(1, 0)), doneFrame] });
    const response = await model(server).generate(request());
    expect(response).toMatchObject({ text: '', stopReason: 'unknown', usage: { input: 1 } });
  });
});
