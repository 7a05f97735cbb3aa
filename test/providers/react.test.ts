import {
  ConfigError,
  defineAgent,
  type Message,
  type ModelDelta,
  type ModelRequest,
  run,
  tool,
  validateHistory,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { anthropic } from '../../src/providers/anthropic.ts';
import { react, reactInvalidReplyTool } from '../../src/providers/react.ts';
import { sequence, startWireServer } from '../support/wire-server.ts';

const add = tool({
  name: 'add',
  description: 'Adds two numbers',
  input: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => a + b,
});

function sequentialIds(): () => string {
  let n = 0;
  return () => `r${++n}`;
}

function request(messages: Message[], extra: Partial<ModelRequest> = {}): ModelRequest {
  return {
    messages,
    tools: [{ name: 'add', description: 'Adds two numbers', parameters: { type: 'object' } }],
    settings: {},
    signal: new AbortController().signal,
    ...extra,
  };
}

describe('react(): a ReAct conversation through the real loop', () => {
  it('completes: the tool runs from an Action, its result goes back as an Observation, the Final Answer ends it', async () => {
    const inner = scriptedModel([
      {
        text: 'Thought: I need to add.\nAction: add\nAction Input: {"a": 2, "b": 3}',
        stopReason: 'end_turn',
      },
      { text: 'Thought: I have it.\nFinal Answer: 2 + 3 = 5', stopReason: 'end_turn' },
    ]);
    const agent = defineAgent({
      name: 'calc',
      instructions: 'Be precise.',
      model: react(inner, { generateId: sequentialIds() }),
      tools: [add],
    });
    const result = await run(agent, 'What is 2+3?');
    expect(result).toMatchObject({
      status: 'completed',
      stopReason: 'completed',
      text: '2 + 3 = 5',
      toolCallCount: 1,
    });
    expect(result.steps[0]?.toolCalls[0]).toMatchObject({ name: 'add', args: { a: 2, b: 3 }, result: '5' });
    expect(() => validateHistory(result.history)).not.toThrow();

    // The model is never offered native tools; the prompt lists them with their schemas.
    const first = inner.requests[0] as ModelRequest;
    expect(first.tools).toEqual([]);
    const system = first.messages[0] as Message;
    expect(system.role).toBe('system');
    expect(system.content).toMatch(/^Be precise\.\n\n/);
    expect(system.content).toContain('Action Input:');
    expect(system.content).toContain('- add: Adds two numbers');
    expect(system.content).toContain('"required":["a","b"]');

    // The second request renders the call and its result as text turns.
    expect((inner.requests[1] as ModelRequest).messages.slice(1)).toEqual([
      { role: 'user', content: 'What is 2+3?' },
      {
        role: 'assistant',
        agent: 'calc',
        content: 'Thought: I need to add.\nAction: add\nAction Input: {"a":2,"b":3}',
      },
      { role: 'user', content: 'Observation: 5' },
    ]);
  });

  it('a malformed reply goes back to the model as an error, and the corrected reply carries on', async () => {
    const inner = scriptedModel([
      { text: 'I think it is 5.', stopReason: 'end_turn' },
      { text: 'Thought: Use the tool.\nAction: add\nAction Input: {"a": 2, "b": 3}', stopReason: 'end_turn' },
      { text: 'Final Answer: 5', stopReason: 'end_turn' },
    ]);
    const agent = defineAgent({
      name: 'calc',
      instructions: 'Be precise.',
      model: react(inner),
      tools: [add],
    });
    const result = await run(agent, 'What is 2+3?');
    expect(result).toMatchObject({ status: 'completed', text: '5', modelCalls: 3 });
    const invalid = result.steps[0]?.toolCalls[0];
    expect(invalid).toMatchObject({ name: reactInvalidReplyTool, isError: true });
    expect(invalid?.args).toMatchObject({ reply: 'I think it is 5.' });
    expect(invalid?.result).toMatch(/^Error: your reply did not follow the format\. The reply has neither/);
    expect(() => validateHistory(result.history)).not.toThrow();

    const second = (inner.requests[1] as ModelRequest).messages.slice(1);
    expect(second[1]).toEqual({ role: 'assistant', agent: 'calc', content: 'I think it is 5.' });
    expect(second[2]?.role).toBe('user');
    expect(second[2]?.content).toMatch(
      /^Error: your reply did not follow the format\. The reply has neither an Action nor a Final Answer/,
    );
    const third = (inner.requests[2] as ModelRequest).messages;
    expect(third.at(-1)).toEqual({ role: 'user', content: 'Observation: 5' });
  });

  it('a model that repeats the same malformed reply is stopped by duplicate detection', async () => {
    const inner = scriptedModel(() => ({ text: 'I refuse to use the format.', stopReason: 'end_turn' }));
    const agent = defineAgent({ name: 'calc', instructions: 'x', model: react(inner), tools: [add] });
    const result = await run(agent, 'What is 2+3?');
    // Three turns, then one last tool-less turn for an answer.
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'duplicate_tool_call', modelCalls: 4 });
    expect(() => validateHistory(result.history)).not.toThrow();
  });

  it('a model that keeps writing different malformed replies is stopped by the per-tool call cap', async () => {
    const inner = scriptedModel((_request, index) => ({ text: `Attempt ${index}: no format.` }));
    const agent = defineAgent({ name: 'calc', instructions: 'x', model: react(inner), tools: [add] });
    const result = await run(agent, 'What is 2+3?');
    // Six turns, then one last tool-less turn for an answer.
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'tool_call_limit', modelCalls: 7 });
  });

  it('an unknown tool named in an Action is answered like any unknown tool call', async () => {
    const inner = scriptedModel([
      { text: 'Action: multiply\nAction Input: {"a": 2}' },
      { text: 'Final Answer: cannot' },
    ]);
    const agent = defineAgent({ name: 'calc', instructions: 'x', model: react(inner), tools: [add] });
    const result = await run(agent, 'go');
    expect(result.text).toBe('cannot');
    expect((inner.requests[1] as ModelRequest).messages.at(-1)?.content).toMatch(
      /^Observation: Error: unknown tool "multiply"\. Available tools: add/,
    );
  });
});

