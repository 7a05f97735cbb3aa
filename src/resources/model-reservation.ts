import { onAbort } from '../core/abort.ts';
import { ModelError } from '../core/errors.ts';
import type { ModelRequest } from '../core/model.ts';
import type { Usage } from '../core/usage.ts';
import { estimateRequest } from './resource-binding.ts';
import {
  type Grant,
  type ReservationOutcome,
  type ResourceManager,
  reserveAtOnce,
} from './resource-manager.ts';

type Denial = Extract<ReservationOutcome, { granted: false }>;

/** A model call's reservation: granted (with the request to send), or refused before anything was spent. */
export type ModelReservation =
  | {
      granted: true;
      grant: Grant;
      /** The request to send: the one given, its `settings.maxOutputTokens` lowered to the grant's cap. */
      request: ModelRequest;
      /** Records the call's usage (the reservation's remainder goes back). */
      settle(usage: Usage): void;
      /** The call failed: its reservation goes back, and a 429 paces the next calls to the model. */
      fail(error: unknown): void;
    }
  | { granted: false; denial: Denial };

/**
 * Reserves a model call on a run's budgets before it is made: an estimate of its prompt, and the output the manager
 * lets it write. Under a budget that output is capped at what every budget in scope has left (the run, the turn,
 * the calling runs of a nested agent, the tenant) after their spend, the calls in flight and this prompt, and the
 * cap goes into the request as `settings.maxOutputTokens`, which every provider sends as its output limit; so the
 * call cannot spend past a budget except by what its prompt was under-estimated. A call for which not even a minimal
 * output is left is refused (`budget_exhausted`); one that only the calls in flight hold back waits for them.
 *
 * Aborting `signal` ends a wait; a grant that arrives after the abort goes back at once (the denial says `aborted`).
 * A granted call whose `signal` aborts before it is settled gives its reservation back then: its run no longer
 * waits for the answer, and a provider that ignores the abort and never answers would otherwise hold that budget
 * for good, and with it every call that draws on the same scope (the caller of a sub-agent, the session's next
 * turn). An answer that still comes after the abort is not counted, as when the run's own scope has closed.
 */
export function reserveModelCall(
  manager: ResourceManager,
  scope: string,
  request: ModelRequest,
  model: { provider: string; model: string },
  signal: AbortSignal,
): ModelReservation | Promise<ModelReservation> {
  const outcome = reserveCall(manager, scope, request, model, signal);
  // Usually decided at once: then the call pays no promise for its reservation.
  if (!(outcome instanceof Promise)) return reservationOf(manager, scope, request, model, signal, outcome);
  return outcome.then((answered) => reservationOf(manager, scope, request, model, signal, answered));
}

/**
 * The manager's answer to a model call's reservation as it comes (see `reserveModelCall`, which wraps it): for a
 * caller that settles or returns the grant itself (`outputCapOf`, `returnFailedGrant`).
 */
export function reserveCall(
  manager: ResourceManager,
  scope: string,
  request: ModelRequest,
  model: { provider: string; model: string },
  signal: AbortSignal,
): ReservationOutcome | Promise<ReservationOutcome> {
  const { provider, model: name } = model;
  const estimate = estimateRequest(request, manager.expectedOutput(scope, provider, name));
  const asked = request.settings?.maxOutputTokens;
  return reserveAtOnce(
    manager,
    asked !== undefined
      ? { session: scope, provider, model: name, estimate, maxOutputTokens: asked }
      : { session: scope, provider, model: name, estimate },
    signal,
  );
}

/** The `maxOutputTokens` a granted request must be sent with, or undefined when its own limit is within the grant. */
export function outputCapOf(request: ModelRequest, grant: Grant): number | undefined {
  const asked = request.settings?.maxOutputTokens;
  const cap = grant.maxOutputTokens;
  return cap === null || (asked !== undefined && asked <= cap) ? undefined : cap;
}

/** A granted call failed: its reservation goes back, and a 429 paces the next calls to the model. */
export function returnFailedGrant(
  manager: ResourceManager,
  grant: Grant,
  model: { provider: string; model: string },
  error: unknown,
): void {
  if (error instanceof ModelError && (error.kind === 'rate_limited' || error.status === 429)) {
    manager.report429({
      provider: model.provider,
      model: model.model,
      ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}),
    });
  }
  manager.release(grant);
}

function reservationOf(
  manager: ResourceManager,
  scope: string,
  request: ModelRequest,
  model: { provider: string; model: string },
  signal: AbortSignal,
  outcome: ReservationOutcome,
): ModelReservation {
  if (!outcome.granted) return { granted: false, denial: outcome };
  const grant = outcome.grant;
  if (signal.aborted) {
    manager.release(grant);
    return {
      granted: false,
      denial: { granted: false, reason: 'aborted', scope, message: 'The call was aborted.' },
    };
  }
  const cap = outputCapOf(request, grant);
  // One waiter on the signal's shared list (not a listener per call): it goes with the call's settlement.
  const abandoned = onAbort(signal, () => manager.release(grant));
  return {
    granted: true,
    grant,
    request:
      cap === undefined ? request : { ...request, settings: { ...request.settings, maxOutputTokens: cap } },
    settle: (usage) => {
      abandoned();
      manager.settle(grant, usage);
    },
    fail: (error) => {
      abandoned();
      returnFailedGrant(manager, grant, model, error);
    },
  };
}
