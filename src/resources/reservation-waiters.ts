import type { DenialReason } from './ledger.ts';
import type { OpenRun } from './open-run.ts';
import { sessionScope } from './scope-names.ts';

/** A call asking for a reservation: the request as given, and what it waits on. */
export interface ReservationRequest {
  /** The run (session id) the call belongs to; the run must have been opened with `openRun`. */
  session: string;
  provider: string;
  model: string;
  /** Estimated tokens: the prompt, and what the call is expected to write. */
  estimate: { input: number; output: number };
  /**
   * The most output tokens the call asks to write (its request's `maxOutputTokens`); the manager's
   * `maxOutputTokens` when absent. Under a budget the grant caps it further (`Grant.maxOutputTokens`).
   */
  maxOutputTokens?: number | undefined;
}

/** A granted reservation: settle it with the call's usage, or release it if the call did not happen. */
export interface Grant {
  readonly id: string;
  readonly session: string;
  readonly provider: string;
  readonly model: string;
  /** What the budgets hold for the call until it settles: its prompt's estimate plus its output cap. */
  readonly tokens: number;
  readonly usd: number | null;
  /**
   * The most output tokens the call may write: what its budgets have left after their spend, the calls in flight
   * and its prompt. Send the call with at most this `maxOutputTokens`. Null when no budget applies to the call.
   */
  readonly maxOutputTokens: number | null;
  readonly waitedMs: number;
}

export type ReservationOutcome =
  | { granted: true; grant: Grant }
  | { granted: false; reason: DenialReason | 'aborted' | 'stopped'; scope: string; message: string };

/** A call waiting for its answer. */
export interface Waiter {
  request: ReservationRequest;
  /** Set once the call waits: its promise's resolve. Until then an answer is kept in `outcome`. */
  resolve: ((outcome: ReservationOutcome) => void) | undefined;
  /** The answer given while the call was still being asked for (granted or denied at once). */
  outcome: ReservationOutcome | undefined;
  /** Stops listening for the call's abort. */
  detach: () => void;
  /** The call's run, as open when the call asked. */
  run: OpenRun | undefined;
}

/**
 * The manager's side of the calls still waiting for an answer, each a promise to resolve exactly once. (Whether a
 * grant is still outstanding, so that it is returned exactly once, is the ledger's to say: its reservation is
 * granted until settled or released.)
 */
export class ReservationWaiters {
  readonly #waiting = new Map<string, Waiter>();
  /**
   * The call being asked for, while its own request is decided: usually answered then (limits that do not bind),
   * so it is kept here, out of `#waiting`, which it joins only if it has to wait (see `asked`).
   */
  #askingId: string | undefined = undefined;
  #asking: Waiter | undefined = undefined;

  /**
   * Registers the call `id` before it is asked for. An answer given during the asking lands in the waiter's
   * `outcome`; once the caller sets `resolve` (the call waits), answers go there.
   */
  add(id: string, request: ReservationRequest, run: OpenRun | undefined): Waiter {
    const waiter: Waiter = { request, resolve: undefined, outcome: undefined, detach: noop, run };
    // A call asked for while another is being decided (from a notice's listener): the other one waits in the map.
    if (this.#asking !== undefined && this.#askingId !== undefined)
      this.#waiting.set(this.#askingId, this.#asking);
    this.#askingId = id;
    this.#asking = waiter;
    return waiter;
  }

  /** The request of the call `id` was decided: unanswered, the call waits. */
  asked(id: string): void {
    if (this.#askingId !== id) return;
    const waiter = this.#asking;
    this.#askingId = undefined;
    this.#asking = undefined;
    if (waiter !== undefined) this.#waiting.set(id, waiter);
  }

  /** The session of a waiting call. */
  sessionOf(id: string): string | undefined {
    return (this.#askingId === id ? this.#asking : this.#waiting.get(id))?.request.session;
  }

  /**
   * The call got its reservation: it resolves with a grant (outstanding until settled or released). Returns the call's waiter (undefined if it no longer waited).
   */
  grant(
    id: string,
    held: { tokens: number; usd: number | null; outputCap: number | null } | undefined,
    waitedMs: number,
  ): Waiter | undefined {
    const waiter = this.#take(id);
    if (!waiter) return undefined;
    const grant = new IssuedGrant(id, waiter.request, held, waitedMs, waiter.run);
    answer(waiter, { granted: true, grant });
    return waiter;
  }

  deny(id: string, reason: DenialReason, scope: string, message: string): void {
    const waiter = this.#take(id);
    if (waiter) answer(waiter, { granted: false, reason, scope, message });
  }

  /** The reservation went back: a waiting call ends aborted. */
  released(id: string): void {
    const waiter = this.#take(id);
    if (waiter)
      answer(waiter, {
        granted: false,
        reason: 'aborted',
        scope: sessionScope(waiter.request.session),
        message: 'The call was aborted while it waited for its quota or budget.',
      });
  }

  /** Every waiting call ends `stopped`, with `message` saying why. */
  stopAll(message = 'The resource manager was stopped.'): void {
    if (this.#askingId !== undefined) this.asked(this.#askingId);
    for (const id of [...this.#waiting.keys()]) {
      const waiter = this.#take(id);
      if (waiter)
        answer(waiter, {
          granted: false,
          reason: 'stopped',
          scope: sessionScope(waiter.request.session),
          message,
        });
    }
  }

  #take(id: string): Waiter | undefined {
    let waiter: Waiter | undefined;
    if (this.#askingId === id) {
      waiter = this.#asking;
      this.#askingId = undefined;
      this.#asking = undefined;
    } else {
      waiter = this.#waiting.get(id);
      if (!waiter) return undefined;
      this.#waiting.delete(id);
    }
    if (!waiter) return undefined;
    waiter.detach();
    return waiter;
  }
}

/**
 * A grant as the manager issues it: frozen, and carrying the run it was made for, so that settling it needs no
 * lookup of the run (a private field: not a property anyone sees or compares).
 */
class IssuedGrant implements Grant {
  readonly id: string;
  readonly session: string;
  readonly provider: string;
  readonly model: string;
  readonly tokens: number;
  readonly usd: number | null;
  readonly maxOutputTokens: number | null;
  readonly waitedMs: number;
  readonly #run: OpenRun | undefined;

  constructor(
    id: string,
    request: ReservationRequest,
    held: { tokens: number; usd: number | null; outputCap: number | null } | undefined,
    waitedMs: number,
    run: OpenRun | undefined,
  ) {
    this.id = id;
    this.session = request.session;
    this.provider = request.provider;
    this.model = request.model;
    this.tokens = held?.tokens ?? 0;
    this.usd = held?.usd ?? null;
    this.maxOutputTokens = held?.outputCap ?? null;
    this.waitedMs = waitedMs;
    this.#run = run;
    Object.freeze(this);
  }

  /** The run a grant issued by a manager was made for, while that run is still open; else undefined. */
  static openRunOf(grant: Grant): OpenRun | undefined {
    if (!(#run in grant)) return undefined;
    const run = grant.#run;
    return run?.open ? run : undefined;
  }
}

/** The run a grant was made for, while it is open (undefined for a grant made elsewhere): see IssuedGrant. */
export const openRunOf = IssuedGrant.openRunOf;

function answer(waiter: Waiter, outcome: ReservationOutcome): void {
  if (waiter.resolve) waiter.resolve(outcome);
  else waiter.outcome = outcome;
}

const noop = () => undefined;
