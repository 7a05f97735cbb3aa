import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ModelDelta, ModelRequest, ModelResponse } from '../../src/core/model.ts';
import { defineAgent, run, tool } from '../../src/index.ts';
import { openai, openaiCompatible } from '../../src/providers/index.ts';
import { chatCompletionToSse } from '../fixtures/wire/openai-chat.ts';
import { exists, readJson, readText } from '../support/recorded-replay.ts';
import { sharedWireDir, warnIfWireFixturesMissing } from '../support/wire-fixtures.ts';
import { sequence, startWireServer, type WireReply, type WireServer } from '../support/wire-server.ts';

/**
 * Replays the real recorded Chat Completions transcripts of ../shared/fixtures/wire (read in place, never copied)
 * through openai() / openaiCompatible() and the official SDK:
 * - `*.sse` recordings are served byte for byte;
 * - recorded NON-streaming bodies (`*.json`, cassettes' JSON responses) are DERIVED into the equivalent stream
 *   chunks (chatCompletionToSse), because our adapter always streams;
 * - multi-turn cassettes (their per-interaction bodies in extracted/) drive a real agent run, and the follow-up
 *   request our loop sends must carry the recorded messages (tool calls, then role tool results with their ids).
 */
const dir = sharedWireDir();
const skip = warnIfWireFixturesMissing('openai-chat conformance', dir);

const servers: WireServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(...replies: WireReply[]): Promise<WireServer> {
  const server = await startWireServer(sequence(...replies));
  servers.push(server);
  return server;
}

function recordedSse(path: string): WireReply {
  return {
    status: 200,
    headers: { 'content-type': 'text/event-stream' },
    raw: readText(dir as string, path),
  };
}

function derivedSse(path: string): WireReply {
  return { sse: chatCompletionToSse(readJson(dir as string, path) as Record<string, unknown>) };
}

function chat(server: WireServer) {
  let n = 0;
  return openai('gpt-4o', { apiKey: 'sk-test', baseURL: `${server.url}/v1`, generateId: () => `gen_${++n}` });
}

async function replay(reply: WireReply): Promise<{ response: ModelResponse; deltas: ModelDelta[] }> {
  const server = await serve(reply);
  const deltas: ModelDelta[] = [];
  const request: ModelRequest = {
    messages: [{ role: 'user', content: 'Replay' }],
    tools: [],
    settings: {},
    signal: new AbortController().signal,
    onDelta: (delta) => deltas.push(delta),
  };
  return { response: await chat(server).generate(request), deltas };
}

function streamedArgs(deltas: ModelDelta[], index: number): string {
  return deltas
    .filter((delta) => delta.type === 'tool_call' && delta.index === index)
    .map((delta) => (delta.type === 'tool_call' ? delta.argsDelta : ''))
    .join('');
}

const weatherCall = { name: 'GetWeatherArgs', args: { city: 'Edinburgh', country: 'GB', units: 'c' } };
const stockCall = { name: 'get_stock_price', args: { ticker: 'AAPL', exchange: 'NASDAQ' } };

