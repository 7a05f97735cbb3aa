import {
  ConfigError,
  defineAgent,
  duplicateToolCallCountIs,
  run,
  type StopWhen,
  stepCountIs,
  tool,
  toolCallCountIs,
} from 'troupe';
import { type ScriptedTurn, scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/** An agent's stopWhen: conditions as data, composed from the exported functions, met like the limits they tighten. */

const lookup = tool({
  name: 'lookup',
  description: 'looks up',
  input: z.object({ q: z.string() }),
  execute: () => 'x',
});
const search = tool({
  name: 'search',
  description: 'searches',
  input: z.object({ q: z.string() }),
  execute: () => 'y',
});

/** Turn i calls `name` with a fresh argument (or the same one, `same`), forever. */
function calling(name: string, same = false): (request: unknown, index: number) => ScriptedTurn {
  return (_, index) => ({
    toolCalls: [{ name, args: { q: same ? 'again' : `q${index}` } }],
    stopReason: 'tool_use',
  });
}

function agentWith(stopWhen: StopWhen | undefined, turns: (request: unknown, index: number) => ScriptedTurn) {
  return defineAgent({
    name: 'looper',
    instructions: 'x',
    model: scriptedModel(turns),
    tools: [lookup, search],
    limits: { maxToolCallsPerTool: null, maxDuplicateToolCalls: 100 },
    ...(stopWhen === undefined ? {} : { stopWhen }),
  });
}

describe('stopWhen', () => {
  it('stepCountIs(n): the run stops with max_steps after n model calls', async () => {
    const result = await run(agentWith(stepCountIs(3), calling('lookup')), 'go');
    expect(result.stopReason).toBe('max_steps');
    expect(result.modelCalls).toBe(3);
  });

  it('toolCallCountIs(n, { tool }): caps that tool only, with tool_call_limit', async () => {
    const turns = (_: unknown, index: number): ScriptedTurn => ({
      toolCalls: [{ name: index % 2 === 0 ? 'lookup' : 'search', args: { q: `q${index}` } }],
      stopReason: 'tool_use',
    });
    const result = await run(
      agentWith([stepCountIs(8), toolCallCountIs(2, { tool: 'search' })], turns),
      'go',
    );
    expect(result.stopReason).toBe('tool_call_limit');
    // The refused call is answered with the limit, and the model answers once more without tools.
    expect(result.history.at(-2)).toMatchObject({ role: 'tool', name: 'search', isError: true });
    expect(result.history.at(-2)?.content).toContain('"search" would be called 3 times (limit 2 per run)');
    // lookup, search, lookup, search, lookup, then a third search is refused.
    expect(result.toolCallCount).toBe(5);
  });

  it('toolCallCountIs(n): caps every tool', async () => {
    const result = await run(agentWith(toolCallCountIs(2), calling('lookup')), 'go');
    expect(result.stopReason).toBe('tool_call_limit');
    expect(result.toolCallCount).toBe(2);
  });

  it('duplicateToolCallCountIs(n): the same call with the same arguments runs n times', async () => {
    const result = await run(agentWith(duplicateToolCallCountIs(1), calling('lookup', true)), 'go');
    expect(result.stopReason).toBe('duplicate_tool_call');
    expect(result.toolCallCount).toBe(1);
  });

  it('a list stops at the first condition met; limits and stopWhen together: the sooner wins', async () => {
    const first = await run(agentWith([toolCallCountIs(5), stepCountIs(2)], calling('lookup')), 'go');
    expect(first.stopReason).toBe('max_steps');
    expect(first.modelCalls).toBe(2);
    const tighterLimit = defineAgent({
      name: 'looper',
      instructions: 'x',
      model: scriptedModel(calling('lookup')),
      tools: [lookup],
      limits: { maxSteps: 1, maxToolCallsPerTool: null },
      stopWhen: stepCountIs(5),
    });
    expect((await run(tighterLimit, 'go')).modelCalls).toBe(1);
  });

  it('is plain data: a condition that went through JSON stops the run the same way', async () => {
    const stopWhen = JSON.parse(
      JSON.stringify([stepCountIs(2), toolCallCountIs(9, { tool: 'search' })]),
    ) as StopWhen;
    expect(stopWhen).toEqual([
      { kind: 'stepCount', count: 2 },
      { kind: 'toolCallCount', count: 9, tool: 'search' },
    ]);
    const result = await run(agentWith(stopWhen, calling('lookup')), 'go');
    expect(result.stopReason).toBe('max_steps');
    expect(result.modelCalls).toBe(2);
  });

  it('refuses what is not a condition, with a ConfigError that says where', () => {
    expect(() => stepCountIs(0)).toThrow(ConfigError);
    expect(() => toolCallCountIs(1.5)).toThrow(ConfigError);
    expect(() => toolCallCountIs(1, { tool: '' })).toThrow(ConfigError);
    const bad = (stopWhen: unknown) => () => agentWith(stopWhen as StopWhen, calling('lookup'));
    expect(bad(() => true)).toThrow(/stopWhen must be a stop condition/);
    expect(bad([stepCountIs(2), { kind: 'tokens', count: 3 }])).toThrow(
      /stopWhen\[1\]: unknown stop condition kind/,
    );
    expect(bad({ kind: 'stepCount', count: -1 })).toThrow(ConfigError);
    expect(() =>
      defineAgent({
        name: 'a',
        instructions: 'x',
        model: scriptedModel([]),
        stopwhen: stepCountIs(1),
      } as never),
    ).toThrow(/did you mean "stopWhen"/);
  });
});
