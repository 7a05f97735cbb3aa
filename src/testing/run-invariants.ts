import { findHistoryIssues } from '../core/history.ts';
import type { ResolvedLimits } from '../core/limits.ts';
import type { Message } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';
import { statusOf, stopReasons } from '../core/stop-reason.ts';
import { activeRuntimeCount } from '../run/run-runtime.ts';

/** What a run's invariants are checked against: the agent's limits and what the test knows about the run. */
export interface RunInvariantContext {
  /** The limits the run was started with (`agent.limits`). */
  limits: ResolvedLimits;
  /** How many times the model was called (a scripted model's `calls`). */
  modelCalls: number;
  /** The history passed to the run; it must come back untouched, at the start of `result.history`. */
  history?: readonly Message[] | undefined;
  /** A copy of `history` taken before the run, to prove the caller's array was not changed. */
  historyBefore?: readonly Message[] | undefined;
  /** Whether the agent has an output schema: a completed run must then carry a decoded `output`. */
  hasOutputSchema?: boolean | undefined;
  /** Also require that no run is still active in this process (true for a run awaited on its own). */
  checkNoActiveRuns?: boolean | undefined;
}

/**
 * The invariants every run must keep, whatever the model and the tools did: a stop reason from the closed set and
 * the status that goes with it, at most `maxSteps + maxDecodeRetries + 1` model calls (all counted in
 * `modelCalls`), a valid history (every tool call answered exactly once) that starts with the caller's own,
 * unchanged, no tool run more often than `maxToolCallsPerTool`, a decoded output when a run with a schema
 * completed, and nothing left running. Returns one readable sentence per broken invariant; none when all hold.
 */
export function runInvariantViolations(result: RunResult<unknown>, context: RunInvariantContext): string[] {
  const problems: string[] = [];
  const { limits, modelCalls } = context;
  if (!stopReasons.includes(result.stopReason))
    problems.push(`stop reason ${JSON.stringify(result.stopReason)} is not one of ${stopReasons.join(', ')}`);
  else if (result.status !== statusOf(result.stopReason))
    problems.push(
      `status is "${result.status}" but stop reason "${result.stopReason}" means "${statusOf(result.stopReason)}"`,
    );
  const bound = limits.maxSteps + limits.maxDecodeRetries + 1;
  if (modelCalls > bound)
    problems.push(
      `the model was called ${modelCalls} times, more than maxSteps ${limits.maxSteps} + maxDecodeRetries ${limits.maxDecodeRetries} + 1 = ${bound}`,
    );
  if (result.modelCalls !== modelCalls)
    problems.push(`modelCalls is ${result.modelCalls} but the model was called ${modelCalls} times`);
  const issues = findHistoryIssues(result.history);
  if (issues.length > 0)
    problems.push(
      `the history is invalid: ${issues.map((issue) => `[${issue.index}] ${issue.message}`).join('; ')}`,
    );
  const history = context.history ?? [];
  if (
    context.historyBefore !== undefined &&
    JSON.stringify(history) !== JSON.stringify(context.historyBefore)
  )
    problems.push("the caller's history array was changed");
  if (JSON.stringify(result.history) !== JSON.stringify([...history, ...result.historyDelta]))
    problems.push("result.history is not the caller's history followed by result.historyDelta");
  if (result.stopReason === 'completed' && context.hasOutputSchema === true && result.output === undefined)
    problems.push('the run completed but has no decoded output, though the agent has an output schema');
  if (limits.maxToolCallsPerTool !== null) {
    const counts = new Map<string, number>();
    for (const step of result.steps)
      for (const call of step.toolCalls) {
        // Calls a policy refused are answered "Not run: ..."; the cap bounds the ones that were handled.
        if (!call.result?.startsWith('Not run:')) counts.set(call.name, (counts.get(call.name) ?? 0) + 1);
      }
    for (const [name, count] of counts)
      if (count > limits.maxToolCallsPerTool)
        problems.push(
          `tool "${name}" was handled ${count} times, more than maxToolCallsPerTool ${limits.maxToolCallsPerTool}`,
        );
  }
  if (context.checkNoActiveRuns === true && activeRuntimeCount() !== 0)
    problems.push(`${activeRuntimeCount()} run(s) were still active after the run ended`);
  return problems;
}
