import type { ObjectContext, ObjectSharedContext, RestatePromise } from '@restatedev/restate-sdk';
import { CancelledError, serde, TerminalError } from '@restatedev/restate-sdk';
import {
  type ApprovalDecision,
  type ApprovalRequest,
  type ApprovalStatus,
  statusOfDecision,
  whyNotWaiting,
} from '../core/approvals.ts';
import { ApprovalError } from '../sessions/approval-error.ts';
import { type StoredApproval, stateKeys } from './state.ts';

/**
 * Approvals on Restate. When an agent's tool calls wait for people (tools with `needsApproval`, or `askHuman`), the
 * turn's exclusive handler makes one awakeable per waiting call, writes the requests with their awakeable ids to
 * the object's state and suspends on the awakeables, in call order. A decision comes from any process: the shared
 * handlers `approve`, `reject` and `answer` (they run while the exclusive handler is suspended: shared handlers
 * are not queued behind it) pass it to the call's own `decide` handler, exclusive under the key
 * `<session>!<awakeableId>`, which records the first decision in its state and resolves the awakeable, and refuses
 * every later one: exactly one decision applies, and the caller learns which. Restate's own
 * `POST /restate/awakeables/<id>/resolve` with an ApprovalDecision as the body also decides: the turn confirms every
 * decision with the call's `decide` handler, which records a direct one there, so a handler's receipt never names a
 * decision that did not apply. Each decision is journaled, so a crashed or restarted service replays it instead of
 * asking again.
 */

/** What the wait needs from the turn that runs it. */
export interface PeopleWaitHost {
  ctx: ObjectContext;
  /** The object the turn runs in: its `decide` handler keeps the one decision on each call. */
  objectName: string;
  /** Awaits a journal promise (see JournalAwaits). */
  wait<T>(promise: RestatePromise<T>): Promise<T>;
  /** The records of the turn so far (earlier batches included), by call id, in the order they were asked. */
  approvals: Map<string, StoredApproval>;
  /** The number of the turn that waits. */
  turnNumber: number;
  /** Writes the session's records (earlier turns' and this turn's) to the object's state. */
  storeApprovals(): void;
  /** The turn is now waiting (true) or running again (false): written to the turn's state. */
  setWaiting(waiting: boolean): void;
  /** Writes the turn's events so far to the object's state (observers see the requests). */
  persistEvents(): Promise<void>;
  /** A decision was taken: tell the agent (and the event stream). */
  decided(request: StoredApproval, decision: ApprovalDecision): void;
  /** The invocation was cancelled while it waited. */
  cancelled(): void;
  /** Journaled time now (one journal entry), for decision times. */
  now(): Promise<number>;
}

/**
 * Waits for a decision on every request, in order, and reports each one; resolves when all are decided. Never
 * rejects: a cancelled invocation is reported through `cancelled`, a rejected awakeable counts as a rejection.
 */
export async function waitForPeople(
  host: PeopleWaitHost,
  requests: readonly ApprovalRequest[],
): Promise<void> {
  const { ctx } = host;
  const waiting = requests.map((request) => {
    const awakeable = ctx.awakeable<unknown>();
    const record: StoredApproval = {
      ...request,
      status: 'pending',
      awakeableId: awakeable.id,
      turn: host.turnNumber,
    };
    host.approvals.set(request.callId, record);
    return { record, promise: awakeable.promise };
  });
  host.setWaiting(true);
  host.storeApprovals();
  try {
    await host.persistEvents();
    for (const [index, { record, promise }] of waiting.entries()) {
      let decision: ApprovalDecision;
      try {
        decision = decisionFrom(await host.wait(promise), record);
      } catch (error) {
        if (error instanceof CancelledError) {
          host.cancelled();
          return;
        }
        decision = {
          type: 'reject',
          reason: `the decision was rejected: ${error instanceof Error ? error.message : String(error)}`,
        };
      }
      // The decision recorded for the call applies: the one given through approve/reject/answer, else (the
      // awakeable was resolved directly) this one, recorded now, so that a later approve/reject/answer is refused.
      decision = await confirmDecision(host, record, decision);
      const decidedAt = await host.now();
      const updated: StoredApproval = { ...record, status: statusOfDecision(decision), decision, decidedAt };
      host.approvals.set(record.callId, updated);
      host.storeApprovals();
      if (index === waiting.length - 1) host.setWaiting(false);
      host.decided(updated, decision);
    }
  } catch (error) {
    if (error instanceof CancelledError) host.cancelled();
    // Anything else means the attempt ended (the journal goes on in the next attempt): nothing to report here.
  }
}

/**
 * The decision an awakeable was resolved with. Anything that is not a well-formed decision for this kind of
 * request counts as a rejection that says why: a malformed payload never approves a call.
 */
export function decisionFrom(payload: unknown, request: Pick<ApprovalRequest, 'kind'>): ApprovalDecision {
  const problem = decisionProblem(payload, request.kind);
  if (problem !== undefined) return { type: 'reject', reason: `the decision could not be used: ${problem}` };
  return payload as ApprovalDecision;
}

