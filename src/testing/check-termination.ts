import { AssertionError } from 'node:assert';
import type { Agent } from '../agent/define-agent.ts';
import type { ApprovalHandler } from '../core/approvals.ts';
import type { Message, RunInput } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';
import type { StopReason } from '../core/stop-reason.ts';
import type { RunOptions } from '../run/run.ts';
import { run } from '../sessions/run.ts';
import { agentVariant, type ToolStubs } from './agent-variant.ts';
import { arbitraryModelTurns, type ModelTurnsOptions } from './arbitrary-turns.ts';
import { fastCheck } from './fast-check.ts';
import type { Arbitrary } from './fast-check-types.ts';
import { formatScript } from './format-script.ts';
import { runInvariantViolations } from './run-invariants.ts';
import { type ScriptedTurn, scriptedModel } from './scripted-model.ts';

export interface TerminationOptions
  extends Pick<ModelTurnsOptions, 'maxTurns' | 'weights' | 'errorKinds' | 'maxDelayMs'> {
  /** Scripts tried. Default 50. */
  numRuns?: number | undefined;
  /** fast-check's seed, and the path of a failure it reported, to replay exactly that failure. */
  seed?: number | undefined;
  path?: string | undefined;
  /** What each run is asked. Default 'Go.' */
  input?: RunInput | undefined;
  /** Earlier conversation for each run; it must come back untouched. */
  history?: readonly Message[] | undefined;
  /**
   * The agent's tools run for real by default. `'all'` answers every call with "ok" instead; a record replaces
   * the tools it names (for tools that touch the network, a database, money).
   */
  stubTools?: ToolStubs | 'all' | undefined;
  /** Scripts to try instead of `arbitraryModelTurns` built from the agent's tools and schema. */
  turns?: Arbitrary<ScriptedTurn[]> | undefined;
  /** Decides calls that wait for a person. Default: approve every call, answer every question "yes". */
  onApproval?: ApprovalHandler | undefined;
  /** Your own invariant, checked after the built-in ones: return a string (or throw) saying what is wrong. */
  invariant?: ((result: RunResult<unknown>, script: readonly ScriptedTurn[]) => unknown) | undefined;
}

/** How a successful check went: how many scripts ran, and how their runs ended. */
export interface TerminationReport {
  numRuns: number;
  stopReasons: Partial<Record<StopReason, number>>;
}

/** A run broke an invariant; the message shows the smallest script fast-check found that does it. */
export class TerminationCheckError extends AssertionError {
  /** The shrunk script: pass it to `scriptedModel` to reproduce the run. */
  readonly script: readonly ScriptedTurn[];
  readonly violations: readonly string[];
  readonly seed: number;
  readonly path: string | null;
  constructor(
    agent: string,
    details: {
      script: readonly ScriptedTurn[];
      violations: readonly string[];
      seed: number;
      path: string | null;
      numRuns: number;
      numShrinks: number;
    },
  ) {
    super({
      message:
        `checkTermination(${JSON.stringify(agent)}): a run broke its invariants (found after ${details.numRuns} script(s), shrunk ${details.numShrinks} time(s)).\n` +
        `Smallest failing model script:\n${formatScript(details.script)}\n` +
        `What went wrong:\n${details.violations.map((line) => `  - ${line}`).join('\n')}\n` +
        `Replay it with checkTermination(agent, { seed: ${details.seed}${details.path === null ? '' : `, path: ${JSON.stringify(details.path)}`} }), or scriptedModel(error.script).`,
      operator: 'checkTermination',
    });
    this.script = details.script;
    this.violations = details.violations;
    this.seed = details.seed;
    this.path = details.path;
  }
}

class InvariantBroken extends Error {
  constructor(readonly violations: string[]) {
    super(violations.join('; '));
  }
}

const approveEverything: ApprovalHandler = (request) =>
  request.kind === 'question' ? { type: 'answer', text: 'yes' } : { type: 'approve' };

/**
 * Property-based check of your own agent: fast-check generates model scripts (valid and invalid tool calls built
 * from your tools' schemas, repeats, refusals, truncations, provider errors, delays, empty answers), runs your
 * agent on each with its real tools (or stubs) and limits, and checks that every run ends with a stop reason from
 * the closed set, with the matching status, within `maxSteps + maxDecodeRetries + 1` model calls, with a valid
 * history that starts with the caller's untouched one, within its per-tool call cap, with a decoded output when it
 * completed with a schema, and with nothing left running. Resolves with a report; rejects with a
 * `TerminationCheckError` showing the smallest failing script. Handoff tools are not called by the scripts.
 */
export async function checkTermination(
  agent: Agent<unknown>,
  options: TerminationOptions = {},
): Promise<TerminationReport> {
  const fc = fastCheck('checkTermination()');
  const handoffs = agent.handoffTools;
  const turns =
    options.turns ??
    arbitraryModelTurns({
      tools: agent.tools.specs().filter((spec) => !Object.hasOwn(handoffs, spec.name)),
      output: agent.outputSpec?.schema,
      maxTurns: options.maxTurns,
      weights: options.weights,
      errorKinds: options.errorKinds,
      maxDelayMs: options.maxDelayMs,
    });
  const stopReasons: Partial<Record<StopReason, number>> = {};
  const property = fc.asyncProperty(turns, async (script) => {
    const model = scriptedModel(script);
    const history = options.history ?? [];
    const historyBefore = structuredClone(history);
    const runOptions: RunOptions = { history, onApproval: options.onApproval ?? approveEverything };
    const result = await run(
      agentVariant(agent, model, options.stubTools),
      options.input ?? 'Go.',
      runOptions,
    );
    stopReasons[result.stopReason] = (stopReasons[result.stopReason] ?? 0) + 1;
    const violations = runInvariantViolations(result, {
      limits: agent.limits,
      modelCalls: model.calls,
      history,
      historyBefore,
      hasOutputSchema: agent.outputSchema !== undefined && agent.handoffs.length === 0,
    });
    if (options.invariant) {
      try {
        const own = options.invariant(result, script);
        if (typeof own === 'string') violations.push(own);
      } catch (error) {
        violations.push(error instanceof Error ? error.message : String(error));
      }
    }
    if (violations.length > 0) throw new InvariantBroken(violations);
  });
  const parameters: { numRuns: number; seed?: number; path?: string } = { numRuns: options.numRuns ?? 50 };
  if (options.seed !== undefined) parameters.seed = options.seed;
  if (options.path !== undefined) parameters.path = options.path;
  const details = await fc.check(property, parameters);
  if (!details.failed) return { numRuns: details.numRuns, stopReasons };
  const error = details.errorInstance;
  const violations =
    error instanceof InvariantBroken
      ? error.violations
      : [`the run threw: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`];
  throw new TerminationCheckError(agent.name, {
    script: details.counterexample?.[0] ?? [],
    violations,
    seed: details.seed,
    path: details.counterexamplePath,
    numRuns: details.numRuns,
    numShrinks: details.numShrinks,
  });
}