describe.skipIf(skip)('openai-chat conformance: recorded streams, byte for byte', () => {
  it('stream-parallel-tool-calls-include-usage: two calls, arguments in 20 fragments, usage chunk', async () => {
    const { response, deltas } = await replay(
      recordedSse('openai-chat/stream-parallel-tool-calls-include-usage.sse'),
    );
    expect(response.toolCalls).toEqual([
      { id: 'call_JMW1whyEaYG438VE1OIflxA2', ...weatherCall },
      { id: 'call_DNYTawLBoN8fj3KN6qU9N1Ou', ...stockCall },
    ]);
    expect(response).toMatchObject({ stopReason: 'tool_use', rawStopReason: 'tool_calls', text: '' });
    expect(response.usage).toEqual({ input: 149, output: 60, cached: 0, reasoning: 0 });
    expect(JSON.parse(streamedArgs(deltas, 0))).toEqual(weatherCall.args);
    expect(JSON.parse(streamedArgs(deltas, 1))).toEqual(stockCall.args);
  });

  it('stream-single-tool-call-include-usage', async () => {
    const { response } = await replay(recordedSse('openai-chat/stream-single-tool-call-include-usage.sse'));
    expect(response.toolCalls).toEqual([
      {
        id: 'call_c91SqDXlYFuETYv8mUHzz6pp',
        name: 'GetWeatherArgs',
        args: { city: 'Edinburgh', country: 'UK', units: 'c' },
      },
    ]);
    expect(response.stopReason).toBe('tool_use');
    expect(response.usage).toMatchObject({ input: 76, output: 24 });
  });

  it('stream-finish-length-include-usage: max_tokens, never a normal end', async () => {
    const { response } = await replay(recordedSse('openai-chat/stream-finish-length-include-usage.sse'));
    expect(response).toMatchObject({ text: '{"', stopReason: 'max_tokens', rawStopReason: 'length' });
    expect(response.usage).toMatchObject({ input: 79, output: 1 });
  });

  it('stream-refusal-include-usage: refusal fragments after refusal "" with content null', async () => {
    const { response, deltas } = await replay(recordedSse('openai-chat/stream-refusal-include-usage.sse'));
    expect(response).toMatchObject({
      text: '',
      refusal: "I'm sorry, I can't assist with that request.",
      stopReason: 'refusal',
    });
    expect(deltas.filter((delta) => delta.type === 'text')).toEqual([]);
  });

  it('openai-compat-quirks/anthropic-openai-compat-stream-tool-call-index-1: first call at index 1, no usage', async () => {
    const server = await serve(
      recordedSse('openai-compat-quirks/anthropic-openai-compat-stream-tool-call-index-1.sse'),
    );
    const deltas: ModelDelta[] = [];
    const provider = openaiCompatible({ baseURL: `${server.url}/v1`, name: 'anthropic-openai' })(
      'claude-haiku-4-5',
    );
    const response = await provider.generate({
      messages: [{ role: 'user', content: 'Read a.txt' }],
      tools: [],
      settings: {},
      signal: new AbortController().signal,
      onDelta: (delta) => deltas.push(delta),
    });
    expect(response).toMatchObject({
      text: 'Reading it.',
      toolCalls: [{ id: 'toolu_sanitized', name: 'read_file', args: { path: 'a.txt' } }],
      stopReason: 'tool_use',
      usage: { input: 0, output: 0, cached: 0, reasoning: 0 },
    });
    // The server's index 1 is our call 0.
    expect(deltas.find((delta) => delta.type === 'tool_call')).toMatchObject({
      index: 0,
      id: 'toolu_sanitized',
    });
  });
});

describe.skipIf(skip)(
  'openai-chat conformance: recorded non-streaming bodies, derived into stream chunks',
  () => {
    it('nonstream-parallel-tool-calls.json', async () => {
      const { response } = await replay(derivedSse('openai-chat/nonstream-parallel-tool-calls.json'));
      expect(response.toolCalls).toEqual([
        { id: 'call_fdNz3vOBKYgOIpMdWotB9MjY', ...weatherCall },
        { id: 'call_h1DWI1POMJLb0KwIyQHWXD4p', ...stockCall },
      ]);
      expect(response).toMatchObject({ stopReason: 'tool_use', usage: { input: 149, output: 60 } });
    });

    it('nonstream-finish-length.json', async () => {
      const { response } = await replay(derivedSse('openai-chat/nonstream-finish-length.json'));
      expect(response).toMatchObject({ text: '{"', stopReason: 'max_tokens' });
    });

    it('nonstream-refusal.json', async () => {
      const { response } = await replay(derivedSse('openai-chat/nonstream-refusal.json'));
      expect(response).toMatchObject({
        refusal: "I'm very sorry, but I can't assist with that.",
        stopReason: 'refusal',
        text: '',
      });
    });
  },
);

/** A follow-up request's messages, with tool-call arguments parsed (the wire spacing is the client's choice). */
function comparable(messages: unknown): unknown[] {
  return (messages as Record<string, unknown>[]).map((message) => {
    const copy: Record<string, unknown> = { ...message };
    if (copy.content === null && Array.isArray(copy.tool_calls)) delete copy.content;
    if (Array.isArray(copy.tool_calls)) {
      copy.tool_calls = (copy.tool_calls as Record<string, unknown>[]).map((call) => {
        const fn = call.function as { name: string; arguments: string };
        return {
          id: call.id,
          type: call.type,
          function: { name: fn.name, arguments: JSON.parse(fn.arguments) },
        };
      });
    }
    return copy;
  });
}

