import {
  createAgentSystem,
  defineAgent,
  type Message,
  type ModelProvider,
  type ModelResponse,
  run,
  tool,
} from 'troupe';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { expectUniqueAnsweredIds, toolCallIdProblems, toolCallIds } from '../properties/history-ids.ts';

/**
 * Tool-call ids over a session's turns (and handoffs): whatever ids the provider sends (none, "", "0", one it used
 * before), every id of the session's history is unique and answered exactly once, and a history from one session
 * or run starts the next.
 */

const echo = tool({
  name: 'echo',
  description: 'Echoes its text',
  input: z.object({ text: z.string() }),
  execute: ({ text }) => `echo: ${text}`,
});

const usage = { input: 1, output: 1, cached: 0, reasoning: 0 };

/**
 * A provider answering from `turn(index)`, ids exactly as given. It also checks what it is sent, as a real provider
 * would (Anthropic and OpenAI refuse a conversation that uses a tool-call id twice): `problems` lists what was wrong.
 */
function rawModel(
  turn: (index: number) => Omit<ModelResponse, 'usage'>,
): ModelProvider & { problems: string[] } {
  let calls = 0;
  const problems: string[] = [];
  return {
    provider: 'custom',
    model: 'raw',
    problems,
    async generate(request) {
      problems.push(...toolCallIdProblems(request.messages.filter((m) => m.role !== 'system')));
      return { ...turn(calls++), usage };
    },
  };
}

const looseIds = (index: number): Omit<ModelResponse, 'usage'> =>
  index % 2 === 0
    ? {
        text: '',
        toolCalls: [
          { id: '0', name: 'echo', args: { text: 'a' } },
          { id: '', name: 'echo', args: { text: 'b' } },
          { id: undefined as unknown as string, name: 'echo', args: { text: 'c' } },
        ],
        stopReason: 'tool_use',
      }
    : { text: `answer ${index}`, toolCalls: [], stopReason: 'end_turn' };

const systems: { shutdown(): Promise<void> }[] = [];
afterEach(async () => {
  for (const system of systems.splice(0)) await system.shutdown();
});

function newSystem() {
  const system = createAgentSystem();
  systems.push(system);
  return system;
}

describe('tool-call ids over a session', () => {
  it('a provider sending "0", "" and no id every turn keeps every id of the session unique', async () => {
    const model = rawModel(looseIds);
    const agent = defineAgent({ name: 'loose', instructions: 'x', model, tools: [echo] });
    const session = newSystem().spawn(agent, 'turn 0', { sessionId: 'ids-loose' });
    let last = await session.result;
    expectUniqueAnsweredIds(last.history);
    for (let turn = 1; turn < 4; turn++) {
      last = await session.send(`turn ${turn}`);
      expect(last).toMatchObject({ status: 'completed', toolCallCount: 3 });
      expectUniqueAnsweredIds(last.history);
    }
    expect(toolCallIds(last.history)).toHaveLength(12);
    // Within each turn too, the provider was never sent an id twice.
    expect(model.problems).toEqual([]);
  });

  it('a model that reuses an id of an earlier turn gets it renamed, in the call and in its answer', async () => {
    const model = rawModel((index) =>
      index % 2 === 0
        ? {
            text: '',
            toolCalls: [{ id: 'toolu_1', name: 'echo', args: { text: `t${index}` } }],
            stopReason: 'tool_use',
          }
        : { text: 'ok', toolCalls: [], stopReason: 'end_turn' },
    );
    const agent = defineAgent({ name: 'reuser', instructions: 'x', model, tools: [echo] });
    const session = newSystem().spawn(agent, 'one', { sessionId: 'ids-reuse' });
    await session.result;
    const second = await session.send('two');
    expectUniqueAnsweredIds(second.history);
    const [call] = second.steps[0]?.toolCalls ?? [];
    expect(call?.id).not.toBe('toolu_1');
    const answer = second.historyDelta.find((m) => m.role === 'tool');
    expect(answer).toMatchObject({ toolCallId: call?.id, content: 'echo: t2', isError: false });
    const third = await session.send('three');
    expectUniqueAnsweredIds(third.history);
    expect(model.problems).toEqual([]);
  });

  it('a history from run() with placeholder ids starts a session that adds none of them again', async () => {
    const agent = defineAgent({ name: 'loose', instructions: 'x', model: rawModel(looseIds), tools: [echo] });
    const first = await run(agent, 'plain run');
    const session = newSystem().spawn(agent, 'in a session', {
      sessionId: 'ids-from-run',
      history: first.history,
    });
    const second = await session.result;
    expect(second.status).toBe('completed');
    expectUniqueAnsweredIds(second.history);
    // And back again: the session's history starts a plain run.
    const third = await run(agent, 'plain again', { history: second.history });
    expect(third.status).toBe('completed');
    expectUniqueAnsweredIds(third.history);
  });

  it('a handoff target that does not see the earlier calls (input filter) cannot reuse their ids', async () => {
    // The target sees only the last user message, so its ids cannot be checked against the earlier turns'.
    const target = defineAgent({
      name: 'target',
      description: 'answers',
      instructions: 'x',
      model: rawModel((index) =>
        index % 2 === 0
          ? {
              text: '',
              toolCalls: [
                { id: 'same_2', name: 'echo', args: { text: 'one' } },
                { id: 'same_1', name: 'echo', args: { text: 'two' } },
                { id: 'same', name: 'echo', args: { text: 'three' } },
              ],
              stopReason: 'tool_use',
            }
          : { text: 'target done', toolCalls: [], stopReason: 'end_turn' },
      ),
      tools: [echo],
    });
    let entryCalls = 0;
    const entry = defineAgent({
      name: 'entry',
      instructions: 'x',
      model: {
        provider: 'custom',
        model: 'raw',
        async generate(request) {
          entryCalls += 1;
          // Turn 1: the entry calls echo under the id the target will use too, then hands off.
          const asked = request.messages.some((m) => m.role === 'tool' && m.toolCallId === 'same');
          if (!asked)
            return {
              text: '',
              toolCalls: [{ id: 'same', name: 'echo', args: { text: 'entry' } }],
              stopReason: 'tool_use',
              usage,
            };
          return {
            text: '',
            toolCalls: [{ id: `handoff_${entryCalls}`, name: 'transfer_to_target', args: {} }],
            stopReason: 'tool_use',
            usage,
          };
        },
      },
      tools: [echo],
      handoffs: [target],
      handoffInputFilter: ({ history }) => history.filter((m: Message) => m.role === 'user').slice(-1),
    });
    const session = newSystem().spawn(entry, 'go', { sessionId: 'ids-handoff' });
    const result = await session.result;
    expect(result).toMatchObject({ status: 'completed', agent: 'target', text: 'target done' });
    expectUniqueAnsweredIds(result.history);
    // Each of the target's answers still belongs to its own call.
    const byId = new Map<string, string>();
    for (const message of result.history)
      if (message.role === 'tool') byId.set(message.toolCallId, message.content);
    for (const message of result.history)
      if (message.role === 'assistant' && message.agent === 'target')
        for (const call of message.toolCalls ?? [])
          expect(byId.get(call.id)).toBe(`echo: ${(call.args as { text: string }).text}`);
  });
});