describe('react(): the wrapper on its own', () => {
  it('streams the Thought as reasoning and only the answer as text, whatever the chunking', async () => {
    const inner = scriptedModel([
      { deltas: ['Thought: easy.\nFin', 'al Answer: Pa', 'ris'], stopReason: 'end_turn' },
    ]);
    const deltas: ModelDelta[] = [];
    const response = await react(inner).generate(
      request([{ role: 'user', content: 'Capital of France?' }], { onDelta: (d) => deltas.push(d) }),
    );
    expect(response.text).toBe('Paris');
    expect(response.reasoning).toEqual([
      { provider: 'react', text: 'easy.', data: { type: 'react_thought', thought: 'easy.' } },
    ]);
    const text = deltas.filter((d) => d.type === 'text').map((d) => (d as { text: string }).text);
    const reasoning = deltas.filter((d) => d.type === 'reasoning').map((d) => (d as { text: string }).text);
    expect(text.join('')).toBe('Paris');
    expect(reasoning.join('')).toBe('Thought: easy.\n');
  });

  it('text held back in case it became "Final Answer:" is still streamed when the reply ends', async () => {
    const inner = scriptedModel([{ deltas: ['Thought: hmm\nFinal'] }]);
    const deltas: ModelDelta[] = [];
    await react(inner).generate(
      request([{ role: 'user', content: '?' }], { onDelta: (d) => deltas.push(d) }),
    );
    expect(deltas).toEqual([
      { type: 'reasoning', text: 'Thought: hmm\n' },
      { type: 'reasoning', text: 'Final' },
    ]);
  });

  it('a parsed Action goes out as one tool-call delta after the reasoning', async () => {
    const inner = scriptedModel([
      { deltas: ['Thought: sum.\nAction: add\nAction Input: {"a":1,', '"b":2}'] },
    ]);
    const deltas: ModelDelta[] = [];
    const response = await react(inner, { generateId: () => 'r1' }).generate(
      request([{ role: 'user', content: '1+2?' }], { onDelta: (d) => deltas.push(d) }),
    );
    expect(response.toolCalls).toEqual([{ id: 'r1', name: 'add', args: { a: 1, b: 2 } }]);
    expect(deltas.filter((d) => d.type === 'text')).toEqual([]);
    expect(deltas.at(-1)).toEqual({
      type: 'tool_call',
      index: 0,
      id: 'r1',
      name: 'add',
      argsDelta: '{"a":1,"b":2}',
    });
    expect(
      deltas
        .filter((d) => d.type === 'reasoning')
        .map((d) => (d as { text: string }).text)
        .join(''),
    ).toBe('Thought: sum.\nAction: add\nAction Input: {"a":1,"b":2}');
  });

  it('renders a native history with two calls in one message as Action / Observation pairs', async () => {
    const inner = scriptedModel([{ text: 'Final Answer: 3 and 7' }]);
    await react(inner).generate(
      request([
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'sums?' },
        {
          role: 'assistant',
          content: 'Two sums.',
          toolCalls: [
            { id: 'a', name: 'add', args: { a: 1, b: 2 } },
            { id: 'b', name: 'add', args: { a: 3, b: 4 } },
          ],
        },
        { role: 'tool', toolCallId: 'a', content: '3' },
        { role: 'tool', toolCallId: 'b', content: '7' },
        { role: 'user', content: 'and so?' },
      ]),
    );
    expect((inner.requests[0] as ModelRequest).messages.slice(1)).toEqual([
      { role: 'user', content: 'sums?' },
      { role: 'assistant', content: 'Thought: Two sums.\nAction: add\nAction Input: {"a":1,"b":2}' },
      { role: 'user', content: 'Observation: 3' },
      { role: 'assistant', content: 'Action: add\nAction Input: {"a":3,"b":4}' },
      { role: 'user', content: 'Observation: 7\n\nand so?' },
    ]);
  });

  it('adds a system message with the prompt when the history has none', async () => {
    const inner = scriptedModel([{ text: 'Final Answer: ok' }]);
    await react(inner).generate(request([{ role: 'user', content: 'hi' }]));
    const messages = (inner.requests[0] as ModelRequest).messages;
    expect(messages[0]?.role).toBe('system');
    expect(messages[0]?.content).toMatch(/^You can use tools\./);
  });

  it('without tools the reply is not parsed and no prompt is added (the final-output phase)', async () => {
    const inner = scriptedModel([{ text: '{"answer": 5}', stopReason: 'end_turn' }]);
    const output = { name: 'answer', schema: { type: 'object' } };
    const response = await react(inner).generate(
      request(
        [
          { role: 'system', content: 'sys' },
          { role: 'user', content: 'x' },
        ],
        { tools: [], output },
      ),
    );
    expect(response.text).toBe('{"answer": 5}');
    expect(response.toolCalls).toEqual([]);
    expect(inner.requests[0]?.messages).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'x' },
    ]);
    expect(inner.requests[0]?.output).toEqual(output);
  });

  it('a reply cut by max_tokens is reported as max_tokens, not as a format error', async () => {
    const inner = scriptedModel([
      { text: 'Thought: long\nAction: add\nAction Input: {"a": 1, "b"', stopReason: 'max_tokens' },
    ]);
    const response = await react(inner).generate(request([{ role: 'user', content: 'x' }]));
    expect(response.stopReason).toBe('max_tokens');
    expect(response.toolCalls).toEqual([]);
  });

  it('a tool using the reserved name is a ConfigError', async () => {
    const inner = scriptedModel([{ text: 'Final Answer: x' }]);
    const error = await react(inner)
      .generate(
        request([{ role: 'user', content: 'x' }], {
          tools: [{ name: reactInvalidReplyTool, description: '', parameters: {} }],
        }),
      )
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect(inner.calls).toBe(0);
  });

  it('keeps the underlying provider and model names (quotas and prices stay theirs)', () => {
    const inner = scriptedModel([], { model: 'tiny-llm' });
    expect(react(inner)).toMatchObject({ provider: 'scripted', model: 'tiny-llm' });
  });
});

