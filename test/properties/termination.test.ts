import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  activeRuntimeCount,
  defineAgent,
  type JsonValue,
  type Message,
  run,
  stopReasons,
  tool,
  validateHistory,
} from '../../src/index.ts';
import { runInvariantViolations } from '../../src/testing/run-invariants.ts';
import { type ScriptedTurn, scriptedModel } from '../../src/testing/scripted-model.ts';

/**
 * Property-based termination (REQUIREMENTS V2): whatever the model does (tool calls, repeats, unknown tools,
 * invalid arguments, throwing and hanging tools, bad JSON output, empty replies, every stop reason, errors,
 * delays), every run ends with a stop reason from the closed set, within its model-call bound, with a valid
 * history that starts with the caller's untouched history.
 */

const numRuns = process.env.CI ? 1000 : 200;

const tools = [
  tool({ name: 'ok', description: 'works', input: z.object({ n: z.number() }), execute: ({ n }) => n * 2 }),
  tool({
    name: 'boom',
    description: 'throws',
    input: z.object({ n: z.number() }),
    execute: () => {
      throw new Error('boom');
    },
  }),
  tool({
    name: 'slow',
    description: 'outlives a short timeout',
    input: z.object({ n: z.number() }),
    execute: (_args, ctx) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => resolve('late'), 3);
        ctx.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          reject(ctx.signal.reason);
        });
      }),
  }),
];

const stopReason = fc.constantFrom(
  undefined,
  'tool_use' as const,
  'end_turn' as const,
  'max_tokens' as const,
  'stop_sequence' as const,
  'refusal' as const,
  'content_filter' as const,
);

const args: fc.Arbitrary<JsonValue> = fc.oneof(
  fc.record({ n: fc.integer({ min: 0, max: 2 }) }),
  fc.constant('{not json'),
  fc.record({ wrong: fc.boolean() }),
);

const toolCall = fc.record({
  name: fc.constantFrom('ok', 'boom', 'slow', 'missing'),
  args,
});

const turn: fc.Arbitrary<ScriptedTurn> = fc.oneof(
  fc.record(
    {
      text: fc.constantFrom('', 'thinking'),
      toolCalls: fc.array(toolCall, { minLength: 1, maxLength: 3 }),
      stopReason,
      delayMs: fc.constantFrom(0, 0, 0, 1),
    },
    { requiredKeys: ['toolCalls'] },
  ),
  fc.record(
    {
      text: fc.constantFrom('', 'plain answer', '{"x":1}', '{"x":"no"}', '```json\n{"x":2}\n```'),
      stopReason,
    },
    { requiredKeys: ['text'] },
  ),
  fc.record({ error: fc.constantFrom('provider 500', 'rate limited') }),
  fc.constant<ScriptedTurn>({ reasoning: [{ provider: 'test', data: { thinking: '...' } }] }),
);

const limits = fc.record({
  maxSteps: fc.integer({ min: 1, max: 5 }),
  maxDecodeRetries: fc.integer({ min: 0, max: 2 }),
  maxDuplicateToolCalls: fc.integer({ min: 1, max: 3 }),
  maxToolCallsPerTool: fc.option(fc.integer({ min: 1, max: 4 }), { nil: null }),
  toolRetries: fc.integer({ min: 0, max: 2 }),
  toolTimeoutMs: fc.constantFrom(undefined, 1),
  finalAnswerOnMaxSteps: fc.boolean(),
});

const priorHistory: fc.Arbitrary<Message[]> = fc.constantFrom<Message[][]>(
  [],
  [
    { role: 'user', content: 'earlier' },
    { role: 'assistant', content: 'yes' },
  ],
  [
    { role: 'system', content: 'be brief' },
    { role: 'user', content: 'x' },
    { role: 'assistant', content: '', toolCalls: [{ id: 'old', name: 'ok', args: { n: 1 } }] },
    { role: 'tool', toolCallId: 'old', content: '2' },
  ],
);

describe('termination, whatever the model does', () => {
  it('every run ends in the closed set, within its bound, with a valid untouched history', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(turn, { minLength: 0, maxLength: 12 }),
        limits,
        fc.boolean(),
        fc.boolean(),
        priorHistory,
        async (turns, agentLimits, withTools, withSchema, history) => {
          const model = scriptedModel(turns);
          const agent = defineAgent({
            name: 'prop',
            instructions: 'test',
            model,
            tools: withTools ? tools : [],
            ...(withSchema ? { output: z.object({ x: z.number() }) } : {}),
            limits: agentLimits,
          });
          const before = structuredClone(history);
          const result = await run(agent, 'go', { history });

          expect(
            runInvariantViolations(result, {
              limits: agent.limits,
              modelCalls: model.calls,
              history,
              historyBefore: before,
              hasOutputSchema: withSchema,
              checkNoActiveRuns: true,
            }),
          ).toEqual([]);
          if (result.stopReason === 'completed' && withSchema)
            expect(result.output).toMatchObject({ x: expect.any(Number) });
        },
      ),
      { numRuns },
    );
  });

  it('an abort at any moment ends the run cleanly as aborted (or it had already ended)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(turn, { maxLength: 8 }),
        fc.integer({ min: 0, max: 4 }),
        async (turns, abortAfterMs) => {
          const controller = new AbortController();
          const slowTurns = turns.map((t) => ({ ...t, delayMs: 1 }));
          const agent = defineAgent({
            name: 'abortable',
            instructions: '',
            model: scriptedModel(slowTurns),
            tools,
          });
          const pending = run(agent, 'go', { signal: controller.signal });
          setTimeout(() => controller.abort(), abortAfterMs);
          const result = await pending;
          expect(stopReasons).toContain(result.stopReason);
          expect(() => validateHistory(result.history)).not.toThrow();
          expect(activeRuntimeCount()).toBe(0);
        },
      ),
      { numRuns },
    );
  });
});
