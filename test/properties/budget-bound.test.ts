import fc from 'fast-check';
import {
  agentTool,
  createResourceManager,
  defineAgent,
  type ModelRequest,
  type ResourceManager,
  type ResourceNotice,
  run,
  type ScopeUsage,
  tool,
} from 'troupe';
import { type ScriptedTurn, scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { estimateRequest } from '../../src/resources/resource-binding.ts';

/**
 * The budget guarantee, end to end: several `run()`s in parallel share one resource manager with a tenant budget
 * and run budgets (tokens, USD or both); some runs call agents as tools (several at once), which spend on their
 * caller's budgets. Every model call reports a random usage: an output of up to 1,200 tokens (cut by the call's
 * `maxOutputTokens`, as a real model's is) and an input a little above or below the prompt's estimate.
 *
 * The bound checked, for every budget B (a run's or the tenant's; tokens and USD alike):
 *
 *   spend(B) <= limit(B) + max over grants g on B of  sum over calls c on B in flight just after g of  err(c)
 *
 * where a call is "on B" when B is in its chain (its run, the runs it is nested in, its tenant), "in flight just
 * after g" means granted at or before g and not yet settled or released, and err(c) = max(0, the input the call
 * reported - the input estimate its reservation held), in tokens or priced at the input rate. So with one call in
 * flight at a time the budget is passed by at most that call's input-estimate error; calls in flight together add
 * theirs; a call whose prompt was not under-estimated passes nothing. Output errors do not count: a call's output is
 * capped at what its budgets had left.
 */

const numRuns = process.env.CI ? 200 : 100;
/** USD per million tokens: 1,000 output tokens cost $0.004. */
const prices = { tiny: { input: 1, output: 4 } };
const usdPerInputToken = 1 / 1_000_000;

interface CallSpec {
  output: number;
  inputError: number;
  /** Microtasks the call takes before it answers, so calls of parallel runs interleave. */
  delay: number;
}

const callArb: fc.Arbitrary<CallSpec> = fc.record({
  output: fc.integer({ min: 0, max: 1_200 }),
  inputError: fc.integer({ min: -20, max: 20 }),
  delay: fc.integer({ min: 0, max: 6 }),
});

const budgetArb = (tokens: [number, number], usd: [number, number]) =>
  fc
    .record(
      {
        tokens: fc.integer({ min: tokens[0], max: tokens[1] }),
        usd: fc.double({ min: usd[0], max: usd[1], noNaN: true }),
      },
      { requiredKeys: [] },
    )
    .filter((budget) => budget.tokens !== undefined || budget.usd !== undefined);

const runArb = fc.record({
  /** Agents used as tools in the first turn (0: a plain agent that calls a small tool). */
  helpers: fc.integer({ min: 0, max: 3 }),
  calls: fc.array(callArb, { minLength: 1, maxLength: 4 }),
  helperCalls: fc.array(callArb, { minLength: 1, maxLength: 3 }),
  budget: fc.option(budgetArb([150, 2_500], [0.0005, 0.008]), { nil: undefined }),
});

const worldArb = fc.record({
  tenant: budgetArb([300, 5_000], [0.001, 0.02]),
  runs: fc.array(runArb, { minLength: 2, maxLength: 4 }),
});

const note = tool({
  name: 'note',
  description: 'Notes a number',
  input: z.object({ n: z.number() }),
  execute: ({ n }) => `noted ${n}`,
});

/** A scripted turn from a call spec: its usage as the spec says, the text as long as its output. */
async function answer(request: ModelRequest, spec: CallSpec, toolCalls?: ScriptedTurn['toolCalls']) {
  for (let i = 0; i < spec.delay; i++) await Promise.resolve();
  const input = Math.max(0, estimateRequest(request).input + spec.inputError);
  const turn: ScriptedTurn = {
    text: toolCalls ? '' : 'abcd'.repeat(spec.output),
    stopReason: toolCalls ? 'tool_use' : 'end_turn',
    usage: { input, output: spec.output },
  };
  if (toolCalls) turn.toolCalls = toolCalls;
  return turn;
}

function agentsOf(spec: RunSpec, index: number) {
  const helper = defineAgent({
    name: `helper${index}`,
    description: 'Helps',
    instructions: 'Help briefly.',
    model: scriptedModel(
      (request, call) => answer(request, spec.helperCalls[call % spec.helperCalls.length] as CallSpec),
      {
        model: 'tiny',
      },
    ),
  });
  return defineAgent({
    name: `lead${index}`,
    instructions: 'Work.',
    model: scriptedModel(
      (request, call) => {
        const callSpec = spec.calls[call % spec.calls.length] as CallSpec;
        if (call === 0 && spec.helpers > 0)
          return answer(
            request,
            callSpec,
            Array.from({ length: spec.helpers }, (_, k) => ({
              name: helper.name,
              args: { input: `task ${k}` },
            })),
          );
        if (call < spec.calls.length - 1)
          return answer(request, callSpec, [{ name: 'note', args: { n: call } }]);
        return answer(request, callSpec);
      },
      { model: 'tiny' },
    ),
    tools: spec.helpers > 0 ? [agentTool(helper), note] : [note],
    limits: { maxSteps: 50, maxToolCallsPerTool: null },
  });
}

type RunSpec = typeof runArb extends fc.Arbitrary<infer T> ? T : never;

/** What the test saw of each call: the budgets it is on, what its reservation held, and its input error. */
interface Seen {
  chain: string[];
  input: number;
  err: number;
  closed: boolean;
}

/** Watches the manager's grants (its notices) and the calls' settlements (a wrapper), in the order they happen. */
function observe(manager: ResourceManager) {
  const calls = new Map<string, Seen>();
  /** Grants without an output cap (there must be none: every call is under the tenant's budget). */
  const uncapped: string[] = [];
  /** After each grant: the calls in flight (the granted one included). */
  const afterGrants: string[][] = [];
  const chainOf = (session: string): string[] => {
    const chain: string[] = [];
    let current: string | null = `session:${session}`;
    while (current !== null && chain.length < 16) {
      chain.push(current);
      if (current.startsWith('tenant:')) break;
      const usage: ScopeUsage | null = manager.usage({ session: current.slice('session:'.length) }).session;
      current = usage?.parent ?? null;
    }
    return chain;
  };
  manager.events.subscribe((notice: ResourceNotice) => {
    if (notice.type !== 'granted') return;
    // A listener's exceptions are caught by the manager: count what the test asserts afterwards.
    if (notice.maxOutputTokens === null) uncapped.push(notice.reservation);
    calls.set(notice.reservation, {
      chain: chainOf(notice.session),
      input: notice.tokens - (notice.maxOutputTokens ?? 0),
      err: 0,
      closed: false,
    });
    afterGrants.push([...calls].filter(([, seen]) => !seen.closed).map(([id]) => id));
  });
  const close = (id: string) => {
    const seen = calls.get(id);
    if (seen) seen.closed = true;
  };
  const tracked: ResourceManager = {
    ...manager,
    settle(grant, usage) {
      const seen = calls.get(grant.id);
      if (seen && !seen.closed) seen.err = Math.max(0, usage.input - seen.input);
      close(grant.id);
      return manager.settle(grant, usage);
    },
    release(grant) {
      close(grant.id);
      return manager.release(grant);
    },
  };
  /** The bound of the scope's budget (in tokens of input error: multiply by the input price for USD). */
  const allowance = (scope: string): number => {
    let most = 0;
    for (const inFlight of afterGrants) {
      let sum = 0;
      for (const id of inFlight) {
        const seen = calls.get(id);
        if (seen?.chain.includes(scope)) sum += seen.err;
      }
      most = Math.max(most, sum);
    }
    return most;
  };
  return { tracked, allowance, calls, uncapped };
}

describe('budget guarantee (random parallel and nested runs)', () => {
  it('no budget is passed by more than the input-estimate errors of the calls in flight after its last grant', async () => {
    await fc.assert(
      fc.asyncProperty(worldArb, async (world) => {
        const manager = createResourceManager({ prices, budgets: { tenants: { acme: world.tenant } } });
        const { tracked, allowance, calls, uncapped } = observe(manager);
        const results = await Promise.all(
          world.runs.map((spec, i) =>
            run(agentsOf(spec, i), 'start', {
              resources: tracked,
              tenant: 'acme',
              sessionId: `run-${i}`,
              ...(spec.budget ? { budget: spec.budget } : {}),
            }),
          ),
        );
        // A run ends within its budget: completed, or stopped by it, or by a turn its budget's cap cut short.
        for (const result of results) {
          if (result.stopReason === 'error') expect(result.error?.message).toMatch(/max_tokens/);
          else expect(['completed', 'budget_exhausted']).toContain(result.stopReason);
        }
        const budgets: { scope: string; usage: ReturnType<ResourceManager['usage']>['session'] }[] = [
          { scope: 'tenant:acme', usage: manager.usage({ tenant: 'acme' }).tenant },
          ...world.runs.map((_, i) => ({
            scope: `session:run-${i}`,
            usage: manager.usage({ session: `run-${i}` }).session,
          })),
        ];
        for (const { scope, usage } of budgets) {
          expect(usage, scope).not.toBeNull();
          if (!usage) continue;
          const extra = allowance(scope);
          if (usage.tokensLimit !== null)
            expect(usage.spentTokens, scope).toBeLessThanOrEqual(usage.tokensLimit + extra);
          if (usage.usdLimit !== null)
            expect(usage.spentUsd, scope).toBeLessThanOrEqual(
              usage.usdLimit + extra * usdPerInputToken + 1e-12,
            );
          expect(usage.reservedTokens, scope).toBe(0);
        }
        // Every call the model answered was granted and then settled or released.
        for (const seen of calls.values()) expect(seen.closed).toBe(true);
        expect(uncapped).toEqual([]);
        expect(calls.size).toBeGreaterThan(0);
        manager.stop();
      }),
      { numRuns },
    );
  });
});
