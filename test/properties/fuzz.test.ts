import fc from 'fast-check';
import { activeRuntimeCount } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { execute } from '../../bench/fuzz/execute.ts';
import { regressions } from '../../bench/fuzz/regressions.ts';
import { scenarios, testProfile } from '../../bench/fuzz/scenario.ts';

/**
 * The fuzz harness (bench/fuzz, run at 100,000 cases from the command line) in small: random model behaviours
 * (tool calls with duplicate, empty, "0", missing and reused ids, unknown and prototype-named tools, bad and deep
 * arguments, refusals, max_tokens, errors, malformed responses, delays, deltas), agents (tools, output schemas,
 * handoffs, agents as tools, limits), inputs and histories (valid, invalid, passed back), and options (budgets,
 * aborts, timeouts) through run(), stream() and sessions of several turns. Every case must end with typed results,
 * valid histories whose tool-call ids are unique and answered once, events in order, no secret shown, and bad input
 * refused with a typed error before anything ran. Cases run eight at a time, as a server would run them.
 */

const numRuns = process.env.CI ? 400 : 300;

describe('fuzz: the public API keeps its promises', () => {
  it.each(regressions)('a case that once broke one keeps them: $what', async ({ scenario }) => {
    const before = activeRuntimeCount();
    const outcome = await execute(scenario, { watchdogMs: 5_000, avoidKnownBugs: true });
    expect(outcome.problems).toEqual([]);
    expect(outcome.unexpectedRejections).toEqual([]);
    expect(activeRuntimeCount()).toBe(before);
  });

  it('every case ends with typed results and valid, unique-id histories', async () => {
    const before = activeRuntimeCount();
    await fc.assert(
      fc.asyncProperty(fc.array(scenarios(testProfile), { minLength: 8, maxLength: 8 }), async (batch) => {
        const outcomes = await Promise.all(
          batch.map((scenario) => execute(scenario, { watchdogMs: 5_000, avoidKnownBugs: true })),
        );
        expect(outcomes.flatMap((outcome) => outcome.problems)).toEqual([]);
        // Input the scenario did not make bad is never refused: a refusal there means the harness stopped reaching
        // what it fuzzes (a renamed option refuses every session before its first turn).
        expect(outcomes.flatMap((outcome) => outcome.unexpectedRejections)).toEqual([]);
      }),
      // A failing batch is reported as found, with its problems and seed: shrinking re-runs batches whose hangs wait
      // for the watchdog each time, which would outlast the test's timeout and hide what failed.
      { numRuns, endOnFailure: true },
    );
    expect(activeRuntimeCount()).toBe(before);
  }, 120_000);
});