/** An Anthropic text stream that says `text`, in the wire format of the API. */
function anthropicTextStream(text: string): string[] {
  const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}`;
  return [
    frame('message_start', {
      type: 'message_start',
      message: {
        id: 'msg_react',
        type: 'message',
        role: 'assistant',
        model: 'small-model',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 20, output_tokens: 1 },
      },
    }),
    frame('content_block_start', {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'text', text: '' },
    }),
    frame('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text },
    }),
    frame('content_block_stop', { type: 'content_block_stop', index: 0 }),
    frame('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: 9 },
    }),
    frame('message_stop', { type: 'message_stop' }),
  ];
}

describe('react() over a real SDK on the wire', () => {
  it('react(anthropic(...)): no tools in the request body, the prompt in system, Action/Observation as text turns', async () => {
    const server = await startWireServer(
      sequence(
        { sse: anthropicTextStream('Thought: add them.\nAction: add\nAction Input: {"a": 20, "b": 22}') },
        { sse: anthropicTextStream('Thought: done.\nFinal Answer: 42') },
      ),
    );
    try {
      const model = react(anthropic('small-model', { apiKey: 'k', baseURL: server.url, maxRetries: 0 }));
      const agent = defineAgent({ name: 'calc', instructions: 'Be exact.', model, tools: [add] });
      const result = await run(agent, 'What is 20+22?');
      expect(result).toMatchObject({ status: 'completed', text: '42', toolCallCount: 1 });
      const [first, second] = server.requests.map((r) => r.body as Record<string, unknown>);
      expect(first?.tools).toBeUndefined();
      expect(String(first?.system)).toMatch(/^Be exact\.\n\nYou can use tools\./);
      expect(second?.messages).toEqual([
        { role: 'user', content: 'What is 20+22?' },
        {
          role: 'assistant',
          content: [{ type: 'text', text: 'Thought: add them.\nAction: add\nAction Input: {"a":20,"b":22}' }],
        },
        { role: 'user', content: 'Observation: 42' },
      ]);
    } finally {
      await server.close();
    }
  });
});
