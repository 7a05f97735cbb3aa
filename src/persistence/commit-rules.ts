import { ConfigError } from '../core/errors.ts';
import { type StoredSessionStatus, storedSessionStatuses } from './store.ts';
import { StoreCommitError } from './store-errors.ts';
import { approvalStatuses as knownApprovalStatuses } from './validate-stored.ts';

/**
 * The rules every store applies to a batch before writing any of it, so a refused batch leaves nothing behind:
 * the session row names this session and has the fields the store indexes; events continue the log at
 * `lastSeq + 1` without gaps; runs, journal entries, events and approvals belong to a session that has a row
 * (or gets one in the same batch). Cheap checks only: a commit is on the path of every model and tool call.
 */
export function checkBatch(sessionId: string, batch: CheckedBatch, lastSeq: number, hasRow: boolean): void {
  // Every commit passes here: a batch that passes allocates nothing (no closure, no iterator).
  const session = batch.session;
  if (session !== undefined) {
    if (typeof session !== 'object' || session === null)
      refuse(sessionId, 'invalid_value', 'the session row is not an object');
    if (session.id !== sessionId)
      refuse(
        sessionId,
        'invalid_value',
        `the session row's id is ${JSON.stringify(session.id)}, not "${sessionId}"`,
      );
    if (!statuses.has(session.status))
      refuse(
        sessionId,
        'invalid_value',
        `the session status ${JSON.stringify(session.status)} is not one of ${storedSessionStatuses.join(', ')}`,
      );
    if (typeof session.entry !== 'string' || typeof session.agent !== 'string')
      refuse(sessionId, 'invalid_value', 'the session row needs string `entry` and `agent`');
    if (!Number.isSafeInteger(session.turns) || (session.turns as number) < 0)
      refuse(
        sessionId,
        'invalid_value',
        `the session's turns must be a non-negative integer; got ${String(session.turns)}`,
      );
    if (!Number.isFinite(session.updatedAt))
      refuse(
        sessionId,
        'invalid_value',
        `the session's updatedAt must be a finite number; got ${String(session.updatedAt)}`,
      );
  }
  const events = batch.events;
  if (events !== undefined)
    for (let index = 0; index < events.length; index++) {
      const event = events[index] as NonNullable<CheckedBatch['events']>[number];
      if (event.seq !== lastSeq + 1 + index)
        refuse(
          sessionId,
          'event_sequence',
          `event ${index} of the batch has seq ${String(event.seq)}; the log continues at ${lastSeq + 1 + index}`,
        );
      if (typeof event.type !== 'string' || typeof event.agent !== 'string' || !Number.isFinite(event.time))
        refuse(
          sessionId,
          'invalid_value',
          `event ${String(event.seq)} needs a string type and agent and a finite time`,
        );
    }
  const runs = batch.runs;
  if (runs !== undefined)
    for (let index = 0; index < runs.length; index++)
      if (typeof runs[index]?.[0] !== 'string')
        refuse(sessionId, 'invalid_value', 'a nested-run route must be a string');
  const journal = batch.journal;
  if (journal !== undefined)
    for (let index = 0; index < journal.length; index++)
      if (typeof journal[index]?.[0] !== 'string')
        refuse(sessionId, 'invalid_value', 'a journal key must be a string');
  const approvals = batch.approvals;
  if (approvals !== undefined)
    for (let index = 0; index < approvals.length; index++) {
      const record = approvals[index] as NonNullable<CheckedBatch['approvals']>[number];
      if (typeof record.callId !== 'string' || record.callId.length === 0)
        refuse(sessionId, 'invalid_value', 'an approval record needs a non-empty callId');
      if (!approvalStatuses.has(record.status))
        refuse(
          sessionId,
          'invalid_value',
          `approval ${record.callId} has the unknown status ${JSON.stringify(record.status)}`,
        );
      if (!Number.isFinite(record.requestedAt))
        refuse(sessionId, 'invalid_value', `approval ${record.callId} needs a finite requestedAt`);
    }
  if (session === undefined && !hasRow && writesRowData(batch))
    refuse(
      sessionId,
      'unknown_session',
      'the session has no row; commit the session row first (or in the same batch)',
    );
}

function refuse(
  sessionId: string,
  reason: 'event_sequence' | 'unknown_session' | 'invalid_value',
  message: string,
): never {
  throw new StoreCommitError(sessionId, reason, message);
}

/**
 * The parts of a batch the rules read: a CommitBatch, or the same batch with its values already serialized (what a
 * store writes). A null checkpoint of a run deletes it, whatever form the others take.
 */
export interface CheckedBatch {
  readonly session?:
    | {
        readonly id: unknown;
        readonly status: unknown;
        readonly entry: unknown;
        readonly agent: unknown;
        readonly turns: unknown;
        readonly updatedAt: unknown;
      }
    | undefined;
  readonly events?:
    | readonly {
        readonly seq: unknown;
        readonly type: unknown;
        readonly agent: unknown;
        readonly time: unknown;
      }[]
    | undefined;
  readonly runs?: readonly (readonly [route: unknown, checkpoint: unknown])[] | undefined;
  readonly journal?: readonly (readonly [key: unknown, value: unknown])[] | undefined;
  readonly approvals?:
    | readonly { readonly callId: unknown; readonly status: unknown; readonly requestedAt: unknown }[]
    | undefined;
}

/** Whether the batch writes anything that belongs to a session row (a deleted run or clearTurn removes only). */
function writesRowData(batch: CheckedBatch): boolean {
  return (
    (batch.events?.length ?? 0) > 0 ||
    (batch.journal?.length ?? 0) > 0 ||
    (batch.approvals?.length ?? 0) > 0 ||
    (batch.runs?.some(([, checkpoint]) => checkpoint !== null) ?? false)
  );
}

const statuses: ReadonlySet<unknown> = new Set<StoredSessionStatus>(storedSessionStatuses);
const approvalStatuses: ReadonlySet<unknown> = new Set(knownApprovalStatuses);

/** Checks readEvents' `limit` (undefined: no limit). */
export function checkEventLimit(limit: number | undefined): void {
  if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0))
    throw new ConfigError(`readEvents: limit must be a non-negative integer; got ${String(limit)}.`);
}
