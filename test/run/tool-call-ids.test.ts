import { defineAgent, type Message, type ModelProvider, type ModelResponse, run, tool } from 'troupe';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { expectUniqueAnsweredIds, toolCallIds } from '../properties/history-ids.ts';

/**
 * Tool-call ids across runs that pass `history: previous.history` back: a provider's missing, empty or "0" ids and
 * a model's reused ids must never make two calls of one history share an id, and every call is answered exactly
 * once under its (possibly renamed) id.
 */

const echo = tool({
  name: 'echo',
  description: 'Echoes its text',
  input: z.object({ text: z.string() }),
  execute: ({ text }) => `echo: ${text}`,
});

const usage = { input: 1, output: 1, cached: 0, reasoning: 0 };

/** A provider that answers from `turn(index)`, with ids exactly as given (no fill-in, unlike scriptedModel). */
function rawModel(turn: (index: number) => Omit<ModelResponse, 'usage'>): ModelProvider {
  let calls = 0;
  return {
    provider: 'custom',
    model: 'raw',
    async generate() {
      return { ...turn(calls++), usage };
    },
  };
}

describe('tool-call ids across runs that pass the history back', () => {
  it('placeholder ids for empty, "0" and missing ids do not collide across runs', async () => {
    // Every odd call asks for three tools with ids a loose server sends; every even call answers.
    const model = rawModel((index) =>
      index % 2 === 0
        ? {
            text: '',
            toolCalls: [
              { id: '', name: 'echo', args: { text: 'a' } },
              { id: '0', name: 'echo', args: { text: 'b' } },
              { id: undefined as unknown as string, name: 'echo', args: { text: 'c' } },
            ],
            stopReason: 'tool_use',
          }
        : { text: `done ${index}`, toolCalls: [], stopReason: 'end_turn' },
    );
    const agent = defineAgent({ name: 'loose', instructions: 'x', model, tools: [echo] });
    let history: Message[] = [];
    for (let turn = 0; turn < 4; turn++) {
      const result = await run(agent, `question ${turn}`, { history });
      expect(result).toMatchObject({ status: 'completed', toolCallCount: 3 });
      expectUniqueAnsweredIds(result.history);
      history = result.history;
    }
    const ids = toolCallIds(history);
    expect(ids).toHaveLength(12);
  });

  it('a provider that sends "0" for every call yields a history the next run accepts', async () => {
    const model = rawModel((index) =>
      index % 2 === 0
        ? { text: '', toolCalls: [{ id: '0', name: 'echo', args: { text: 'x' } }], stopReason: 'tool_use' }
        : { text: 'ok', toolCalls: [], stopReason: 'end_turn' },
    );
    const agent = defineAgent({ name: 'zero', instructions: 'x', model, tools: [echo] });
    const first = await run(agent, 'one');
    const second = await run(agent, 'two', { history: first.history });
    const third = await run(agent, 'three', { history: second.history });
    expect(third.status).toBe('completed');
    expectUniqueAnsweredIds(third.history);
    // Each run's call is told apart from the earlier ones', and the runs' step records use the same ids.
    const stepIds = [first, second, third].map((r) => r.steps[0]?.toolCalls[0]?.id);
    expect(new Set(stepIds).size).toBe(3);
  });

  it('a model that reuses an id from the history gets it renamed in the call and in its answer', async () => {
    const model = rawModel((index) =>
      index % 2 === 0
        ? {
            text: '',
            toolCalls: [{ id: 'call_abc', name: 'echo', args: { text: `t${index}` } }],
            stopReason: 'tool_use',
          }
        : { text: 'ok', toolCalls: [], stopReason: 'end_turn' },
    );
    const agent = defineAgent({ name: 'reuser', instructions: 'x', model, tools: [echo] });
    const first = await run(agent, 'one');
    const second = await run(agent, 'two', { history: first.history });
    const third = await run(agent, 'three', { history: second.history });
    expectUniqueAnsweredIds(third.history);
    const delta = second.historyDelta;
    const assistant = delta.find((m) => m.role === 'assistant' && (m.toolCalls?.length ?? 0) > 0);
    const renamed = assistant?.role === 'assistant' ? assistant.toolCalls?.[0]?.id : undefined;
    expect(renamed).toBeDefined();
    expect(renamed).not.toBe('call_abc');
    // The answer carries the new id and the tool's real result.
    const answer = delta.find((m) => m.role === 'tool');
    expect(answer).toMatchObject({ toolCallId: renamed, content: 'echo: t2', isError: false });
    expect(second.steps[0]?.toolCalls[0]).toMatchObject({ id: renamed, result: 'echo: t2' });
    const thirdIds = third.historyDelta.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : []));
    expect(thirdIds).toHaveLength(1);
    expect([renamed, 'call_abc']).not.toContain(thirdIds[0]);
  });

  it('a response that repeats one id within itself and reuses the history runs each call under its own id', async () => {
    const model = rawModel((index) =>
      index % 2 === 0
        ? {
            text: '',
            toolCalls: [
              { id: 'dup', name: 'echo', args: { text: '1' } },
              { id: 'dup', name: 'echo', args: { text: '2' } },
              { id: 'dup_2', name: 'echo', args: { text: '3' } },
            ],
            stopReason: 'tool_use',
          }
        : { text: 'ok', toolCalls: [], stopReason: 'end_turn' },
    );
    const agent = defineAgent({ name: 'dups', instructions: 'x', model, tools: [echo] });
    const first = await run(agent, 'one');
    expect(first.toolCallCount).toBe(3);
    const second = await run(agent, 'two', { history: first.history });
    expect(second.toolCallCount).toBe(3);
    expectUniqueAnsweredIds(second.history);
    // Each answer matches its own call's arguments.
    for (const step of [...first.steps, ...second.steps])
      for (const call of step.toolCalls)
        expect(call.result).toBe(`echo: ${(call.args as { text: string }).text}`);
  });
});
