import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, ModelError } from '../../src/core/errors.ts';
import type { ModelRequest } from '../../src/core/model.ts';
import { defineAgent, run, tool } from '../../src/index.ts';
import { openaiCompatible } from '../../src/providers/index.ts';
import {
  chunk,
  doneFrame,
  frame,
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

function request(): ModelRequest {
  return {
    messages: [{ role: 'user', content: 'Hi' }],
    tools: [],
    settings: {},
    signal: new AbortController().signal,
  };
}

describe('openaiCompatible()', () => {
  it('sends its key and headers to the server root it was given, under the name it was given', async () => {
    const server = await serve({ sse: textStream(['hi']) });
    const provider = openaiCompatible({
      baseURL: `${server.url}/api/v1`,
      apiKey: 'or-key',
      name: 'openrouter',
      headers: { 'HTTP-Referer': 'https://example.com' },
    })('meta-llama/llama-3.3-70b-instruct');
    expect([provider.provider, provider.model]).toEqual(['openrouter', 'meta-llama/llama-3.3-70b-instruct']);
    expect((await provider.generate(request())).text).toBe('hi');
    const [sent] = server.requests;
    expect(sent?.path).toBe('/api/v1/chat/completions');
    expect(sent?.headers.authorization).toBe('Bearer or-key');
    expect(sent?.headers['http-referer']).toBe('https://example.com');
    expect(sent?.body).toMatchObject({ model: 'meta-llama/llama-3.3-70b-instruct' });
  });

  it('reads the key from the variable named by apiKeyEnv, and names that variable when it is unset', async () => {
    const server = await serve({ sse: textStream(['hi']) });
    process.env.TROUPE_TEST_COMPAT_KEY = 'env-key';
    try {
      await openaiCompatible({ baseURL: `${server.url}/v1`, apiKeyEnv: 'TROUPE_TEST_COMPAT_KEY' })(
        'm',
      ).generate(request());
    } finally {
      delete process.env.TROUPE_TEST_COMPAT_KEY;
    }
    expect(server.requests[0]?.headers.authorization).toBe('Bearer env-key');
    const factory = openaiCompatible({
      baseURL: `${server.url}/v1`,
      apiKeyEnv: 'TROUPE_TEST_COMPAT_KEY',
      name: 'openrouter',
    });
    expect(() => factory('m')).toThrow(ConfigError);
    expect(() => factory('m')).toThrow(/openrouter.*TROUPE_TEST_COMPAT_KEY/);
  });

  it('names the server in its errors', async () => {
    const server = await serve({ status: 404, body: { error: { message: 'model "nope" not found' } } });
    const provider = openaiCompatible({ baseURL: `${server.url}/v1`, name: 'ollama' })('nope');
    const error = await provider.generate(request()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ kind: 'not_found', status: 404 });
    expect((error as Error).message).toMatch(/^ollama API error 404/);
  });

  it("retries Anthropic's OpenAI endpoint 529 (overloaded) after its retry-after", async () => {
    const server = await serve(
      {
        status: 529,
        headers: { 'retry-after': '2' },
        body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
      },
      { sse: textStream(['ok']) },
    );
    const waits: number[] = [];
    const provider = openaiCompatible({
      baseURL: `${server.url}/v1`,
      name: 'anthropic-openai',
      sleep: async (ms) => void waits.push(ms),
    })('claude-haiku-4-5');
    expect((await provider.generate(request())).text).toBe('ok');
    expect(waits).toEqual([2000]);
  });

  it('per-model overrides win over the shared options', async () => {
    const server = await serve({ sse: textStream(['x']) });
    const local = openaiCompatible({ baseURL: `${server.url}/v1`, includeUsage: true });
    await local('m', { includeUsage: false }).generate(request());
    expect(server.requests[0]?.body).not.toHaveProperty('stream_options');
  });

  // SYNTHETIC (no recording exists, see ../fixtures/wire/SOURCES.md "Not found"): Gemini's OpenAI endpoint,
  // streaming, answers finish_reason "stop" while calling a tool, with the thought signature on the call.
  it("Gemini's OpenAI endpoint: stop with a tool call is tool_use, and the thought signature goes back on the call", async () => {
    const signature = { google: { thought_signature: 'CiQB-synthetic-signature' } };
    const server = await serve(
      {
        sse: [
          frame(chunk({ role: 'assistant', content: null })),
          frame(
            chunk({
              tool_calls: [
                {
                  index: 0,
                  id: '',
                  type: 'function',
                  function: { name: 'get_current_time', arguments: '{}' },
                  extra_content: signature,
                },
              ],
            }),
          ),
          frame(chunk({}, 'stop')),
          frame(usageChunk(35, 12)),
          doneFrame,
        ],
      },
      { sse: textStream(['It is noon.']) },
    );
    const model = openaiCompatible({ baseURL: `${server.url}/v1beta/openai`, name: 'gemini-openai' })(
      'gemini-3-pro',
    );
    const agent = defineAgent({
      name: 'clock',
      instructions: 'Answer with the tool.',
      model,
      tools: [
        tool({
          name: 'get_current_time',
          description: 'Now',
          input: z.object({}),
          execute: async () => 'Noon',
        }),
      ],
    });
    const result = await run(agent, 'What time is it?');
    expect(result.status).toBe('completed');
    expect(result.text).toBe('It is noon.');
    const messages =
      (server.requests[1]?.body as { messages: Record<string, unknown>[] } | undefined)?.messages ?? [];
    const assistant = messages.find((m) => m.role === 'assistant') as {
      tool_calls: Record<string, unknown>[];
    };
    expect(assistant.tool_calls[0]).toMatchObject({
      function: { name: 'get_current_time' },
      extra_content: signature,
    });
    const id = assistant.tool_calls[0]?.id as string;
    expect(id).not.toBe('');
    expect(messages.find((m) => m.role === 'tool')).toMatchObject({ tool_call_id: id, content: 'Noon' });
  });

  it('a compatible server that streams each whole call at index 0 with id "0" still gives two calls', async () => {
    const server = await serve({
      sse: [
        frame(
          chunk({
            tool_calls: [
              { index: 0, id: '0', type: 'function', function: { name: 'a', arguments: '{"n":1}' } },
            ],
          }),
        ),
        frame(
          chunk({
            tool_calls: [
              { index: 0, id: '0', type: 'function', function: { name: 'b', arguments: '{"n":2}' } },
            ],
          }),
        ),
        doneFrame,
      ],
    });
    const response = await openaiCompatible({ baseURL: `${server.url}/v1` })('m').generate(request());
    expect(response.toolCalls.map((c) => [c.name, c.args])).toEqual([
      ['a', { n: 1 }],
      ['b', { n: 2 }],
    ]);
    expect(new Set(response.toolCalls.map((c) => c.id)).size).toBe(2);
    expect(response.stopReason).toBe('tool_use');
  });

  it('a stream with neither finish_reason nor [DONE] is truncated: retried before any delta, an error after one', async () => {
    const quiet = await serve(
      { sse: [frame(chunk({ role: 'assistant', content: '' }))] },
      { sse: textStream(['recovered']) },
    );
    const first = openaiCompatible({ baseURL: `${quiet.url}/v1`, sleep: async () => {} })('m');
    expect((await first.generate(request())).text).toBe('recovered');
    expect(quiet.requests).toHaveLength(2);

    const calling = await serve(
      {
        sse: toolCallStream([{ id: 'c', name: 'a', args: ['{}'] }], {
          finish: null,
          usage: null,
          done: false,
        }),
      },
      { sse: textStream(['never asked']) },
    );
    const second = openaiCompatible({ baseURL: `${calling.url}/v1`, sleep: async () => {} })('m');
    const error = await second.generate(request()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ kind: 'truncated_stream', retryable: false });
    expect(calling.requests).toHaveLength(1);
  });
});
