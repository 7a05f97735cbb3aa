import type { Arbitrary } from 'fast-check';
import { defineAgent, type RunResult, type StopReason } from 'troupe';
import {
  type AgentPath,
  agentPaths,
  agentVariant,
  arbitraryModelTurns,
  type CassetteModel,
  type CoverageReport,
  cassetteModel,
  checkTermination,
  expectRun,
  type PathExpectation,
  pathCoverage,
  type RunExpectation,
  type ScriptedTurn,
  scriptedModel,
  type TerminationReport,
} from 'troupe/testing';
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';

/** The public types of troupe/testing, as a user's test sees them (checked by `tsc`, which npm test runs). */

const Summary = z.object({ summary: z.string() });
const agent = defineAgent({ name: 'typed', instructions: '', model: scriptedModel([]), output: Summary });
type Summary = z.output<typeof Summary>;

describe('troupe/testing types', () => {
  it('keep the output type of the agent through paths, variants and assertions', () => {
    expectTypeOf(agentPaths(agent)).toEqualTypeOf<AgentPath<Summary>[]>();
    expectTypeOf<AgentPath<Summary>['run']>().returns.resolves.toEqualTypeOf<RunResult<Summary>>();
    expectTypeOf<PathExpectation['stopReason']>().toEqualTypeOf<StopReason>();
    expectTypeOf(agentVariant(agent, scriptedModel([]))).toEqualTypeOf(agent);
    expectTypeOf(expectRun({} as RunResult<Summary>).toEndWith).returns.toEqualTypeOf<
      RunExpectation<Summary>
    >();
  });

  it('give fast-check arbitraries and typed reports', () => {
    expectTypeOf(arbitraryModelTurns()).toEqualTypeOf<Arbitrary<ScriptedTurn[]>>();
    expectTypeOf(checkTermination).returns.resolves.toEqualTypeOf<TerminationReport>();
    expectTypeOf(pathCoverage().report()).toEqualTypeOf<CoverageReport>();
    expectTypeOf(cassetteModel).returns.toEqualTypeOf<CassetteModel>();
    // Stop reasons a check sees are the closed set.
    expectTypeOf<keyof TerminationReport['stopReasons']>().toEqualTypeOf<StopReason>();
  });
});
