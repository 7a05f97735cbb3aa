import { ConfigError, defineAgent, type ModelProvider, run, tool, validateHistory } from 'troupe';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { plainJsonProblem } from '../../src/core/json.ts';
import type { Message } from '../../src/core/messages.ts';
import { HistoryIds, normalizeResponse } from '../../src/run/normalize-response.ts';

const echo = tool({
  name: 'echo',
  description: 'Echoes its text',
  input: z.object({ text: z.string() }),
  execute: ({ text }) => text,
});

describe('normalizeResponse: loose responses from a user-written provider', () => {
  it('names what is not JSON in tool arguments', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(plainJsonProblem(cyclic)).toBe('the value contains a cycle');
    expect(plainJsonProblem({ f: () => 1 })).toBe('a function is not JSON');
    expect(plainJsonProblem({ n: 10n })).toBe('a bigint is not JSON');
    expect(plainJsonProblem([1, Number.NaN])).toBe('the number NaN is not JSON');
    expect(plainJsonProblem({ when: new Date(0) })).toBe('a Date instance is not JSON');
    const shared = { x: 1 };
    expect(plainJsonProblem({ a: shared, b: [shared, null, 'x', true] })).toBeUndefined();
  });

  it('fills ids, arguments and usage, and turns non-JSON arguments into a string naming the problem', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.me = cyclic;
    const response = normalizeResponse(
      {
        text: 'x',
        toolCalls: [
          { id: '', name: 'echo', args: cyclic as never },
          { id: '0', name: 'echo', args: undefined as never },
        ],
        stopReason: 'tool_use',
        usage: undefined as never,
      },
      3,
    );
    expect(response.toolCalls).toEqual([
      { id: 'call_3_0', name: 'echo', args: '(arguments that are not JSON: the value contains a cycle)' },
      { id: 'call_3_1', name: 'echo', args: {} },
    ]);
    expect(response.usage).toEqual({ input: 0, output: 0, cached: 0, reasoning: 0 });
  });

  it('renames an id once it collides, with the history or with an earlier call of the same response', () => {
    const ids = (calls: string[], history: Parameters<typeof normalizeResponse>[2] = []) =>
      normalizeResponse(
        {
          text: '',
          toolCalls: calls.map((id) => ({ id, name: 'echo', args: {} })),
          stopReason: 'tool_use',
          usage: { input: 0, output: 0, cached: 0, reasoning: 0 },
        },
        1,
        history,
      ).toolCalls.map((call) => call.id);
    // A fresh id stays; one already taken earlier in the response gets the first free suffix, counting the
    // ids the response itself took before the collision.
    expect(ids(['x', 'x_2', 'x'])).toEqual(['x', 'x_2', 'x_3']);
    const history = [
      { role: 'assistant' as const, content: '', toolCalls: [{ id: 'a', name: 'echo', args: {} }] },
      { role: 'tool' as const, toolCallId: 'b', content: 'ok' },
    ];
    expect(ids(['c', 'a', 'b', 'a'], history)).toEqual(['c', 'a_2', 'b_2', 'a_3']);
  });

  it("with a run's known ids, renames exactly as a scan of the whole history does", () => {
    // A run's histories between model calls: messages appended, the last one replaced, and (as a history the memo
    // must not trust) one that is shorter or another conversation altogether.
    const usage = { input: 0, output: 0, cached: 0, reasoning: 0 };
    const respond = (calls: string[], call: number, history: Message[], known?: HistoryIds) =>
      normalizeResponse(
        {
          text: '',
          toolCalls: calls.map((id) => ({ id, name: 'echo', args: {} })),
          stopReason: 'tool_use',
          usage,
        },
        call,
        history,
        known,
      ).toolCalls.map((toolCall) => toolCall.id);
    const assistant = (ids: string[]): Message => ({
      role: 'assistant',
      content: '',
      toolCalls: ids.map((id) => ({ id, name: 'echo', args: {} })),
    });
    const answer = (id: string): Message => ({ role: 'tool', toolCallId: id, name: 'echo', content: 'ok' });
    const known = new HistoryIds();
    let history: Message[] = [{ role: 'user', content: 'hi' }];
    const seen: string[][] = [];
    const step = (calls: string[], call: number) => {
      const withMemo = respond(calls, call, history, known);
      expect(withMemo).toEqual(respond(calls, call, history));
      seen.push(withMemo);
      return withMemo;
    };
    // Appended turns: an id the model repeats is renamed against what came before.
    let ids = step(['a', 'b'], 1);
    history = history.concat([assistant(ids), answer(ids[0] as string), answer(ids[1] as string)]);
    ids = step(['a', 'c'], 2);
    expect(ids).toEqual(['a_2', 'c']);
    history = history.concat([assistant(ids)], ids.map(answer));
    // The last message replaced (as an output guardrail's block does), then the last two by one: read again.
    history = [...history.slice(0, -1), { role: 'user', content: 'again' }];
    expect(step(['c'], 3)).toEqual(['c_2']);
    history = [...history.slice(0, -2), { role: 'user', content: 'replaced' }];
    expect(step(['c', 'a_2'], 4)).toEqual(['c_2', 'a_2_2']);
    // A shorter history, then another conversation that happens to be as long: read from the start.
    history = history.slice(0, 2);
    expect(step(['a', 'c'], 5)).toEqual(['a_2', 'c']);
    history = [{ role: 'user', content: 'other' }, assistant(['z']), answer('z')];
    expect(step(['a', 'z'], 6)).toEqual(['a', 'z_2']);
    expect(seen).toHaveLength(6);
  });

  it('a run survives cyclic tool arguments: the model is told and answers', async () => {
    const cyclic: Record<string, unknown> = { text: 'hi' };
    cyclic.loop = cyclic;
    let calls = 0;
    const model: ModelProvider = {
      provider: 'custom',
      model: 'loose-1',
      async generate() {
        calls += 1;
        if (calls === 1)
          return {
            text: '',
            toolCalls: [{ id: 'c1', name: 'echo', args: cyclic as never }],
            stopReason: 'tool_use',
            usage: { input: 1, output: 1, cached: 0, reasoning: 0 },
          };
        return {
          text: 'done',
          toolCalls: [],
          stopReason: 'end_turn',
          usage: { input: 1, output: 1, cached: 0, reasoning: 0 },
        };
      },
    };
    const agent = defineAgent({ name: 'loose', instructions: 'x', model, tools: [echo] });
    const result = await run(agent, 'go');
    expect(result).toMatchObject({ status: 'completed', text: 'done' });
    expect(result.steps[0]?.toolCalls[0]).toMatchObject({ isError: true });
    expect(String(result.steps[0]?.toolCalls[0]?.result)).toMatch(/invalid arguments for tool "echo"/);
    expect(() => validateHistory(result.history)).not.toThrow();
  });

  it('the ReAct parse-error tool name is reserved', () => {
    const reserved = tool({
      name: 'react_invalid_reply',
      description: 'x',
      input: z.object({}),
      execute: () => 'x',
    });
    expect(() =>
      defineAgent({ name: 'a', instructions: 'x', model: echoModel(), tools: [reserved] }),
    ).toThrow(ConfigError);
  });
});

function echoModel(): ModelProvider {
  return {
    provider: 'custom',
    model: 'm',
    async generate() {
      return {
        text: 'ok',
        toolCalls: [],
        stopReason: 'end_turn',
        usage: { input: 0, output: 0, cached: 0, reasoning: 0 },
      };
    },
  };
}
