import { defineAgent, run, type ToolContext, tool } from 'troupe';
import { type ScriptedTurn, scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * A run's tool steps share one batch object: each step sees its own calls, step, idempotency keys and disabled
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
        callOf('b', 'flaky', { n: '1' }),
        callOf('c', 'flaky', { n: '2' }),
        callOf('d', 'echo', { text: 'four' }),
        { text: 'done' },
      ]),
      tools: [flaky, echo],
    });
    const result = await run(agent, 'go', { context: { user: 'u1' } });
    expect(result.status).toBe('completed');
    // The third step's call is refused: the tool degraded in the second step.
    expect(seen.map((entry) => [entry.tool, entry.callId, entry.step])).toEqual([
      ['echo', 'a', 1],
      ['flaky', 'b', 2],
      ['echo', 'd', 4],
    ]);
    expect(seen.map((entry) => entry.key.split(':').slice(-2).join(':'))).toEqual(['1:a', '2:b', '4:d']);
    expect(seen.every((entry) => (entry.context as { user: string }).user === 'u1')).toBe(true);
    const answers = result.history
      .filter((message) => message.role === 'tool')
      .map((message) => message.content);
    expect(answers).toEqual([
      'one',
      'Error: tool "flaky" failed after 1 attempt(s): down',
      'Error: tool "flaky" is unavailable for the rest of this run after repeated failures. Answer without it.',
      'four',
    ]);
  });
});
