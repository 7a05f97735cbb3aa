import type * as Sqlite from 'node:sqlite';
import { type LeaseHolder, leaseRenewalAfterMs, thisProcess } from './session-lease.ts';
import type { SessionHead } from './stored-format/session-head.ts';

/** A head as this connection last wrote it, with its checksum and the session row's status it wrote. */
interface WrittenHead extends SessionHead {
  sum: number;
  status: string | undefined;
}

/** The session row's columns after its id, in the order `updateSession` binds them. */
export type SessionColumns = readonly [
  status: string,
  entry: string,
  agent: string,
  turns: number,
  updatedAt: number,
  doc: string,
  sum: number,
];

export type WrittenHeads = ReturnType<typeof prepareWrittenHeads>;

/**
 * The heads this connection wrote for the sessions it runs. A running session's next commit then skips reading its
 * head and lease: its session row is updated only where the stored head is exactly the one remembered (every column
 * and the checksum) and the lease is this holder's with more than a third of its TTL left, both checked by the
 * UPDATE itself. When either is not so (another process wrote or took the session, the file was damaged, a
 * commit of this connection was rolled back, the lease needs renewing), nothing is written and the commit reads and
 * checks the head and the lease as a first commit does.
 */
export function prepareWrittenHeads(
  db: Sqlite.DatabaseSync,
  options: { ttlMs: number; holder?: LeaseHolder; now?: () => number },
) {
  const holder = options.holder ?? thisProcess;
  const now = options.now ?? Date.now;
  const renewAfterMs = leaseRenewalAfterMs(options.ttlMs);
  const written = new Map<string, WrittenHead>();
  // The stored head (every column and the checksum) and the lease, as the WHERE clause of both updates checks them.
  const unchanged = `AND EXISTS (SELECT 1 FROM heads WHERE session_id = ?8 AND last_seq = ?9 AND runs = ?10 AND journal = ?11
         AND approvals = ?12 AND messages = ?13 AND messages_sum = ?14 AND sum = ?15)
       AND EXISTS (SELECT 1 FROM leases WHERE session_id = ?8 AND host = ?16 AND pid = ?17 AND token = ?18
         AND expires_at > ?19)`;
  const update = db.prepare(
    `UPDATE sessions SET status = ?, entry = ?, agent = ?, turns = ?, updated_at = ?, doc = ?, sum = ?
     WHERE id = ?8 ${unchanged}`,
  );
  // The same update for a row whose status stays: SQLite rewrites the entry of every index on a column the SET list
  // names, changed or not, so naming `status` would rewrite the row's entry in `sessions_by_status` (a page more to
  // log and checkpoint per commit). The row is only updated where its stored status is already the one written
  // (`status = ?1`): the row that results is the one the first statement writes.
  const updateSameStatus = db.prepare(
    `UPDATE sessions SET entry = ?2, agent = ?3, turns = ?4, updated_at = ?5, doc = ?6, sum = ?7
     WHERE id = ?8 AND status = ?1 ${unchanged}`,
  );
  return {
    /** The head this connection last wrote for the session (a copy), if it remembers one. */
    remembered(sessionId: string): SessionHead | undefined {
      const head = written.get(sessionId);
      if (head === undefined) return undefined;
      return {
        lastSeq: head.lastSeq,
        runs: head.runs,
        journal: head.journal,
        approvals: head.approvals,
        messages: head.messages,
        messagesSum: head.messagesSum,
      };
    },

    /**
     * Updates the session row when the stored head is the one remembered and the lease is this holder's for a while
     * yet; false (nothing written, the session forgotten) otherwise.
     */
    updateIfUnchanged(sessionId: string, columns: SessionColumns): boolean {
      const head = written.get(sessionId);
      if (head === undefined) return false;
      // Every value by itself (a spread would build lists on every commit). A status other than the one this
      // connection wrote last is written by the statement that names it.
      const changed = (columns[0] === head.status ? updateSameStatus : update).run(
        columns[0],
        columns[1],
        columns[2],
        columns[3],
        columns[4],
        columns[5],
        columns[6],
        sessionId,
        head.lastSeq,
        head.runs,
        head.journal,
        head.approvals,
        head.messages,
        head.messagesSum,
        head.sum,
        holder.host,
        holder.pid,
        holder.token,
        now() + renewAfterMs,
      ).changes;
      if (Number(changed) === 1) return true;
      written.delete(sessionId);
      return false;
    },

    /**
     * Remembers the head a commit of a running session wrote, and the status its session row holds (`undefined`: the
     * commit wrote no session row, the status is the one remembered before, if any).
     */
    remember(sessionId: string, head: SessionHead, sum: number, status: string | undefined): void {
      written.set(sessionId, { ...head, sum, status: status ?? written.get(sessionId)?.status });
    },

    /** Forgets a session (it stopped running here, or its commit failed). */
    forget(sessionId: string): void {
      written.delete(sessionId);
    },
  };
}