function cassette(name: string, folder: string) {
  const base = `extracted/${folder}/${name}`;
  const response = (i: number): WireReply =>
    exists(dir as string, `${base}.${i}.response.sse`)
      ? recordedSse(`${base}.${i}.response.sse`)
      : derivedSse(`${base}.${i}.response.json`);
  const request = (i: number) =>
    readJson(dir as string, `${base}.${i}.request.json`) as { messages: unknown[] };
  return { response, request };
}

describe.skipIf(skip)('openai-chat conformance: multi-turn cassettes drive a real run', () => {
  it('stream-tool-call-then-answer (streamed both turns): the follow-up request matches the recording', async () => {
    const recorded = cassette('stream-tool-call-then-answer', 'openai-chat');
    const server = await serve(recorded.response(0), recorded.response(1));
    const getCapital = tool({
      name: 'get_capital',
      description: 'As recorded.',
      input: z.object({ country: z.string() }),
      execute: async () => 'London',
    });
    const agent = defineAgent({ name: 'geo', instructions: '', model: chat(server), tools: [getCapital] });
    const result = await run(agent, 'What is the capital of the UK? Use the tool, then answer.');
    expect(result.status).toBe('completed');
    expect(result.text).toContain('London');
    const sent = server.requests.map((r) => r.body as { messages: unknown[] });
    expect(comparable(sent[0]?.messages)).toEqual(comparable(recorded.request(0).messages));
    expect(comparable(sent[1]?.messages)).toEqual(comparable(recorded.request(1).messages));
  });

  it('nonstream-parallel-tool-calls-then-answer (derived): two role tool results in call order', async () => {
    const recorded = cassette('nonstream-parallel-tool-calls-then-answer', 'openai-chat');
    const server = await serve(recorded.response(0), recorded.response(1));
    const file = z.object({ path: z.string() });
    const agent = defineAgent({
      name: 'files',
      instructions: 'Just call tools without asking for confirmation.',
      model: chat(server),
      tools: [
        tool({
          name: 'create_file',
          description: 'As recorded.',
          input: file,
          execute: async () => 'Success',
        }),
        tool({ name: 'delete_file', description: 'As recorded.', input: file, execute: async () => 'true' }),
      ],
    });
    const result = await run(agent, 'Delete the file `.env` and create `test.txt`');
    expect(result.status).toBe('completed');
    const sent = server.requests.map((r) => r.body as { messages: unknown[] });
    expect(comparable(sent[1]?.messages)).toEqual(comparable(recorded.request(1).messages));
  });

  it('gemini openai-compat-nonstream-tool-call-empty-id (derived): the empty id is replaced, and the result uses the replacement', async () => {
    const recorded = cassette('openai-compat-nonstream-tool-call-empty-id', 'gemini');
    const server = await serve(recorded.response(0), recorded.response(1));
    const model = openaiCompatible({ baseURL: `${server.url}/v1beta/openai`, name: 'gemini-openai' })(
      'gemini-2.5-pro-preview-05-06',
    );
    const agent = defineAgent({
      name: 'clock',
      instructions: '',
      model,
      tools: [
        tool({
          name: 'get_current_time',
          description: 'Get the current time.',
          input: z.object({}),
          execute: async () => 'Noon',
        }),
      ],
    });
    const result = await run(agent, 'What is the current time?');
    expect(result.status).toBe('completed');
    const sent =
      (server.requests[1]?.body as { messages: Record<string, unknown>[] } | undefined)?.messages ?? [];
    const expected = recorded.request(1).messages as Record<string, unknown>[];
    // The recording's client invented its own id for the empty one; ours differs, so compare with ids mapped.
    const ourId = (sent[1]?.tool_calls as { id: string }[] | undefined)?.[0]?.id;
    const theirId = (expected[1]?.tool_calls as { id: string }[] | undefined)?.[0]?.id;
    expect(ourId).toMatch(/^call_[0-9a-f]{32}$/);
    expect(sent[2]?.tool_call_id).toBe(ourId);
    expect(
      JSON.parse(JSON.stringify(comparable(sent)).replaceAll(ourId as string, theirId as string)),
    ).toEqual(comparable(expected));
  });
});
