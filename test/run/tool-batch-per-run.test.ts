import { defineAgent, run, type ToolContext, tool } from 'troupe';
import { type ScriptedTurn, scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * A long run's tool steps share one batch object: each step sees its own calls, step, idempotency keys and disabled
 * tools, never those of the step before.
 */

function callOf(id: string, name: string, args: Record<string, string>): ScriptedTurn {
  return { toolCalls: [{ id, name, args }], stopReason: 'tool_use' };
}

describe('the tool steps of one run', () => {
  it('each step runs its own calls with its own step, keys and disabled tools', async () => {
    const seen: { tool: string; callId: string; step: number; key: string; context: unknown }[] = [];
    const record = (name: string, ctx: ToolContext) =>
      seen.push({
        tool: name,
        callId: ctx.callId,
        step: ctx.step,
        key: ctx.idempotencyKey,
        context: ctx.context,
      });
    const flaky = tool({
      name: 'flaky',
      description: 'Fails.',
      input: z.object({ n: z.string() }),
      maxRetries: 0,
      execute: (_args, ctx) => {
        record('flaky', ctx);
        throw new Error('down');
      },
    });
    const echo = tool({
      name: 'echo',
      description: 'Echoes.',
      input: z.object({ text: z.string() }),
      execute: async ({ text }, ctx) => {
        record('echo', ctx);
        return text;
      },
    });
    const agent = defineAgent({
      name: 'worker',
      instructions: '',
      model: scriptedModel([
        callOf('a', 'echo', { text: 'one' }),
        callOf('b', 'echo', { text: 'two' }),
        callOf('c', 'echo', { text: 'three' }),
        callOf('d', 'echo', { text: 'four' }),
        callOf('e', 'flaky', { n: '1' }),
        callOf('f', 'flaky', { n: '2' }),
        callOf('g', 'echo', { text: 'seven' }),
        { text: 'done' },
      ]),
      tools: [flaky, echo],
    });
    const result = await run(agent, 'go', { context: { user: 'u1' } });
    expect(result.status).toBe('completed');
    // The sixth step's call is refused: the tool degraded in the fifth step.
    expect(seen.map((entry) => [entry.tool, entry.callId, entry.step])).toEqual([
      ['echo', 'a', 1],
      ['echo', 'b', 2],
      ['echo', 'c', 3],
      ['echo', 'd', 4],
      ['flaky', 'e', 5],
      ['echo', 'g', 7],
    ]);
    expect(seen.map((entry) => entry.key.split(':').slice(-2).join(':'))).toEqual([
      '1:a',
      '2:b',
      '3:c',
      '4:d',
      '5:e',
      '7:g',
    ]);
    expect(seen.every((entry) => (entry.context as { user: string }).user === 'u1')).toBe(true);
    const answers = result.history
      .filter((message) => message.role === 'tool')
      .map((message) => message.content);
    expect(answers).toEqual([
      'one',
      'two',
      'three',
      'four',
      'Error: tool "flaky" failed after 1 attempt(s): down',
      'Error: tool "flaky" is unavailable for the rest of this run after repeated failures. Answer without it.',
      'seven',
    ]);
  });
});
