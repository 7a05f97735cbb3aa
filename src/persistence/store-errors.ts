import { TroupeError } from '../core/errors.ts';

/** A stored record cannot be read back: damaged on disk, truncated, or not what Troupe writes. Names the session. */
export class StoreCorruptError extends TroupeError {
  readonly sessionId: string | undefined;
  constructor(sessionId: string | undefined, message: string, options?: { cause?: unknown }) {
    super(
      'store_corrupt',
      sessionId === undefined
        ? `The store is damaged: ${message}`
        : `The stored record of session "${sessionId}" is damaged: ${message}`,
      options,
    );
    this.sessionId = sessionId;
  }
}

/** The store was written by a different version of Troupe's storage layout. */
export class StoreLayoutError extends TroupeError {
  readonly found: number | string;
  readonly expected: number;
  constructor(where: string, found: number | string, expected: number) {
    super(
      'store_layout',
      `${where} was written with storage layout ${String(found)}; this version of Troupe reads layout ${expected}. Migrate it or start a new store.`,
    );
    this.found = found;
    this.expected = expected;
  }
}

/**
 * The file is a SQLite database, but another application's, not a Troupe session store: it is left as it was. Give
 * the store a file of its own.
 */
export class ForeignStoreError extends TroupeError {
  readonly path: string;
  constructor(path: string) {
    super(
      'store_foreign',
      `"${path}" is a SQLite database of another application, not a Troupe session store; it was left as it was. Give createSqliteStore a file of its own (a new file is created).`,
    );
    this.path = path;
  }
}

/** The store was used after `close()`. */
export class StoreClosedError extends TroupeError {
  constructor() {
    super('store_closed', 'The store is closed.');
  }
}

/** Why a commit was refused. */
export type StoreCommitRefusal =
  /** The batch's events do not continue the session's log at the next seq, or have gaps. */
  | 'event_sequence'
  /** The batch writes runs, journal entries, events or approvals for a session that has no row yet. */
  | 'unknown_session'
  /**
   * The batch's session row continues a conversation other than the stored one: an earlier commit of the session
   * failed, or another process wrote it. The next commit writes the whole conversation.
   */
  | 'message_sequence'
  /** A value in the batch cannot be stored: not JSON (a cycle, a bigint), or a field of the wrong type. */
  | 'invalid_value';

/** A commit was refused before anything of its batch was written: the batch breaks the store's rules. */
export class StoreCommitError extends TroupeError {
  readonly sessionId: string;
  readonly reason: StoreCommitRefusal;
  constructor(sessionId: string, reason: StoreCommitRefusal, message: string, options?: { cause?: unknown }) {
    super(
      'store_commit',
      `Commit to session "${sessionId}" refused, nothing was written: ${message}`,
      options,
    );
    this.sessionId = sessionId;
    this.reason = reason;
  }
}

/**
 * The store's file could not be opened, read or written: permissions, a full disk, an I/O error, or another
 * process holding the database longer than the busy timeout. A commit that fails this way wrote nothing.
 */
export class StoreIoError extends TroupeError {
  readonly path: string;
  /** Another connection held the database past the busy timeout: the same call may succeed later. */
  readonly busy: boolean;
  constructor(path: string, message: string, options: { busy: boolean; cause?: unknown }) {
    super('store_io', `The store "${path}" ${message}`, { cause: options.cause });
    this.path = path;
    this.busy = options.busy;
  }
}

/** The process holding a session's lease, as an error names it. */
export interface LeaseHolderInfo {
  readonly host: string;
  readonly pid: number;
  readonly token: string;
}

function holderText(holder: LeaseHolderInfo): string {
  return `process ${holder.pid} on host "${holder.host}"`;
}

/**
 * Another live process runs the session (it holds the session's lease in the store): it was not resumed here, so
 * that the two do not both run it. Wait until that process ends or releases it, or take it over with
 * `recover({ takeOver: true })` / `restore(id, agent, { takeOver: true })`.
 */
export class SessionLeasedError extends TroupeError {
  readonly sessionId: string;
  readonly holder: LeaseHolderInfo;
  constructor(sessionId: string, holder: LeaseHolderInfo) {
    super(
      'session_leased',
      `Session "${sessionId}" is running in ${holderText(holder)} (it holds the session's lease): it was not resumed here. Stop that process, or pass takeOver: true to take the session from it.`,
    );
    this.sessionId = sessionId;
    this.holder = { host: holder.host, pid: holder.pid, token: holder.token };
  }
}

/**
 * A commit from a process that no longer holds the session's lease (another process took the session over): it was
 * refused, nothing was written, and the run here ends. The session goes on in the holder.
 */
export class SessionFencedError extends TroupeError {
  readonly sessionId: string;
  readonly holder: LeaseHolderInfo;
  constructor(sessionId: string, holder: LeaseHolderInfo) {
    super(
      'session_fenced',
      `Commit to session "${sessionId}" refused, nothing was written: ${holderText(holder)} took the session over (it holds the session's lease), so it no longer runs here.`,
    );
    this.sessionId = sessionId;
    this.holder = { host: holder.host, pid: holder.pid, token: holder.token };
  }
}
