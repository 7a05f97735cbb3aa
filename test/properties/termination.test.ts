import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type AgentGuardrailOptions,
  defineAgent,
  type GuardrailOptions,
  type JsonValue,
  type Message,
  run,
  stopReasons,
  tool,
  validateHistory,
} from '../../src/index.ts';
import { activeRuntimeCount } from '../../src/testing/index.ts';
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
  maxToolRetries: fc.integer({ min: 0, max: 2 }),
  toolTimeoutMs: fc.constantFrom(undefined, 1),
  finalAnswerOnMaxSteps: fc.boolean(),
  finalAnswerOnToolLimits: fc.boolean(),
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

/** What a generated guardrail's check does: decide at once or later, or fail (a failure blocks: fail closed). */
type GuardrailBehaviour = 'allow' | 'warn' | 'block' | 'throw' | 'later-allow' | 'later-block' | 'reject';

const behaviour = fc.constantFrom<GuardrailBehaviour>(
  'allow',
  'allow',
  'warn',
  'block',
  'throw',
  'later-allow',
  'later-block',
  'reject',
);

const behaviourOf = new WeakMap<GuardrailOptions, GuardrailBehaviour>();

function generatedGuardrail(
  name: string,
  does: GuardrailBehaviour,
  extra: Partial<GuardrailOptions>,
): GuardrailOptions {
  const later = (decision: 'allow' | 'block') =>
    new Promise<{ decision: 'allow' | 'block' }>((resolve) => setTimeout(() => resolve({ decision }), 1));
  const options: GuardrailOptions = {
    ...extra,
    name,
    check: () => {
      switch (does) {
        case 'throw':
          throw new Error('check failed');
        case 'reject':
          return Promise.reject(new Error('check rejected'));
        case 'later-allow':
          return later('allow');
        case 'later-block':
          return later('block');
        default:
          return { decision: does };
      }
    },
  };
  behaviourOf.set(options, does);
  return options;
}

/** Guardrails of every stage and mode, each with a random behaviour; or none. */
const guardrails: fc.Arbitrary<AgentGuardrailOptions | undefined> = fc.option(
  fc
    .record({
      input: fc.option(behaviour, { nil: undefined }),
      parallel: fc.option(behaviour, { nil: undefined }),
      output: fc.option(behaviour, { nil: undefined }),
      streaming: fc.option(behaviour, { nil: undefined }),
      toolInput: fc.option(behaviour, { nil: undefined }),
      toolOutput: fc.option(behaviour, { nil: undefined }),
      answer: fc.boolean(),
    })
    .map((g) => ({
      input: [
        ...(g.input ? [generatedGuardrail('input', g.input, {})] : []),
        ...(g.parallel ? [generatedGuardrail('parallel', g.parallel, { mode: 'parallel' })] : []),
      ],
      output: [
        ...(g.output ? [generatedGuardrail('output', g.output, {})] : []),
        ...(g.streaming ? [generatedGuardrail('streaming', g.streaming, { streaming: true })] : []),
      ],
      toolInput: g.toolInput
        ? [generatedGuardrail('tool-input', g.toolInput, g.answer ? { onBlock: 'answer' } : {})]
        : [],
      toolOutput: g.toolOutput ? [generatedGuardrail('tool-output', g.toolOutput, {})] : [],
    })),
  { nil: undefined },
);

const blocking: ReadonlySet<GuardrailBehaviour> = new Set(['block', 'throw', 'later-block', 'reject']);

describe('termination, whatever the model does', () => {
  it('every run ends in the closed set, within its bound, with a valid untouched history', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(turn, { minLength: 0, maxLength: 12 }),
        limits,
        fc.boolean(),
        fc.boolean(),
        priorHistory,
        guardrails,
        async (turns, agentLimits, withTools, withSchema, history, guarded) => {
          const model = scriptedModel(turns);
          const agent = defineAgent({
            name: 'prop',
            instructions: 'test',
            model,
            tools: withTools ? tools : [],
            ...(withSchema ? { output: z.object({ x: z.number() }) } : {}),
            ...(guarded ? { guardrails: guarded } : {}),
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
          // A guardrail named as the blocker is one that can block; a run it did not block has no `guardrail`.
          if (result.guardrail) {
            expect(result.stopReason).toBe('guardrail_blocked');
            const all = Object.values(guarded ?? {}).flat() as GuardrailOptions[];
            const blocker = all.find((g) => g.name === result.guardrail?.name);
            expect(blocker && blocking.has(behaviourOf.get(blocker) as GuardrailBehaviour)).toBe(true);
            expect(blocker?.onBlock).not.toBe('answer');
          }
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
        guardrails,
        async (turns, abortAfterMs, guarded) => {
          const controller = new AbortController();
          const slowTurns = turns.map((t) => ({ ...t, delayMs: 1 }));
          const agent = defineAgent({
            name: 'abortable',
            instructions: '',
            model: scriptedModel(slowTurns),
            tools,
            ...(guarded ? { guardrails: guarded } : {}),
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
