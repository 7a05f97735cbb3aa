import type * as Sqlite from 'node:sqlite';
import { StoreCorruptError } from '../store-errors.ts';
import { addToChecksum, beginChecksum, endChecksum, verifyRecord } from './record-checksum.ts';

/**
 * A checksum finds a record that was changed, not one that is gone: damage to a page of the file can drop a session
 * row, the last events of a log or a nested-run checkpoint without SQLite noticing. Every commit therefore writes the
 * session's head: how many nested-run checkpoints, journal entries and approvals it holds and the seq of its last
 * event, checksummed like every record. Reading a session compares what is there with its head; a session row
 * without a head, or a head without its row, is damage too.
 */
export const headsTable = `CREATE TABLE IF NOT EXISTS heads (
  session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
  last_seq INTEGER NOT NULL,
  runs INTEGER NOT NULL,
  journal INTEGER NOT NULL,
  approvals INTEGER NOT NULL,
  messages INTEGER NOT NULL DEFAULT 0,
  messages_sum INTEGER NOT NULL DEFAULT 0,
  sum INTEGER NOT NULL
) WITHOUT ROWID;`;

export interface SessionHead {
  lastSeq: number;
  runs: number;
  journal: number;
  approvals: number;
  /** How many messages its conversation holds, and the checksum of the last (stored-messages.ts). */
  messages: number;
  messagesSum: number;
}

export type SessionHeads = ReturnType<typeof prepareHeads>;

export function prepareHeads(db: Sqlite.DatabaseSync) {
  const counts = db.prepare(`SELECT
      coalesce((SELECT max(seq) FROM events WHERE session_id = ?1), -1) AS last_seq,
      (SELECT count(*) FROM runs WHERE session_id = ?1) AS runs,
      (SELECT count(*) FROM journal WHERE session_id = ?1) AS journal,
      (SELECT count(*) FROM approvals WHERE session_id = ?1) AS approvals,
      (SELECT count(*) FROM messages WHERE session_id = ?1) AS messages,
      coalesce((SELECT sum FROM messages WHERE session_id = ?1 ORDER BY idx DESC LIMIT 1), 0) AS messages_sum`);
  const upsert = db.prepare(
    `INSERT INTO heads (session_id, last_seq, runs, journal, approvals, messages, messages_sum, sum)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (session_id) DO UPDATE SET last_seq = excluded.last_seq, runs = excluded.runs,
       journal = excluded.journal, approvals = excluded.approvals, messages = excluded.messages,
       messages_sum = excluded.messages_sum, sum = excluded.sum`,
  );
  const update = db.prepare(
    `UPDATE heads SET last_seq = ?, runs = ?, journal = ?, approvals = ?, messages = ?, messages_sum = ?, sum = ?
     WHERE session_id = ?`,
  );
  const select = db.prepare(
    'SELECT session_id, last_seq, runs, journal, approvals, messages, messages_sum, sum FROM heads WHERE session_id = ?',
  );
  const unmatched =
    db.prepare(`SELECT id AS session_id FROM sessions WHERE id NOT IN (SELECT session_id FROM heads)
    UNION ALL SELECT session_id FROM heads WHERE session_id NOT IN (SELECT id FROM sessions) LIMIT 1`);

  /** What the session holds now, as the head says it (inside the reading transaction). */
  const countsOf = (sessionId: string): SessionHead => {
    const row = counts.get(sessionId) as Record<string, number>;
    return {
      lastSeq: Number(row.last_seq),
      runs: Number(row.runs),
      journal: Number(row.journal),
      approvals: Number(row.approvals),
      messages: Number(row.messages),
      messagesSum: Number(row.messages_sum),
    };
  };

  /**
   * Writes `head` as the session's head, inside the caller's transaction, and returns its checksum. `exists`: the
   * session has a head already (it is updated in place, cheaper than an upsert; a head that is gone is a loss).
   */
  const write = (sessionId: string, head: SessionHead, exists = false): number => {
    // The columns one by one, in the table's order (no list of them: a commit writes a head every time).
    const { lastSeq, runs, journal, approvals, messages, messagesSum } = head;
    beginChecksum('heads');
    addToChecksum(sessionId);
    addToChecksum(lastSeq);
    addToChecksum(runs);
    addToChecksum(journal);
    addToChecksum(approvals);
    addToChecksum(messages);
    addToChecksum(messagesSum);
    const sum = endChecksum();
    if (!exists) upsert.run(sessionId, lastSeq, runs, journal, approvals, messages, messagesSum, sum);
    else if (
      Number(update.run(lastSeq, runs, journal, approvals, messages, messagesSum, sum, sessionId).changes) ===
      0
    )
      throw new StoreCorruptError(sessionId, 'its head (what the session holds) is missing');
    return sum;
  };

  return {
    /** Writes the session's head from what it holds, counted (a migration's work, inside its transaction). */
    record(sessionId: string): void {
      write(sessionId, countsOf(sessionId));
    },

    /**
     * Writes the session's head as a commit leaves it: the head before the commit with what the commit changed
     * (counted as it wrote them). A record lost before the commit is still counted by the head, so reading the
     * session still finds the loss.
     */
    write,

    /**
     * The session's head, verified, or undefined when it has none (a session without a row). `row`: its columns
     * when the caller already read them (`session_id` null when it has none).
     */
    find(sessionId: string, given?: Record<string, Sqlite.SQLOutputValue>): SessionHead | undefined {
      const row = given === undefined ? select.get(sessionId) : given.session_id === null ? undefined : given;
      if (row === undefined) return undefined;
      verifyRecord(sessionId, 'its head', 'heads', row);
      return {
        lastSeq: Number(row.last_seq),
        runs: Number(row.runs),
        journal: Number(row.journal),
        approvals: Number(row.approvals),
        messages: Number(row.messages),
        messagesSum: Number(row.messages_sum),
      };
    },

    /** Whether the session has a head (it has, from its first commit until it is deleted). */
    has(sessionId: string): boolean {
      return select.get(sessionId) !== undefined;
    },

    /** The session's head, verified; a session with a row must have one. */
    read(sessionId: string): SessionHead {
      const head = this.find(sessionId);
      if (head === undefined)
        throw new StoreCorruptError(sessionId, 'its head (what the session holds) is missing');
      return head;
    },

    /** Refuses a session that lost records its head counts (or holds records it does not). */
    check(sessionId: string, found: Omit<SessionHead, 'messages' | 'messagesSum'>): SessionHead {
      const head = this.read(sessionId);
      for (const key of ['lastSeq', 'runs', 'journal', 'approvals'] as const)
        if (head[key] !== found[key])
          throw new StoreCorruptError(
            sessionId,
            `it holds ${key === 'lastSeq' ? 'events up to seq' : `${key} records:`} ${found[key]}, but its head says ${head[key]}: records were lost`,
          );
      return head;
    },

    /** What the session holds, counted. */
    counts: countsOf,

    /** Refuses a store where a session row lost its head, or a head its row (a lost session row). */
    checkAll(): void {
      const row = unmatched.get();
      if (row !== undefined)
        throw new StoreCorruptError(
          String(row.session_id),
          'its session row and its head do not match: one of them was lost',
        );
    },
  };
}
