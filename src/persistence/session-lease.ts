import { hostname } from 'node:os';
import type * as Sqlite from 'node:sqlite';
import type { LeaseOptions } from './store.ts';
import { SessionFencedError, SessionLeasedError } from './store-errors.ts';

/**
 * Who holds a session's lease: a process, named by its host, its pid and a token drawn when the process first
 * opens a store (a pid alone may be reused by a later process).
 */
export interface LeaseHolder {
  host: string;
  pid: number;
  token: string;
}

/**
 * The lease table: one row per session that a process runs. It is not session data (it names a process, not what
 * the session holds), so it has no checksum and no head: a damaged or lost lease row costs at most a wait or a
 * refusal, never a wrong resume. No foreign key either: a lease is taken before the session's row is read.
 */
export const leasesTable = `CREATE TABLE IF NOT EXISTS leases (
  session_id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  token TEXT NOT NULL,
  expires_at REAL NOT NULL
) WITHOUT ROWID;`;

/** How long a lease of a holder on another host lasts without being renewed, by default (milliseconds). */
export const defaultLeaseTtlMs = 30_000;

/** This process, as a lease holder: the same for every store the process opens. */
export const thisProcess: LeaseHolder = {
  host: hostname(),
  pid: process.pid,
  // Drawn on first use: node:crypto then loads when a store needs it, not when Troupe is imported.
  get token() {
    processToken ??= process.getBuiltinModule('node:crypto').randomUUID();
    return processToken;
  },
};
let processToken: string | undefined;

/** Whether the process `holder` names is known to be gone (same host and no such pid). */
export function holderIsDead(holder: LeaseHolder, here: LeaseHolder = thisProcess): boolean {
  if (holder.host !== here.host) return false;
  if (holder.pid === here.pid) return holder.token !== here.token;
  try {
    process.kill(holder.pid, 0);
    return false;
  } catch (error) {
    // EPERM: the pid exists but belongs to another user (alive). Only ESRCH says it is gone.
    return (error as { code?: unknown } | null)?.code === 'ESRCH';
  }
}

function sameHolder(a: LeaseHolder, b: LeaseHolder): boolean {
  return a.host === b.host && a.pid === b.pid && a.token === b.token;
}

/**
 * The leases of one store connection: taken by `recover()`/`restore()` (acquire), by a session's first commit
 * (claim), renewed by every commit and by a timer, released when the session stops running here. Every call runs
 * inside the caller's transaction, or in one of its own.
 */
export interface SessionLeases {
  /** Takes the session's lease for this holder, in a transaction of its own; throws SessionLeasedError. */
  acquire(sessionId: string, options?: LeaseOptions): void;
  /**
   * Inside a commit's transaction: renews this holder's lease (unless it was renewed within the last third of its
   * TTL), claims a free one, or throws SessionFencedError when another holder has it. `lease`: the session's lease
   * row (`host`, `pid`, `token`, `expires_at`, all null when it has none) when the commit already read it in
   * the transaction, with the session's head.
   */
  checkCommit(sessionId: string, lease?: Record<string, unknown>): void;
  /** Inside a commit's transaction, or alone: drops this holder's lease (another holder's is left). */
  release(sessionId: string): void;
  /** Renews every lease this connection holds (the timer's work); a lease lost meanwhile is forgotten. */
  renewAll(): void;
  /** Drops every lease this connection holds. */
  releaseAll(): void;
  /** The sessions whose leases this connection holds. */
  readonly held: ReadonlySet<string>;
}

/** A lease with more time left than this (of a TTL of `ttlMs`) needs no renewal by a commit. */
export function leaseRenewalAfterMs(ttlMs: number): number {
  return (ttlMs * 2) / 3;
}

export function prepareLeases(
  db: Sqlite.DatabaseSync,
  options: { ttlMs: number; holder?: LeaseHolder; now?: () => number },
): SessionLeases {
  const holder = options.holder ?? thisProcess;
  const now = options.now ?? Date.now;
  const ttlMs = options.ttlMs;
  const select = db.prepare('SELECT host, pid, token, expires_at FROM leases WHERE session_id = ?');
  const upsert = db.prepare(
    `INSERT INTO leases (session_id, host, pid, token, expires_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (session_id) DO UPDATE SET host = excluded.host, pid = excluded.pid, token = excluded.token,
       expires_at = excluded.expires_at`,
  );
  const renew = db.prepare(
    'UPDATE leases SET expires_at = ? WHERE session_id = ? AND host = ? AND pid = ? AND token = ?',
  );
  const remove = db.prepare('DELETE FROM leases WHERE session_id = ? AND host = ? AND pid = ? AND token = ?');
  const held = new Set<string>();
  /** A lease with more time left than this needs no renewal by a commit. */
  const renewAfterMs = leaseRenewalAfterMs(ttlMs);

  const read = (
    sessionId: string,
    given?: Record<string, unknown>,
  ): (LeaseHolder & { expiresAt: number }) | undefined => {
    const row = given === undefined ? select.get(sessionId) : given.host === null ? undefined : given;
    if (row === undefined) return undefined;
    return {
      host: String(row.host),
      pid: Number(row.pid),
      token: String(row.token),
      expiresAt: Number(row.expires_at),
    };
  };
  const write = (sessionId: string): void => {
    upsert.run(sessionId, holder.host, holder.pid, holder.token, now() + ttlMs);
    held.add(sessionId);
  };
  const inTransaction = <T>(work: () => T): T => {
    db.exec('BEGIN IMMEDIATE');
    try {
      const result = work();
      db.exec('COMMIT');
      return result;
    } catch (error) {
      try {
        db.exec('ROLLBACK');
      } catch {
        // SQLite rolled back already.
      }
      throw error;
    }
  };

  return {
    held,
    acquire(sessionId, acquireOptions) {
      inTransaction(() => {
        const current = read(sessionId);
        const free =
          current === undefined ||
          sameHolder(current, holder) ||
          acquireOptions?.takeOver === true ||
          holderIsDead(current, holder) ||
          current.expiresAt <= now();
        if (!free) throw new SessionLeasedError(sessionId, current);
        write(sessionId);
      });
    },
    checkCommit(sessionId, lease) {
      const current = read(sessionId, lease);
      // A lease left by a process that is gone is claimed (a writer restarted after a crash); one that another live
      // process took over is not: this process no longer runs the session.
      if (
        current !== undefined &&
        !sameHolder(current, holder) &&
        !holderIsDead(current, holder) &&
        current.expiresAt > now()
      ) {
        held.delete(sessionId);
        throw new SessionFencedError(sessionId, current);
      }
      // A commit renews the lease; the first commit of a new session claims it. A lease of this holder renewed
      // within the last third of its TTL is left as it is: the timer renews it again before that third has passed,
      // and the session's commits skip a write each.
      if (current !== undefined && sameHolder(current, holder) && current.expiresAt - now() > renewAfterMs) {
        held.add(sessionId);
        return;
      }
      write(sessionId);
    },
    release(sessionId) {
      held.delete(sessionId);
      remove.run(sessionId, holder.host, holder.pid, holder.token);
    },
    renewAll() {
      if (held.size === 0) return;
      inTransaction(() => {
        for (const sessionId of held) {
          const changed = renew.run(now() + ttlMs, sessionId, holder.host, holder.pid, holder.token);
          if (Number(changed.changes) === 0) held.delete(sessionId);
        }
      });
    },
    releaseAll() {
      if (held.size === 0) return;
      inTransaction(() => {
        for (const sessionId of held) remove.run(sessionId, holder.host, holder.pid, holder.token);
      });
      held.clear();
    },
  };
}
