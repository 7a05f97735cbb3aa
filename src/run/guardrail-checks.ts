import type { Clock } from '../core/clock.ts';
import type { RunEventData } from '../core/events.ts';
import type { GuardrailBlock } from '../core/guardrail-block.ts';
import type { Guardrail, GuardrailCheckInfo } from '../guardrails/guardrail.ts';
import { failedVerdict, type GuardrailVerdict, verdictOf } from '../guardrails/verdict.ts';
import type { RunContextInfo } from './run-context.ts';
import { bindCaller, type RunRuntime } from './run-runtime.ts';

/** Where a check runs: what its info says, how its decisions are reported, the clock its timeouts use. */
export interface GuardrailPlace {
  stage: GuardrailCheckInfo['stage'];
  /** The run's context and place, as checks read them. */
  run: RunContextInfo;
  /** The run that checks: a judge run finds its caller (and its budget) through it. */
  caller: RunRuntime;
  clock: Clock;
  /** Reports one decision as a `guardrail` event; absent when nobody listens. */
  emit?: ((data: RunEventData['guardrail']) => void) | undefined;
  partial?: boolean;
  tool?: string;
  callId?: string;
}

type Outcome = GuardrailBlock | null;

/**
 * Runs `guardrails` on one value and returns the first block (null when every check allowed or warned). Every
 * decision is reported. Checks run side by side; a block aborts the checks still running. A check that throws,
 * rejects, times out or returns something that is no verdict decides its `onError` (block, by default: fail
 * closed). When every check answers synchronously the outcome is synchronous too: no promise, timer or listener
 * on the path of a plain check. An abort of `signal` (the run ended) settles the outcome as null; nobody reads it.
 */
export function checkGuardrails(
  guardrails: readonly Guardrail[],
  value: unknown,
  text: string,
  place: GuardrailPlace,
  signal: AbortSignal,
): Outcome | Promise<Outcome> {
  const controller = new AbortController();
  const { run } = place;
  const info: GuardrailCheckInfo = {
    context: run.context,
    sessionId: run.sessionId,
    agent: run.agent,
    route: run.route,
    turn: run.turn,
    stage: place.stage,
    text,
    signal: controller.signal,
    partial: place.partial ?? false,
  };
  if (place.tool !== undefined) info.tool = place.tool;
  if (place.callId !== undefined) info.callId = place.callId;
  bindCaller(info, place.caller);
  let waiting: { guardrail: Guardrail; result: Promise<unknown> }[] | undefined;
  for (const guardrail of guardrails) {
    let result: unknown;
    try {
      result = guardrail.check(value, info);
    } catch (error) {
      result = failure(guardrail, error);
    }
    if (result instanceof Promise) {
      waiting ??= [];
      waiting.push({ guardrail, result });
      continue;
    }
    const block = settle(guardrail, result, place);
    if (block) {
      controller.abort(blockedReason);
      // Checks already waited on are not wanted any more; their failures must not go unhandled.
      for (const entry of waiting ?? []) entry.result.catch(ignore);
      return block;
    }
  }
  if (!waiting) return null;
  return awaitChecks(waiting, place, signal, controller);
}

const blockedReason = new Error('Another guardrail blocked; this check is no longer needed.');

function awaitChecks(
  waiting: { guardrail: Guardrail; result: Promise<unknown> }[],
  place: GuardrailPlace,
  signal: AbortSignal,
  controller: AbortController,
): Promise<Outcome> {
  return new Promise<Outcome>((resolve) => {
    let open = waiting.length;
    let done = false;
    const timers: unknown[] = [];
    const finish = (outcome: Outcome) => {
      if (done) return;
      done = true;
      for (const timer of timers) place.clock.clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      if (outcome !== null || signal.aborted)
        controller.abort(signal.aborted ? signal.reason : blockedReason);
      resolve(outcome);
    };
    const onAbort = () => finish(null);
    for (const { guardrail, result } of waiting) {
      let answered = false;
      const answer = (verdict: unknown) => {
        if (answered || done) return;
        answered = true;
        const block = settle(guardrail, verdict, place);
        if (block) finish(block);
        else if (--open === 0) finish(null);
      };
      if (guardrail.timeoutMs !== null) {
        const ms = guardrail.timeoutMs;
        timers.push(
          place.clock.setTimeout(
            () => answer(failedVerdict(guardrail.onError, `the check did not answer within ${ms} ms`)),
            ms,
          ),
        );
      }
      result.then(answer, (error: unknown) => answer(failure(guardrail, error)));
    }
    if (signal.aborted) finish(null);
    else if (!done) signal.addEventListener('abort', onAbort, { once: true });
  });
}

function ignore(): void {}

/** The verdict of a check that threw or rejected. */
function failure(guardrail: Guardrail, error: unknown): GuardrailVerdict {
  return failedVerdict(
    guardrail.onError,
    `the check failed: ${error instanceof Error ? error.message : String(error)}`,
  );
}

/** Reports a check's decision and returns the block it makes, if it blocks. */
function settle(guardrail: Guardrail, result: unknown, place: GuardrailPlace): Outcome {
  const verdict =
    verdictOf(result) ??
    failedVerdict(guardrail.onError, 'the check returned no verdict ({ decision: allow | warn | block })');
  if (place.emit) {
    const data: RunEventData['guardrail'] = {
      guardrail: guardrail.name,
      stage: place.stage,
      decision: verdict.decision,
    };
    if (verdict.message !== undefined) data.message = verdict.message;
    if (place.callId !== undefined) data.callId = place.callId;
    if (place.tool !== undefined) data.tool = place.tool;
    place.emit(data);
  }
  if (verdict.decision !== 'block') return null;
  const block: GuardrailBlock = {
    name: guardrail.name,
    stage: place.stage,
    message: verdict.message ?? 'blocked',
  };
  if (place.tool !== undefined) block.tool = place.tool;
  if (place.callId !== undefined) block.callId = place.callId;
  return block;
}