function decisionProblem(payload: unknown, kind: ApprovalRequest['kind']): string | undefined {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload))
    return 'expected {"type":"approve"}, {"type":"reject","reason":"..."} or {"type":"answer","text":"..."}';
  const own = (key: string): unknown =>
    Object.hasOwn(payload, key) ? (payload as Record<string, unknown>)[key] : undefined;
  const type = own('type');
  if (type === 'approve')
    return kind === 'question' ? 'this call asks a question: answer it (or reject it)' : undefined;
  if (type === 'reject')
    return typeof own('reason') === 'string' ? undefined : 'a rejection needs a "reason" string';
  if (type === 'answer') {
    if (kind !== 'question') return 'this call waits for an approval: approve or reject it';
    return typeof own('text') === 'string' ? undefined : 'an answer needs a "text" string';
  }
  return `unknown decision type ${JSON.stringify(type)}`;
}

/** What a shared handler returns after passing a decision on. */
export interface DecisionReceipt {
  callId: string;
  status: ApprovalStatus;
}

/** The request of the `decide` handler: the one decision on a waiting call. */
export interface DecisionRequest {
  sessionId: string;
  callId: string;
  awakeableId: string;
  decision: ApprovalDecision;
  /**
   * Sent by the waiting turn once its awakeable is resolved: answers with the decision recorded for the call, or
   * records this one (it came through the awakeable directly) and answers with it. Never refused.
   */
  confirm?: boolean;
}

/** What the `decide` handler keeps under its key, and answers: the decision that applies. */
export interface AppliedDecision extends DecisionReceipt {
  decision: ApprovalDecision;
}

/** The `<session>!<awakeableId>` key under which the one decision on a waiting call is recorded. */
export function decisionKey(sessionId: string, awakeableId: string): string {
  return `${sessionId}!${awakeableId}`;
}

/**
 * Decides a waiting call from a shared handler: finds the call among the turn's requests and passes the decision to
 * the call's `decide` handler, which records the first decision durably and refuses any other. Throws a
 * TerminalError carrying an ApprovalError's message when the call does not wait for this decision: 404 when no such
 * call waits, 409 when it was already decided, 400 when the decision does not fit the request (an approval for a
 * question, an answer for an approval).
 */
export async function decideCall(
  ctx: ObjectSharedContext,
  objectName: string,
  callId: unknown,
  decision: ApprovalDecision,
): Promise<DecisionReceipt> {
  if (typeof callId !== 'string' || callId === '')
    throw new TerminalError('callId must be a non-empty string.', { errorCode: 400 });
  const records = (await ctx.get<StoredApproval[]>(stateKeys.approvals)) ?? [];
  // Call ids are the model's: another turn may have used the same one. The call that waits is the one decided.
  const record =
    records.find((candidate) => candidate.callId === callId && candidate.status === 'pending') ??
    records.findLast((candidate) => candidate.callId === callId);
  const refuse = (why: string, errorCode: number) =>
    new TerminalError(new ApprovalError(ctx.key, callId, why).message, { errorCode });
  if (!record) throw refuse(whyNotWaiting(record), 404);
  if (record.status !== 'pending') throw refuse(whyNotWaiting(record), 409);
  if (decision.type === 'answer' && record.kind !== 'question')
    throw refuse('it waits for an approval, not an answer: use approve() or reject()', 400);
  if (decision.type === 'approve' && record.kind === 'question')
    throw refuse('it is a question: use answer() or reject()', 400);
  const problem = decisionProblem(decision, record.kind);
  if (problem !== undefined) throw refuse(problem, 400);
  const request: DecisionRequest = { sessionId: ctx.key, callId, awakeableId: record.awakeableId, decision };
  const applied = await ctx.genericCall<DecisionRequest, AppliedDecision>({
    service: objectName,
    method: 'decide',
    key: decisionKey(ctx.key, record.awakeableId),
    parameter: request,
    inputSerde: serde.json,
    outputSerde: serde.json,
  });
  return { callId: applied.callId, status: applied.status };
}

/** The decision that applies to a call whose awakeable resolved with `decision` (see DecisionRequest.confirm). */
function confirmDecision(
  host: PeopleWaitHost,
  record: StoredApproval,
  decision: ApprovalDecision,
): Promise<ApprovalDecision> {
  const { ctx } = host;
  const call = ctx.genericCall<DecisionRequest, AppliedDecision>({
    service: host.objectName,
    method: 'decide',
    key: decisionKey(ctx.key, record.awakeableId),
    parameter: {
      sessionId: ctx.key,
      callId: record.callId,
      awakeableId: record.awakeableId,
      decision,
      confirm: true,
    },
    inputSerde: serde.json,
    outputSerde: serde.json,
  });
  return host.wait(call).then((applied) => applied.decision);
}

/**
 * The `decide` handler (exclusive per waiting call): the first decision is written to the key's state and resolves
 * the call's awakeable; every later one is refused with an ApprovalError's message (409) that says which applied.
 * The waiting turn confirms (see DecisionRequest.confirm) the decision it applies.
 */
export async function recordDecision(ctx: ObjectContext, request: DecisionRequest): Promise<AppliedDecision> {
  const { sessionId, callId, awakeableId, decision } = request;
  const recorded = await ctx.get<AppliedDecision>(stateKeys.decision);
  if (recorded) {
    if (request.confirm === true) return recorded;
    throw new TerminalError(
      new ApprovalError(sessionId, callId, `it was already ${recorded.status}`).message,
      { errorCode: 409 },
    );
  }
  const applied: AppliedDecision = { callId, status: statusOfDecision(decision), decision };
  ctx.set(stateKeys.decision, applied);
  if (request.confirm !== true) ctx.resolveAwakeable(awakeableId, decision);
  return applied;
}
