import type { ObjectContext, ObjectSharedContext, RestatePromise } from '@restatedev/restate-sdk';
import { CancelledError, TerminalError } from '@restatedev/restate-sdk';
import {
  type ApprovalDecision,
  type ApprovalRequest,
  type ApprovalStatus,
  statusOfDecision,
} from '../core/approvals.ts';
import { type StoredApproval, stateKeys } from './state.ts';

/**
 * Approvals on Restate. When an agent's tool calls wait for people (tools with `needsApproval`, or `askHuman`), the
 * turn's exclusive handler makes one awakeable per waiting call, writes the requests with their awakeable ids to
 * the object's state and suspends on the awakeables, in call order. A decision comes from any process: the shared
 * handlers `approve`, `reject` and `answer` (they run while the exclusive handler is suspended: shared handlers
 * are not queued behind it) resolve the call's awakeable, and so does Restate's own
 * `POST /restate/awakeables/<id>/resolve` with an ApprovalDecision as the body. Each decision is journaled, so a
 * crashed or restarted service replays it instead of asking again.
 */

/** What the wait needs from the turn that runs it. */
export interface PeopleWaitHost {
  ctx: ObjectContext;
  /** Awaits a journal promise (see JournalAwaits). */
  wait<T>(promise: RestatePromise<T>): Promise<T>;
  /** The records of the turn so far (earlier batches included), by call id, in the order they were asked. */
  approvals: Map<string, StoredApproval>;
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
    const record: StoredApproval = { ...request, status: 'pending', awakeableId: awakeable.id };
    host.approvals.set(request.callId, record);
    return { record, promise: awakeable.promise };
  });
  host.setWaiting(true);
  ctx.set(stateKeys.approvals, [...host.approvals.values()]);
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
      const decidedAt = await host.now();
      const updated: StoredApproval = { ...record, status: statusOfDecision(decision), decision, decidedAt };
      host.approvals.set(record.callId, updated);
      ctx.set(stateKeys.approvals, [...host.approvals.values()]);
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

/**
 * Decides a waiting call from a shared handler: finds the call among the turn's pending requests and resolves its
 * awakeable. Throws a TerminalError (404) when no such call waits, and (400) when the decision does not fit the
 * request (an approval for a question, an answer for an approval, a missing reason or text).
 */
export async function decideCall(
  ctx: ObjectSharedContext,
  callId: unknown,
  decision: ApprovalDecision,
): Promise<DecisionReceipt> {
  if (typeof callId !== 'string' || callId === '')
    throw new TerminalError('callId must be a non-empty string.', { errorCode: 400 });
  const records = (await ctx.get<StoredApproval[]>(stateKeys.approvals)) ?? [];
  const record = records.find((candidate) => candidate.callId === callId);
  if (record?.status !== 'pending')
    throw new TerminalError(
      record
        ? `Call "${callId}" of session "${ctx.key}" was already decided (${record.status}).`
        : `No call "${callId}" waits for a decision in session "${ctx.key}".`,
      { errorCode: 404 },
    );
  const problem = decisionProblem(decision, record.kind);
  if (problem !== undefined) throw new TerminalError(`Call "${callId}": ${problem}.`, { errorCode: 400 });
  ctx.resolveAwakeable(record.awakeableId, decision);
  return { callId, status: statusOfDecision(decision) };
}
