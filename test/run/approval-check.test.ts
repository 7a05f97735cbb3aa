import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { systemClock } from '../../src/core/clock.ts';
import type { ToolCall } from '../../src/core/messages.ts';
import { classifyCalls } from '../../src/run/approval-check.ts';
import { runToolBatch } from '../../src/run/tool-runner.ts';
import { askHuman } from '../../src/tools/ask-human.ts';
import { ToolRegistry } from '../../src/tools/registry.ts';
import { tool } from '../../src/tools/tool.ts';

const refund = tool({
  name: 'refund',
  description: 'Refunds an amount.',
  input: z.object({ amount: z.number() }),
  needsApproval: true,
  execute: ({ amount }) => `refunded ${amount}`,
});
const registry = new ToolRegistry([refund, askHuman()]);
const place = { sessionId: 's', agent: 'a', route: 'a', turn: 1, step: 1, replayed: () => undefined };

describe('classifyCalls with people’s decisions', () => {
  it('hands every decided call to the runner, which answers it from the decision', async () => {
    const calls: ToolCall[] = [
      { id: 'c1', name: 'refund', args: { amount: 5 } },
      { id: 'c2', name: 'ask_human', args: { question: 'Which account?' } },
      { id: 'c3', name: 'refund', args: { amount: 7 } },
    ];
    const classified = await classifyCalls(
      registry,
      calls,
      [
        { callId: 'c1', decision: { type: 'reject', reason: 'too much' } },
        { callId: 'c2', decision: { type: 'answer', text: 'account 7' } },
        { callId: 'c3', decision: { type: 'approve' } },
      ],
      place,
    );
    expect(classified.runnable.map((call) => call.id)).toEqual(['c1', 'c2', 'c3']);
    const outcomes = await runToolBatch({
      calls: classified.runnable,
      registry,
      disabled: [],
      concurrency: 8,
      timeoutMs: null,
      maxRetries: 0,
      sessionId: 's',
      route: 'a',
      turn: 1,
      callPath: '',
      agent: 'a',
      step: 1,
      signal: new AbortController().signal,
      clock: systemClock,
      known: (call) => classified.decided.get(call.id),
      onStart: () => undefined,
      onSettled: () => undefined,
      onRetry: () => undefined,
    });
    expect(outcomes.map((outcome) => [outcome.callId, outcome.content, outcome.isError])).toEqual([
      ['c1', 'Not run: a person rejected this call: too much', true],
      ['c2', 'account 7', false],
      ['c3', 'refunded 7', false],
    ]);
  });
});
