import type { AnyActorRef, SnapshotFrom } from 'xstate';
import {
  type ApprovalDecision,
  type ApprovalRecord,
  type ApprovalRequest,
  whyNotWaiting,
  withdrawnRecord,
} from '../core/approvals.ts';
import type { Clock } from '../core/clock.ts';
import { ConfigError } from '../core/errors.ts';
import type { EventBus } from '../core/event-bus.ts';
import type { AgentMachine } from '../machines/agent.ts';
import { isMemoryStore } from '../persistence/memory-store.ts';
import type { MaybePromise, SessionStore } from '../persistence/store.ts';
import { ApprovalError } from './approval-error.ts';
import { committed, type SessionDurability } from './session-durability.ts';

/**
 * A session's tool calls that wait for people. A decision is committed to the store first, then sent to the agent
 * that waits for it (found by its route). Decisions other processes commit to the same store are picked up by
 * polling while something waits, and decisions taken while the session was down reach the agent as soon as it is
 * back in its waiting state.
 */
export class SessionApprovals {
  readonly #sessionId: string;
  readonly #durability: SessionDurability;
  readonly #store: SessionStore;
  readonly #bus: EventBus;
  readonly #clock: Clock;
  /** The agents of the session by route: the one holding the conversation and nested ones. */
  readonly #routes: ReadonlyMap<string, AnyActorRef>;
  readonly #baseDepth: number;
  readonly #pollMs: number;
  #pollTimer: unknown;
  #stopped = false;
  /** Set while the session suspends: the questions it asked stay pending, for the calls a recovery sends again. */
  #keepAsked = false;
  /** Questions asked while a tool runs (see ask()), by call id; a durable store also keeps their records. */
  readonly #asked = new Map<
    string,
    {
      request: ApprovalRequest;
      check: ((decision: ApprovalDecision) => string | undefined) | undefined;
      settle: (decision: ApprovalDecision) => void;
    }
  >();

  constructor(options: {
    sessionId: string;
    durability: SessionDurability;
    store: SessionStore;
    bus: EventBus;
    clock: Clock;
    routes: ReadonlyMap<string, AnyActorRef>;
    /** How many `>` the routes of this session's own agents hold (a session placed in a caller's). */
    baseDepth?: number;
    pollMs: number;
  }) {
    this.#sessionId = options.sessionId;
    this.#durability = options.durability;
    this.#store = options.store;
    this.#bus = options.bus;
    this.#clock = options.clock;
    this.#routes = options.routes;
    this.#baseDepth = options.baseDepth ?? 0;
    this.#pollMs = options.pollMs;
  }

  /** Whether some call waits for a decision. */
  get waiting(): boolean {
    return this.#asked.size > 0 || this.#durability.pendingApprovals().length > 0;
  }

  /** The requests that wait, as a person sees them. */
  pending(): ApprovalRequest[] {
    return this.#durability
      .pendingApprovals()
      .filter((record) => !this.#asked.has(record.callId))
      .map(({ status: _status, decision: _decision, decidedAt: _decidedAt, ...request }) => request)
      .concat([...this.#asked.values()].map((asked) => asked.request));
  }

  /**
   * Asks a person while a tool runs (an MCP server's elicitation): the request is pending in the session
   * (`pendingApprovals()`, the `approval_requested` event) until `answer()` or `reject()` decides it, and resolves
   * with the decision; `check` refuses a decision that does not fit (an ApprovalError with its reason, the request
   * staying pending). A store that outlives the process keeps the request as a pending approval record: another
   * process sees and decides it, and after a restart the same request asked again (the tool call sent again) gets
   * the stored decision, or waits for it. Aborting `signal` withdraws the request (rejects with the abort): its
   * stored record is withdrawn too, unless the session is suspending (keepForRecovery()), when it stays pending for
   * the call a recovered session sends again.
   */
  ask(
    request: ApprovalRequest,
    signal: AbortSignal,
    check?: (decision: ApprovalDecision) => string | undefined,
  ): Promise<ApprovalDecision> {
    const durable = !isMemoryStore(this.#store);
    const stored = this.#durability.approval(request.callId);
    if (this.#asked.has(request.callId) || (stored !== undefined && !durable))
      return Promise.reject(
        new ApprovalError(this.#sessionId, request.callId, 'a request with this id already waits'),
      );
    if (signal.aborted) return Promise.reject(signal.reason);
    // Decided before this process asked again (by a person, here or in another process): the decision answers.
    if (stored?.decision !== undefined) return Promise.resolve(fitting(stored.decision, check));
    return new Promise<ApprovalDecision>((resolve, reject) => {
      const onAbort = () => {
        this.#asked.delete(request.callId);
        if (!this.#keepAsked) this.#withdrawStored(request.callId);
        reject(signal.reason);
      };
      this.#asked.set(request.callId, {
        request,
        check,
        settle: (decision) => {
          signal.removeEventListener('abort', onAbort);
          this.#asked.delete(request.callId);
          resolve(decision);
        },
      });
      signal.addEventListener('abort', onAbort, { once: true });
      const announce = () => {
        if (this.#asked.has(request.callId))
          this.#bus.emit(request.agent, 'approval_requested', request, this.#placeOf(request.route));
      };
      // Asked again after a restart: the request was announced by the process that first asked.
      if (stored !== undefined || !durable) return stored === undefined ? announce() : undefined;
      const failed = (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        this.#asked.delete(request.callId);
        reject(error);
      };
      try {
        const committed = this.#durability.commit({ approvals: [{ ...request, status: 'pending' }] });
        if (committed instanceof Promise) committed.then(announce, failed);
        else announce();
      } catch (error) {
        failed(error);
      }
    });
  }

  /**
   * The session suspends: the questions asked while its tools run stay pending in the store when their calls are
   * aborted, for the calls a recovered session sends again.
   */
  keepForRecovery(): void {
    this.#keepAsked = true;
  }

  /**
   * Withdraws every request of the session that still waits, with `reason` (the turn that asked ended), each
   * announced with `approval_decided`; returns the records for the caller to commit with the turn's end.
   */
  withdrawPending(reason: string): ApprovalRecord[] {
    const withdrawn = this.#durability.withdrawPending(reason);
    for (const record of withdrawn) this.#announceWithdrawn(record);
    return withdrawn;
  }

  /** A question's call ended while it waited: its stored record, if still pending, is withdrawn and committed. */
  #withdrawStored(callId: string): void {
    const record = this.#durability.approval(callId);
    if (record?.status !== 'pending') return;
    const withdrawn = withdrawnRecord(
      record,
      'the tool call that asked ended before a decision',
      this.#clock.now(),
    );
    this.#announceWithdrawn(withdrawn);
    // A store that fails here leaves the record pending: the turn's end withdraws it again.
    try {
      const result = this.#durability.commit({ approvals: [withdrawn] });
      if (result instanceof Promise) result.catch(() => undefined);
    } catch {
      // As above.
    }
  }

  #announceWithdrawn(record: ApprovalRecord): void {
    if (record.decision === undefined) return;
    this.#bus.emit(
      record.agent,
      'approval_decided',
      { callId: record.callId, tool: record.tool, decision: record.decision },
      this.#placeOf(record.route),
    );
  }

  /** Where an agent of the session sits, for its events: a nested agent one level deeper per `>`. */
  #placeOf(route: string): { route: string; depth: number } {
    return { route, depth: route.split('>').length - 1 - this.#baseDepth };
  }

  /** Checks a decision, commits it, then hands it to the agent. Rejects with ApprovalError if it does not fit. */
  decide(callId: string, decision: ApprovalDecision): Promise<void> {
    if (typeof callId !== 'string') return Promise.reject(new ConfigError('callId must be a string.'));
    const asked = this.#asked.get(callId);
    if (asked !== undefined) {
      const refusal = asked.check?.(decision);
      if (refusal !== undefined) return Promise.reject(new ApprovalError(this.#sessionId, callId, refusal));
      const { request } = asked;
      const settle = () => {
        this.#bus.emit(
          request.agent,
          'approval_decided',
          { callId, tool: request.tool, decision },
          this.#placeOf(request.route),
        );
        asked.settle(decision);
      };
      // A stored request: the decision is committed before the tool hears of it.
      if (this.#durability.approval(callId)?.status !== 'pending') {
        settle();
        return Promise.resolve();
      }
      return committed(() => this.#durability.decide(callId, decision)).then(settle);
    }
    const record = this.#durability.approval(callId);
    const refusal =
      record?.status !== 'pending'
        ? whyNotWaiting(record)
        : decision.type === 'answer' && record.kind !== 'question'
          ? 'it waits for an approval, not an answer: use approve() or reject()'
          : decision.type === 'approve' && record.kind === 'question'
            ? 'it is a question: use answer() or reject()'
            : undefined;
    if (refusal !== undefined) return Promise.reject(new ApprovalError(this.#sessionId, callId, refusal));
    return new Promise<void>((resolve, reject) => {
      let committed: MaybePromise<void>;
      try {
        committed = this.#durability.decide(callId, decision);
      } catch (error) {
        reject(error);
        return;
      }
      const apply = () => {
        this.applyStored();
        resolve();
      };
      if (committed instanceof Promise) committed.then(apply, reject);
      else apply();
    });
  }

  /** Sends every committed decision to the agent that still waits for it. */
  applyStored(): void {
    for (const [route, child] of this.#routes) {
      const state = (child.getSnapshot() as SnapshotFrom<AgentMachine>).context.approvals;
      if (!state) continue;
      for (const pending of state.pending) {
        if (state.decided.some((entry) => entry.callId === pending.callId)) continue;
        const record = this.#durability.approval(pending.callId);
        if (!record?.decision || record.route !== route) continue;
        this.#bus.emit(
          record.agent,
          'approval_decided',
          { callId: record.callId, tool: record.tool, decision: record.decision },
          // A nested agent's route is `caller>callId/name`: one level deeper per `>`.
          { route, depth: route.split('>').length - 1 - this.#baseDepth },
        );
        child.send({ type: 'approval.decided', callId: record.callId, decision: record.decision });
      }
    }
  }

  /** Takes the decisions another process committed for this session's waiting calls. */
  adopt(records: readonly ApprovalRecord[]): void {
    for (const record of records) {
      const known = this.#durability.approval(record.callId);
      if (known?.status === 'pending' && record.status !== 'pending') this.#durability.adopt(record);
    }
    // Questions asked while a tool runs, decided in another process.
    for (const [callId, asked] of [...this.#asked]) {
      const decision = this.#durability.approval(callId)?.decision;
      if (decision === undefined) continue;
      const fitted = fitting(decision, asked.check);
      this.#bus.emit(
        asked.request.agent,
        'approval_decided',
        { callId, tool: asked.request.tool, decision: fitted },
        this.#placeOf(asked.request.route),
      );
      asked.settle(fitted);
    }
    this.applyStored();
  }

  /** Looks for decisions in the store every `pollMs` while something waits, until stopped. */
  startPolling(): void {
    const tick = () => {
      this.#pollTimer = undefined;
      if (this.#stopped) return;
      if (this.waiting) {
        void Promise.resolve()
          .then(() => this.#store.approvals({ sessionId: this.#sessionId }))
          .then(
            (records) => {
              if (!this.#stopped) this.adopt(records);
            },
            () => undefined,
          );
      }
      this.#pollTimer = this.#clock.setTimeout(tick, this.#pollMs);
      // The poll never holds the process open by itself: the session does, while its turn runs or waits for a
      // person, whether it was spawned or recovered.
      (this.#pollTimer as { unref?: () => void } | undefined)?.unref?.();
    };
    tick();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#pollTimer !== undefined) this.#clock.clearTimeout(this.#pollTimer);
    this.#pollTimer = undefined;
  }
}

/**
 * A decision taken where the question's check could not run (another process): one that does not fit is a
 * rejection saying why, so the tool hears a refusal rather than an answer it cannot use.
 */
function fitting(
  decision: ApprovalDecision,
  check: ((decision: ApprovalDecision) => string | undefined) | undefined,
): ApprovalDecision {
  const refusal = check?.(decision);
  return refusal === undefined ? decision : { type: 'reject', reason: `the answer does not fit: ${refusal}` };
}
