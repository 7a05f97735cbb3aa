import { dirname } from 'node:path';
import type * as Sqlite from 'node:sqlite';
import type { ApprovalRecord } from '../core/approvals.ts';
import { ConfigError, TroupeError } from '../core/errors.ts';
import type { RunEvent } from '../core/events.ts';
import type { JsonValue } from '../core/json.ts';
import { checkBatch, checkEventLimit } from './commit-rules.ts';
import {
  createGroupCommitter,
  type GroupCommitOptions,
  type GroupCommitter,
  type GroupTransaction,
  groupCommitSettings,
  groupCommitWriter,
} from './group-commit.ts';
import { loadNodeSqlite } from './node-sqlite.ts';
import {
  defaultLeaseTtlMs,
  type LeaseHolder,
  leasesTable,
  prepareLeases,
  thisProcess,
} from './session-lease.ts';
import { retryWhileBusy } from './sqlite-busy.ts';
import { startWriterThread, type WriterThread } from './sqlite-writer-thread.ts';
import type {
  CommitBatch,
  LeaseOptions,
  SessionSummary,
  StoredSession,
  StoredSessionState,
} from './store.ts';
import { storedSessionStatuses, storeLayoutVersion } from './store.ts';
import {
  ForeignStoreError,
  SessionFencedError,
  StoreClosedError,
  StoreCommitError,
  StoreCorruptError,
  StoreIoError,
  StoreLayoutError,
} from './store-errors.ts';
import { eventsTable, journalTable } from './stored-format/append-only-tables.ts';
import { migrateLayout } from './stored-format/layout-migrations.ts';
import {
  addToChecksum,
  beginChecksum,
  endChecksum,
  type RecordColumns,
  recordChecksum,
  verifyRecord,
} from './stored-format/record-checksum.ts';
import { decodeSessionDoc, encodeSessionDoc, sessionDocText } from './stored-format/session-doc.ts';
import { headsTable, prepareHeads, type SessionHead } from './stored-format/session-head.ts';
import type { StoredAgentCheckpoint } from './stored-format/stored-checkpoint.ts';
import { eventsOfRow } from './stored-format/stored-events.ts';
import {
  createMessageLog,
  type MessageLog,
  type MessageRows,
  messagesTable,
  verifiedMessages,
} from './stored-format/stored-messages.ts';
import type { SyncSessionStore } from './sync-store.ts';
import {
  parseStoredJson,
  validateAgentCheckpoint,
  validateApprovalRecord,
  validateStoredSession,
} from './validate-stored.ts';
import { prepareWrittenHeads, type SessionColumns } from './written-heads.ts';

/** Options of `createSqliteStore`. */
export interface SqliteStoreOptions {
  /**
   * How far each commit is pushed to disk before `commit` returns.
   * - `'full'` (the default): a committed checkpoint survives a power loss or an OS crash.
   * - `'normal'`: it survives the process crashing or being killed, but the last commits before a power loss may
   *   be lost; commits are faster.
   */
  synchronous?: 'full' | 'normal' | undefined;
  /**
   * How long a call waits for another connection to the same file (another process) to finish writing, in
   * milliseconds, before it fails with a StoreIoError whose `busy` is true. Default 5,000.
   */
  busyTimeoutMs?: number | undefined;
  /**
   * Create the file's folder (and the folders above it) when it is missing. Default false: a folder that does not
   * exist is a ConfigError, so that a mistyped path does not quietly start an empty store somewhere else.
   */
  createDirectories?: boolean | undefined;
  /**
   * How long a session's lease held by a process on another host lasts without being renewed, in milliseconds
   * (default 30,000). The holder renews it with every commit and on a timer; a holder on the same host is checked by
   * its pid instead, so a crashed process never makes anyone wait. See `recover()`'s `takeOver`.
   */
  leaseTtlMs?: number | undefined;
  /**
   * Group commit: the commits of many sessions made at the same moment (the same turn of the event loop, or within
   * `maxDelayMs`) are written in one transaction and share one fsync. `commit` then returns a promise that resolves
   * once the commit is on disk (the runtime waits for it before the effect it decided starts). A batch that breaks
   * the store's rules fails its own caller alone; a failure of the disk fails every commit of the group, and none
   * of them is written. Default false: each commit is its own transaction, on disk when `commit` returns.
   *
   * The event loop writes the groups; with `{ writer: 'thread' }` a worker thread of the store, with a connection of
   * its own, writes them while the event loop goes on with the sessions.
   */
  groupCommit?: boolean | GroupCommitOptions | undefined;
}

/**
 * A SQLite store with group commit: `commit` returns a promise, resolved once the commit is on disk. Reads see a
 * commit once its promise has resolved; `delete` and `close` first write the commits still waiting.
 */
export interface SqliteGroupCommitStore extends Omit<SqliteSessionStore, 'commit'> {
  commit(sessionId: string, batch: CommitBatch): Promise<void>;
}

/** The connection settings a SQLite store runs with, as SQLite reports them. */
export interface SqliteStoreSettings {
  /** `'wal'` for a file; `'memory'` for `':memory:'`. */
  journalMode: string;
  synchronous: 'full' | 'normal' | 'off' | 'extra';
  busyTimeoutMs: number;
  foreignKeys: boolean;
}

/** A session store in one SQLite file. */
export interface SqliteSessionStore extends SyncSessionStore {
  /** The database file. */
  readonly path: string;
  /** What the connection actually runs with (read from SQLite itself). */
  settings(): SqliteStoreSettings;
  /**
   * Appends audit records (see sqliteAuditSink) in one transaction, on disk when it returns. A record whose seq is
   * already stored is refused, and nothing of the batch is written.
   */
  appendAudit(records: readonly { readonly seq: number }[]): void;
  /** The audit records, in seq order (`after`: only those with a greater seq). */
  readAudit(after?: number): unknown[];
  /** The last audit record, or undefined when there is none. */
  lastAudit(): unknown;
  /**
   * Takes the session's lease for this process (see SessionStore): throws SessionLeasedError when another live
   * process holds it, unless `takeOver`.
   */
  acquireLease(sessionId: string, options?: LeaseOptions): void;
  /** Gives up this process's lease of the session. */
  releaseLease(sessionId: string): void;
}

/**
 * A durable SessionStore in one SQLite file, on Node's built-in `node:sqlite` (no dependency; Node 22.13 or newer,
 * or 22.5 with `--experimental-sqlite`). Every call answers synchronously; a `commit` that returns is on disk.
 *
 * - One transaction per commit: a batch is written whole or not at all, also when the process is killed mid-way.
 * - WAL mode: readers never wait for the writer; several processes may share the file (a writer waits up to
 *   `busyTimeoutMs` for another).
 * - The file is created when missing; its folder must exist (or pass `createDirectories: true`), else ConfigError.
 *   A file written with another storage layout is refused with StoreLayoutError; another application's SQLite
 *   database with ForeignStoreError (and left as it was); a file that is not a SQLite database, or is damaged or cut
 *   short, with StoreCorruptError.
 * - What is read back is checked (`load` checks the whole session, its checkpoints and approvals): a damaged record
 *   throws a StoreCorruptError naming the session instead of resuming from it.
 * - Values are stored as JSON text: what is committed must be JSON (a value that is not is refused with
 *   StoreCommitError, nothing written) and comes back as an equal copy, not the same object.
 *
 * `close()` when done: it ends the connection and removes the -wal and -shm files beside the database.
 */
export function createSqliteStore(
  path: string,
  options?: SqliteStoreOptions & { groupCommit?: false | undefined },
): SqliteSessionStore;
export function createSqliteStore(
  path: string,
  options: SqliteStoreOptions & { groupCommit: true | GroupCommitOptions },
): SqliteGroupCommitStore;
export function createSqliteStore(
  path: string,
  options?: SqliteStoreOptions,
): SqliteSessionStore | SqliteGroupCommitStore;
export function createSqliteStore(
  path: string,
  options: SqliteStoreOptions = {},
): SqliteSessionStore | SqliteGroupCommitStore {
  if (typeof path !== 'string' || path.length === 0)
    throw new ConfigError('createSqliteStore: the path must be a non-empty string (a file, or ":memory:").');
  const synchronous = options.synchronous ?? 'full';
  if (synchronous !== 'full' && synchronous !== 'normal')
    throw new ConfigError(
      `createSqliteStore: synchronous must be 'full' or 'normal'; got ${JSON.stringify(synchronous)}.`,
    );
  const busyTimeoutMs = options.busyTimeoutMs ?? 5_000;
  if (!Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0)
    throw new ConfigError(
      `createSqliteStore: busyTimeoutMs must be a non-negative integer; got ${String(busyTimeoutMs)}.`,
    );

  const createDirectories = options.createDirectories ?? false;
  if (typeof createDirectories !== 'boolean')
    throw new ConfigError(
      `createSqliteStore: createDirectories must be true or false; got ${JSON.stringify(createDirectories)}.`,
    );

  const leaseTtlMs = options.leaseTtlMs ?? defaultLeaseTtlMs;
  if (!Number.isSafeInteger(leaseTtlMs) || leaseTtlMs < 1)
    throw new ConfigError(
      `createSqliteStore: leaseTtlMs must be a positive integer; got ${String(leaseTtlMs)}.`,
    );

  const groupOption = options.groupCommit ?? false;
  const groupSettings =
    groupOption === false ? undefined : groupCommitSettings(groupOption, 'createSqliteStore');

  const db = openDatabase(path, synchronous, busyTimeoutMs, createDirectories);
  let sql: Statements;
  try {
    sql = prepareStatements(db, leaseTtlMs);
  } catch (error) {
    closeQuietly(db);
    throw storeErrorOf(error, path, openAction);
  }
  let closed = false;
  // What this store's commits wrote of each conversation: a commit writes the messages that are new since.
  const messageLog = createMessageLog();
  // Leases of sessions that wait (for people, for a slow tool) are renewed between commits. The timer never keeps
  // the process alive; a renewal that fails (the file busy) is tried again on the next tick, and a commit checks the
  // lease anyway.
  const renewal = setInterval(
    () => {
      try {
        if (!closed) sql.leases.renewAll();
      } catch {
        // Tried again on the next tick.
      }
    },
    Math.max(1, Math.floor(leaseTtlMs / 3)),
  );
  renewal.unref();

  const open = (): Statements => {
    if (closed) throw new StoreClosedError();
    return sql;
  };
  /** Runs reads in one read transaction (another process's commit must not show half), typed errors as `reading`. */
  const readingAll = <T>(action: string, read: () => T): T =>
    reading(action, () => {
      sql.beginRead.run();
      try {
        return read();
      } finally {
        rollback();
      }
    });
  /** Runs reads, turning SQLite's failures into typed errors. */
  const reading = <T>(action: string, read: () => T): T => {
    try {
      return read();
    } catch (error) {
      throw storeErrorOf(error, path, action);
    }
  };
  const rollback = (): void => {
    try {
      sql.rollback.run();
    } catch {
      // No transaction is left to roll back: SQLite already did.
    }
  };
  const store: SqliteSessionStore = {
    path,

    settings() {
      open();
      return reading('could not be read', () => ({
        journalMode: String(db.prepare('PRAGMA journal_mode').get()?.journal_mode),
        synchronous: synchronousNames[Number(db.prepare('PRAGMA synchronous').get()?.synchronous)] ?? 'off',
        busyTimeoutMs: Number(db.prepare('PRAGMA busy_timeout').get()?.timeout),
        foreignKeys: Number(db.prepare('PRAGMA foreign_keys').get()?.foreign_keys) === 1,
      }));
    },

    load(sessionId) {
      const s = open();
      return reading(`could not load session "${sessionId}"`, () => {
        // One read transaction: another process committing in between must not give a mix of two commits.
        s.beginRead.run();
        try {
          // The next commit of the session writes its whole conversation: what is loaded may resume elsewhere.
          messageLog.forget(sessionId);
          const row = s.selectSession.get(sessionId);
          if (row === undefined) {
            // A head without its row: the row was lost, not deleted (a delete takes the head with it).
            if (s.heads.has(sessionId))
              throw new StoreCorruptError(sessionId, 'its session row is lost (its head is still there)');
            return undefined;
          }
          const messages = verifiedMessages(
            sessionId,
            s.selectMessages.all(sessionId),
            s.heads.read(sessionId),
          ).map((doc, index) => parseStoredJson(sessionId, `message ${index}`, doc));
          const session = sessionOf(sessionId, row, messages);
          const runs = new Map<string, StoredAgentCheckpoint>();
          for (const run of s.selectRuns.all(sessionId)) {
            const route = String(run.route);
            const where = `nested run "${route}"`;
            verifyRecord(sessionId, where, 'runs', run);
            runs.set(
              route,
              validateAgentCheckpoint(sessionId, parseStoredJson(sessionId, where, run.doc), where),
            );
          }
          const journal = new Map<string, JsonValue>();
          for (const entry of s.selectJournal.all(sessionId)) {
            const key = String(entry.key);
            verifyRecord(sessionId, `journal entry "${key}"`, 'journal', entry);
            journal.set(key, parseStoredJson(sessionId, `journal entry "${key}"`, entry.doc));
          }
          const approvals = s.selectApprovals
            .all(sessionId)
            .map((approval) => approvalOf(sessionId, approval));
          const last = s.selectLastSeq.get(sessionId)?.last;
          const lastSeq = typeof last === 'number' ? last : -1;
          s.heads.check(sessionId, {
            lastSeq,
            runs: runs.size,
            journal: journal.size,
            approvals: approvals.length,
          });
          const state: StoredSessionState = { session, runs, journal, approvals, lastSeq };
          return state;
        } finally {
          rollback();
        }
      });
    },

    commit(sessionId, batch) {
      const s = open();
      let rows: CommitRows;
      try {
        rows = commitRowsOf(sessionId, batch, messageLog);
      } catch (error) {
        messageLog.forget(sessionId);
        throw error;
      }
      // A relaxed commit (events only) skips the fsync a FULL store makes: WAL mode keeps it through a process crash,
      // and the next FULL commit's fsync takes it to the disk along with its own.
      const relax = rows.relaxed && synchronous === 'full';
      // (A PRAGMA takes effect when it is prepared: these run as plain statements, never kept prepared.)
      if (relax) db.exec('PRAGMA synchronous = NORMAL');
      try {
        s.beginWrite.run();
      } catch (error) {
        if (relax) db.exec('PRAGMA synchronous = FULL');
        messageLog.forget(sessionId);
        throw storeErrorOf(error, path, `could not commit session "${sessionId}"`);
      }
      try {
        writeCommit(s, rows);
        s.commit.run();
      } catch (error) {
        rollback();
        messageLog.forget(sessionId);
        throw commitErrorOf(error, path, sessionId);
      } finally {
        if (relax) db.exec('PRAGMA synchronous = FULL');
      }
    },

    readEvents(sessionId, after, limit) {
      checkEventLimit(limit);
      const s = open();
      return readingAll(`could not read the events of session "${sessionId}"`, () => {
        // A row holds one commit's events: `limit` rows hold at least `limit` events.
        const events: RunEvent[] = [];
        for (const row of s.selectEvents.all(sessionId, after, limit ?? -1)) {
          verifyRecord(sessionId, `the event row ending at seq ${String(row.seq)}`, 'events', row);
          eventsOfRow(sessionId, row.first_seq, row.seq, row.doc, after, events);
          if (limit !== undefined && events.length >= limit) break;
        }
        if (limit !== undefined && events.length > limit) events.length = limit;
        // The log has no gaps (commits refuse them): a missing seq is a lost record.
        for (const [index, event] of events.entries()) {
          const expected =
            index === 0 ? (after < 0 ? 0 : Math.floor(after) + 1) : (events[index - 1] as RunEvent).seq + 1;
          if (event.seq !== expected)
            throw new StoreCorruptError(
              sessionId,
              `its event log lacks event ${expected} (the next stored event is ${event.seq})`,
            );
        }
        // Nor does it end before the last event its head counts, unless `limit` cut it.
        if (
          (limit === undefined || events.length < limit) &&
          s.selectRowExists.get(sessionId) !== undefined
        ) {
          const head = s.heads.read(sessionId);
          const reached = events.at(-1)?.seq ?? Math.max(after, -1);
          if (reached < head.lastSeq)
            throw new StoreCorruptError(
              sessionId,
              `its event log ends at seq ${reached}, but its head says ${head.lastSeq}: events were lost`,
            );
        }
        return events;
      });
    },

    list(query) {
      const s = open();
      return readingAll('could not list its sessions', () => {
        s.heads.checkAll();
        const rows =
          query?.status === undefined
            ? s.listSessions.all()
            : s.listSessionsByStatus.all(JSON.stringify(query.status));
        const summaries = rows.map(summaryOf);
        // An id is read from the row here but from an index by the check above: a damaged id has no head.
        for (const summary of summaries)
          if (!s.heads.has(summary.sessionId))
            throw new StoreCorruptError(summary.sessionId, 'its session row and its head do not match');
        return summaries;
      });
    },

    approvals(query) {
      const s = open();
      return readingAll('could not list approvals', () => {
        const sessionId = query?.sessionId;
        // Every record of the sessions asked about is read and verified, then filtered by status: a damaged status
        // column must not hide a record, and the count per session must be the one its head keeps.
        const records = (
          sessionId === undefined ? s.allApprovals.all() : s.selectApprovals.all(sessionId)
        ).map((row) => approvalOf(String(row.session_id), row));
        const counted = new Map<string, number>();
        for (const record of records) counted.set(record.sessionId, (counted.get(record.sessionId) ?? 0) + 1);
        const sessions =
          sessionId === undefined
            ? s.sessionIds.all().map((row) => String(row.id))
            : s.selectRowExists.get(sessionId) === undefined
              ? []
              : [sessionId];
        for (const id of sessions) {
          const head = s.heads.read(id);
          if (head.approvals !== (counted.get(id) ?? 0))
            throw new StoreCorruptError(
              id,
              `it holds ${counted.get(id) ?? 0} approval records, but its head says ${head.approvals}: records were lost`,
            );
        }
        const statuses = query?.status === undefined ? undefined : new Set<string>(query.status);
        return statuses === undefined ? records : records.filter((record) => statuses.has(record.status));
      });
    },

    delete(sessionId) {
      const s = open();
      try {
        // Runs, journal, messages, events and approvals go with the row (ON DELETE CASCADE), in the same statement.
        messageLog.forget(sessionId);
        s.deleteSession.run(sessionId);
        s.written.forget(sessionId);
        s.leases.release(sessionId);
        s.deleteLease.run(sessionId);
      } catch (error) {
        throw storeErrorOf(error, path, `could not delete session "${sessionId}"`);
      }
    },

    appendAudit(records) {
      const s = open();
      if (records.length === 0) return;
      const docs = records.map((record) => {
        if (!Number.isSafeInteger(record.seq))
          throw new StoreCommitError('(audit log)', 'invalid_value', 'an audit record has no integer seq.');
        return [record.seq, JSON.stringify(record)] as const;
      });
      try {
        s.beginWrite.run();
      } catch (error) {
        throw storeErrorOf(error, path, 'could not append to the audit log');
      }
      try {
        for (const [seq, doc] of docs) s.insertAudit.run(seq, doc);
        s.commit.run();
      } catch (error) {
        rollback();
        throw storeErrorOf(error, path, 'could not append to the audit log');
      }
    },

    readAudit(after = 0) {
      const s = open();
      return reading('could not read the audit log', () =>
        s.selectAudit.all(after).map((row) => JSON.parse(String(row.doc)) as unknown),
      );
    },

    lastAudit() {
      const s = open();
      return reading('could not read the audit log', () => {
        const row = s.selectLastAudit.get();
        return row === undefined ? undefined : (JSON.parse(String(row.doc)) as unknown);
      });
    },

    acquireLease(sessionId, leaseOptions) {
      const s = open();
      // Another process may have written the session since this store last did.
      messageLog.forget(sessionId);
      try {
        s.leases.acquire(sessionId, leaseOptions);
      } catch (error) {
        throw storeErrorOf(error, path, `could not take the lease of session "${sessionId}"`);
      }
    },

    releaseLease(sessionId) {
      const s = open();
      try {
        s.leases.release(sessionId);
      } catch (error) {
        throw storeErrorOf(error, path, `could not release the lease of session "${sessionId}"`);
      }
    },

    close() {
      if (closed) return;
      clearInterval(renewal);
      try {
        sql.leases.releaseAll();
      } catch {
        // A lease left behind is taken at once by the next process on this host (this pid is gone by then).
      }
      closed = true;
      try {
        db.close();
      } catch (error) {
        throw storeErrorOf(error, path, 'could not be closed');
      }
    },
  };
  if (groupSettings === undefined) return store;

  // Group commit writes on a thread of its own (a second connection for the writes; this one reads), or on the
  // event loop: the commits of a group run, each in a savepoint, inside one transaction of this connection.
  const writer: GroupWriter =
    groupCommitWriter(groupOption as true | GroupCommitOptions, 'createSqliteStore') === 'thread'
      ? startWriterThread(
          { path, synchronous, busyTimeoutMs, leaseTtlMs, holder: thisProcess },
          groupSettings,
        )
      : inlineGroupWriter(
          createGroupCommitter(
            sqliteGroupTransaction(db, sql, path, synchronous, () => open()),
            groupSettings,
          ),
        );
  return {
    ...store,
    commit(sessionId, batch) {
      let rows: CommitRows;
      try {
        open();
        // Made now: what is committed is the batch as it was when `commit` was called.
        rows = commitRowsOf(sessionId, batch, messageLog);
      } catch (error) {
        messageLog.forget(sessionId);
        return Promise.reject(error);
      }
      return writer.commit(rows).catch((error: unknown) => {
        // Whether the session's messages were written is not known: its next commit writes them all.
        messageLog.forget(sessionId);
        throw error;
      });
    },
    delete(sessionId) {
      // The commits made before the delete are written before it.
      if (!closed) writer.drain();
      store.delete(sessionId);
    },
    close() {
      if (closed) return;
      try {
        writer.close();
      } finally {
        store.close();
      }
    },
  };
}

/** What a group-commit store writes through: its groups' writer, on the event loop or on a thread. */
type GroupWriter = Pick<WriterThread, 'commit' | 'drain' | 'close'>;

/** Group commit on the event loop, as a writer: draining and closing write the group still waiting. */
function inlineGroupWriter(committer: GroupCommitter<CommitRows>): GroupWriter {
  return {
    commit: (rows) => committer.commit(rows, rows.relaxed),
    drain: () => committer.flush(),
    close: () => committer.flush(),
  };
}

/**
 * Group commit's shared transaction on one connection: each commit in a savepoint, or without one (see `writeGroup`).
 * `check` runs before a group begins (throws when the store is closed).
 */
export function sqliteGroupTransaction(
  db: Sqlite.DatabaseSync,
  sql: Statements,
  path: string,
  synchronous: 'full' | 'normal',
  check: () => void,
): GroupTransaction<CommitRows> {
  let relaxedGroup = false;
  const endRelaxed = (): void => {
    if (relaxedGroup) db.exec('PRAGMA synchronous = FULL');
    relaxedGroup = false;
  };
  const rollback = (): void => {
    try {
      sql.rollback.run();
    } catch {
      // No transaction is left to roll back: SQLite already did.
    }
  };
  return {
    begin(durable) {
      check();
      // A group of relaxed commits only (events) skips the fsync a FULL store makes (see `commit`).
      relaxedGroup = !durable && synchronous === 'full';
      if (relaxedGroup) db.exec('PRAGMA synchronous = NORMAL');
      try {
        sql.beginWrite.run();
      } catch (error) {
        endRelaxed();
        throw storeErrorOf(error, path, 'could not begin a group commit');
      }
    },
    write(rows, alone) {
      if (!alone) {
        try {
          writeCommit(sql, rows);
        } catch (error) {
          throw commitErrorOf(error, path, rows.sessionId);
        }
        return;
      }
      try {
        sql.savepoint.run();
      } catch (error) {
        throw storeErrorOf(error, path, `could not commit session "${rows.sessionId}"`);
      }
      try {
        writeCommit(sql, rows);
        sql.release.run();
      } catch (error) {
        try {
          sql.rollbackTo.run();
          sql.release.run();
        } catch {
          // SQLite ended the whole transaction: the group sees it and fails.
        }
        throw commitErrorOf(error, path, rows.sessionId);
      }
    },
    // A batch that breaks the rules, comes from a process that lost the session's lease, or belongs to a session
    // whose stored records are damaged fails alone; a failure of the file or the disk fails the group.
    ownFault: (error) =>
      error instanceof StoreCommitError ||
      error instanceof SessionFencedError ||
      (error instanceof StoreCorruptError && error.sessionId !== undefined),
    open: () => db.isTransaction,
    commit(size) {
      try {
        sql.commit.run();
      } catch (error) {
        throw storeErrorOf(error, path, `could not commit a group of ${size} commits`);
      } finally {
        endRelaxed();
      }
    },
    rollback() {
      rollback();
      endRelaxed();
    },
  };
}

type Row = Record<string, Sqlite.SQLOutputValue>;

const openAction = 'could not be opened';

const synchronousNames: readonly SqliteStoreSettings['synchronous'][] = ['off', 'normal', 'full', 'extra'];

/** `node:sqlite`, loaded when a SQLite store is created: importing Troupe never needs it. */
function sqliteModule(): typeof Sqlite {
  const module = loadNodeSqlite();
  if (module === undefined)
    throw new ConfigError(
      'createSqliteStore needs node:sqlite, built into Node.js 22.13 and newer (on 22.5 to 22.12, run node with --experimental-sqlite).',
    );
  return module;
}

export function openDatabase(
  path: string,
  synchronous: 'full' | 'normal',
  busyTimeoutMs: number,
  createDirectories: boolean,
): Sqlite.DatabaseSync {
  const { DatabaseSync } = sqliteModule();
  // node:fs is fetched here, not imported: importing it as a module costs every importer of Troupe at startup.
  const { existsSync, mkdirSync } = process.getBuiltinModule('node:fs');
  if (path !== ':memory:' && !path.startsWith('file:')) {
    const folder = dirname(path);
    if (!createDirectories && !existsSync(folder))
      throw new ConfigError(
        `createSqliteStore: the folder "${folder}" of "${path}" does not exist. Check the path, create the folder, or pass { createDirectories: true }.`,
      );
    try {
      if (createDirectories) mkdirSync(folder, { recursive: true });
    } catch (error) {
      throw new StoreIoError(path, `could not be created: ${messageOf(error)}`, {
        busy: false,
        cause: error,
      });
    }
  }
  try {
    // SQLite does not call its busy handler everywhere opening needs a lock: those steps are retried, within the
    // same busy timeout, so that processes opening one new file at once all get it.
    return retryWhileBusy(busyTimeoutMs, () => {
      const db = new DatabaseSync(path);
      try {
        // The busy timeout first: switching to WAL and creating the schema may wait for another process.
        db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
        // Another application's database is refused before anything of it changes (WAL mode is a property of the file).
        refuseForeignDatabase(db, path);
        db.exec('PRAGMA journal_mode = WAL');
        db.exec(`PRAGMA synchronous = ${synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
        db.exec('PRAGMA foreign_keys = ON');
        db.exec(connectionTuning);
        checkLayout(db, path);
        return db;
      } catch (error) {
        closeQuietly(db);
        throw error;
      }
    });
  } catch (error) {
    throw storeErrorOf(error, path, openAction);
  }
}

/**
 * How the connection uses memory and the write-ahead log; none of it changes what is stored or when a commit is on
 * disk.
 * - temp_store MEMORY: SQLite saves a page's old content before a savepoint (each commit of a group) or a statement
 *   that writes several rows changes it, to undo just that part; in memory instead of a temporary file, this was
 *   about a third of a commit's CPU time with group commit.
 * - cache_size: up to 64 MiB of pages kept between transactions (SQLite's default is 2 MiB): with thousands of
 *   sessions, each commit touches pages of its own session, which were otherwise read back from the file each time.
 * - wal_autocheckpoint: the log is copied into the database file once it holds 8,192 pages (32 MiB; the default is
 *   1,000), so that the pages many commits touch are copied once, not after every group; journal_size_limit
 *   shortens the log file back to 64 MiB after a checkpoint when it grew beyond.
 */
const connectionTuning = `PRAGMA temp_store = MEMORY;
PRAGMA cache_size = -65536;
PRAGMA wal_autocheckpoint = 8192;
PRAGMA journal_size_limit = 67108864;`;

const tables = [
  'meta',
  'sessions',
  'runs',
  'journal',
  'events',
  'messages',
  'approvals',
  'audit_log',
  'heads',
  'leases',
] as const;

/** The audit log (one JSON record per row, by seq): added in layout 4. */
const auditTable = 'CREATE TABLE IF NOT EXISTS audit_log (seq INTEGER PRIMARY KEY, doc TEXT NOT NULL);';

/**
 * The layout. Children of a session row go with it (ON DELETE CASCADE); a session row is therefore replaced with
 * an upsert, never INSERT OR REPLACE, which would delete the row, and its events with it, first. Approvals keep
 * a rowid: it is the order they were first recorded in, which approvals() lists them by.
 */
const schema = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY,
  status TEXT NOT NULL,
  entry TEXT NOT NULL,
  agent TEXT NOT NULL,
  turns INTEGER NOT NULL,
  updated_at REAL NOT NULL,
  doc TEXT NOT NULL,
  sum INTEGER NOT NULL
);
-- By status alone: an entry moves only when a session's status changes, not with every commit's updated_at.
CREATE INDEX IF NOT EXISTS sessions_by_status ON sessions (status);
CREATE TABLE IF NOT EXISTS runs (
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  route TEXT NOT NULL,
  doc TEXT NOT NULL,
  sum INTEGER NOT NULL,
  PRIMARY KEY (session_id, route)
) WITHOUT ROWID;
${journalTable}
${eventsTable}
${messagesTable}
CREATE TABLE IF NOT EXISTS approvals (
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  call_id TEXT NOT NULL,
  status TEXT NOT NULL,
  requested_at REAL NOT NULL,
  decided_at REAL,
  doc TEXT NOT NULL,
  sum INTEGER NOT NULL,
  PRIMARY KEY (session_id, call_id)
);
CREATE INDEX IF NOT EXISTS approvals_by_status ON approvals (status);
${auditTable}
${headsTable}
${leasesTable}
INSERT OR IGNORE INTO meta (key, value) VALUES ('layout', ${storeLayoutVersion});
`;

/** Creates the layout in a new file, or checks that an existing file holds this version's layout. */
function checkLayout(db: Sqlite.DatabaseSync, path: string): void {
  const tablesIn = (): Set<string> =>
    new Set(
      db
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table'")
        .all()
        .map((row) => String(row.name)),
    );
  let found = tablesIn();
  if (found.size === 0) {
    // IF NOT EXISTS / OR IGNORE: another process may create the same file at the same moment.
    db.exec('BEGIN IMMEDIATE');
    try {
      db.exec(schema);
      db.exec('COMMIT');
    } catch (error) {
      closeTransaction(db);
      throw error;
    }
    found = tablesIn();
  }
  refuseForeignDatabase(db, path);
  const stored = db.prepare("SELECT value FROM meta WHERE key = 'layout'").get()?.value;
  const layout = migrateLayout(db, stored);
  if (layout !== stored) found = tablesIn();
  if (layout === undefined)
    throw new StoreCorruptError(undefined, `"${path}" has no storage layout version in its meta table.`);
  if (layout !== storeLayoutVersion)
    throw new StoreLayoutError(
      `The store "${path}"`,
      typeof layout === 'number' || typeof layout === 'string' ? layout : String(layout),
      storeLayoutVersion,
    );
  for (const table of tables)
    if (!found.has(table)) throw new StoreCorruptError(undefined, `"${path}" has lost its ${table} table.`);
}

/**
 * Refuses a SQLite database with tables of its own but not those of a Troupe store (another application's file):
 * neither Troupe's `meta` table nor, where an application has a `meta` table of its own, a layout version and the
 * `sessions` table.
 */
function refuseForeignDatabase(db: Sqlite.DatabaseSync, path: string): void {
  const found = new Set(
    db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'table'")
      .all()
      .map((row) => String(row.name)),
  );
  if (found.size === 0) return;
  if (!found.has('meta')) throw new ForeignStoreError(path);
  if (found.has('sessions')) return;
  let layout: unknown;
  try {
    layout = db.prepare("SELECT value FROM meta WHERE key = 'layout'").get()?.value;
  } catch {
    // A `meta` table without Troupe's columns.
    throw new ForeignStoreError(path);
  }
  if (layout === undefined) throw new ForeignStoreError(path);
}

export type Statements = ReturnType<typeof prepareStatements>;

/** Every statement the store runs, prepared once. */
export function prepareStatements(db: Sqlite.DatabaseSync, leaseTtlMs: number, holder?: LeaseHolder) {
  const approvalColumns =
    'SELECT session_id, call_id, status, requested_at, decided_at, doc, sum FROM approvals';
  const statusIn = 'status IN (SELECT value FROM json_each(?))';
  const summaryColumns = `SELECT id, status, entry, agent, turns, updated_at,
      (SELECT count(*) FROM approvals a WHERE a.session_id = s.id AND a.status = 'pending') AS pending
    FROM sessions s`;
  return {
    // Transaction control is prepared too: parsing it on every commit costs a few microseconds each time.
    beginRead: db.prepare('BEGIN'),
    beginWrite: db.prepare('BEGIN IMMEDIATE'),
    savepoint: db.prepare('SAVEPOINT troupe_commit'),
    release: db.prepare('RELEASE troupe_commit'),
    rollbackTo: db.prepare('ROLLBACK TO troupe_commit'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
    insertAudit: db.prepare('INSERT INTO audit_log (seq, doc) VALUES (?, ?)'),
    selectAudit: db.prepare('SELECT doc FROM audit_log WHERE seq > ? ORDER BY seq'),
    selectLastAudit: db.prepare('SELECT doc FROM audit_log ORDER BY seq DESC LIMIT 1'),
    selectSession: db.prepare(
      'SELECT id, status, entry, agent, turns, updated_at, doc, sum FROM sessions WHERE id = ?',
    ),
    selectRowExists: db.prepare('SELECT 1 AS found FROM sessions WHERE id = ?'),
    selectRuns: db.prepare(
      'SELECT session_id, route, doc, sum FROM runs WHERE session_id = ? ORDER BY route',
    ),
    selectJournal: db.prepare(
      'SELECT session_id, key, doc, sum FROM journal WHERE session_id = ? ORDER BY key',
    ),
    // One statement for the two reads every commit makes: the session's head and its lease (nulls when absent).
    selectHeadAndLease: db.prepare(
      `SELECT h.session_id, h.last_seq, h.runs, h.journal, h.approvals, h.messages, h.messages_sum, h.sum,
         l.host, l.pid, l.token, l.expires_at
       FROM (SELECT ?1 AS id) k LEFT JOIN heads h ON h.session_id = k.id LEFT JOIN leases l ON l.session_id = k.id`,
    ),
    selectMessages: db.prepare('SELECT idx, doc, sum FROM messages WHERE session_id = ? ORDER BY idx'),
    selectMessageSum: db.prepare('SELECT sum FROM messages WHERE session_id = ? AND idx = ?'),
    deleteMessagesFrom: db.prepare('DELETE FROM messages WHERE session_id = ? AND idx >= ?'),
    insertMessages: prepareRowInserts(db, 'messages', ['session_id', 'idx', 'doc', 'sum']),
    selectLastSeq: db.prepare('SELECT max(seq) AS last FROM events WHERE session_id = ?'),
    selectEvents: db.prepare(
      'SELECT session_id, first_seq, seq, doc, sum FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?',
    ),
    selectApprovals: db.prepare(`${approvalColumns} WHERE session_id = ? ORDER BY rowid`),
    allApprovals: db.prepare(`${approvalColumns} ORDER BY rowid`),
    sessionIds: db.prepare('SELECT id FROM sessions'),
    listSessions: db.prepare(`${summaryColumns} ORDER BY updated_at, s.rowid`),
    listSessionsByStatus: db.prepare(`${summaryColumns} WHERE s.${statusIn} ORDER BY updated_at, s.rowid`),
    upsertSession: db.prepare(
      `INSERT INTO sessions (id, status, entry, agent, turns, updated_at, doc, sum) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, entry = excluded.entry, agent = excluded.agent,
         turns = excluded.turns, updated_at = excluded.updated_at, doc = excluded.doc, sum = excluded.sum`,
    ),
    updateSession: db.prepare(
      `UPDATE sessions SET status = ?, entry = ?, agent = ?, turns = ?, updated_at = ?, doc = ?, sum = ?
       WHERE id = ?`,
    ),
    deleteRuns: db.prepare('DELETE FROM runs WHERE session_id = ?'),
    deleteJournal: db.prepare('DELETE FROM journal WHERE session_id = ?'),
    deleteRun: db.prepare('DELETE FROM runs WHERE session_id = ? AND route = ?'),
    // A record is inserted when new (the head counts it) and updated otherwise: an upsert would not tell which.
    insertRun: db.prepare(
      'INSERT INTO runs (session_id, route, doc, sum) VALUES (?, ?, ?, ?) ON CONFLICT (session_id, route) DO NOTHING',
    ),
    updateRun: db.prepare('UPDATE runs SET doc = ?, sum = ? WHERE session_id = ? AND route = ?'),
    insertJournal: db.prepare(
      'INSERT INTO journal (session_id, key, doc, sum) VALUES (?, ?, ?, ?) ON CONFLICT (session_id, key) DO NOTHING',
    ),
    updateJournal: db.prepare('UPDATE journal SET doc = ?, sum = ? WHERE session_id = ? AND key = ?'),
    insertEvents: db.prepare(
      'INSERT INTO events (session_id, first_seq, seq, doc, sum) VALUES (?, ?, ?, ?, ?)',
    ),
    insertApproval: db.prepare(
      `INSERT INTO approvals (session_id, call_id, status, requested_at, decided_at, doc, sum) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (session_id, call_id) DO NOTHING`,
    ),
    updateApproval: db.prepare(
      `UPDATE approvals SET status = ?, requested_at = ?, decided_at = ?, doc = ?, sum = ?
       WHERE session_id = ? AND call_id = ?`,
    ),
    deleteSession: db.prepare('DELETE FROM sessions WHERE id = ?'),
    deleteLease: db.prepare('DELETE FROM leases WHERE session_id = ?'),
    heads: prepareHeads(db),
    written: prepareWrittenHeads(
      db,
      holder === undefined ? { ttlMs: leaseTtlMs } : { ttlMs: leaseTtlMs, holder },
    ),
    leases: prepareLeases(db, holder === undefined ? { ttlMs: leaseTtlMs } : { ttlMs: leaseTtlMs, holder }),
  };
}

/** The most rows one INSERT statement writes; a commit with more writes them in several. */
const rowsPerInsert = 8;

/**
 * Inserts rows of an append-only table given as their columns one after the other (`columns` each, in that order):
 * one statement for up to `rowsPerInsert` rows (SQLite's work per statement is paid once for them), each size
 * prepared on first use.
 */
function prepareRowInserts(
  db: Sqlite.DatabaseSync,
  table: string,
  columns: readonly string[],
): (values: Sqlite.SQLInputValue[]) => void {
  const byCount: Sqlite.StatementSync[] = [];
  const width = columns.length;
  const statementFor = (count: number): Sqlite.StatementSync => {
    let statement = byCount[count];
    if (statement === undefined) {
      const row = `(${Array.from({ length: width }, () => '?').join(', ')})`;
      statement = db.prepare(
        `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${Array.from({ length: count }, () => row).join(', ')}`,
      );
      byCount[count] = statement;
    }
    return statement;
  };
  return (values) => {
    const rows = values.length / width;
    for (let first = 0; first < rows; first += rowsPerInsert) {
      const count = Math.min(rowsPerInsert, rows - first);
      const part =
        first === 0 && count === rows ? values : values.slice(first * width, (first + count) * width);
      statementFor(count).run(...part);
    }
  };
}

/** Whether an INSERT … ON CONFLICT DO NOTHING wrote its row. */
function inserted(result: Sqlite.StatementResultingChanges): boolean {
  return Number(result.changes) > 0;
}

/**
 * A value of a batch as a commit's rows carry it: a primitive as it is; anything else (the rules refuse it) as an
 * empty object, so that the rows can be handed to another thread whatever the batch held.
 */
export type Plain = string | number | boolean | bigint | null | undefined | Record<string, never>;

function plain(value: unknown): Plain {
  if (value === null || value === undefined) return value;
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'bigint':
      return value;
    default:
      return {};
  }
}

/**
 * One commit as the store writes it: the batch's values as JSON text and the columns of its rows, made when `commit`
 * is called (what is committed is the batch as it was then; a value that is not JSON writes nothing). Strings and
 * numbers in plain objects and arrays: group commit hands its values to its writer thread as one list
 * (commit-rows-wire.ts). The rules of commit-rules.ts read it like the batch.
 */
export interface CommitRows {
  sessionId: string;
  relaxed: boolean;
  /** The running session's own batch (fenced by its lease), not a decision on one of its approvals. */
  runsSession: boolean;
  clearTurn: boolean;
  session:
    | { id: Plain; status: Plain; entry: Plain; agent: Plain; turns: Plain; updatedAt: Plain; doc: string }
    | undefined;
  /** The conversation's messages the commit writes (with the session row). */
  messages: MessageRows | undefined;
  runs: [route: Plain, doc: string | null][];
  journal: [key: Plain, doc: string][];
  /** The events' columns the commit rules read; the events are written as `eventsDoc`. */
  events: { seq: Plain; time: Plain; agent: Plain; type: Plain }[];
  /** The events as their row's JSON text (stored-events.ts); empty without events. */
  eventsDoc: string;
  approvals: { callId: Plain; status: Plain; requestedAt: Plain; decidedAt: Plain; doc: string }[];
}

/**
 * The rows of a commit (see CommitRows); throws StoreCommitError for a value that is not JSON. With the store's
 * `log`, the session row's messages that its last commit wrote are not written again; without it, all of them are.
 */
export function commitRowsOf(sessionId: string, batch: CommitBatch, log?: MessageLog): CommitRows {
  const json = (value: unknown, what: string): string => {
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch (error) {
      throw new StoreCommitError(sessionId, 'invalid_value', `${what} is not JSON: ${messageOf(error)}`, {
        cause: error,
      });
    }
    if (text === undefined) throw new StoreCommitError(sessionId, 'invalid_value', `${what} is not JSON`);
    return text;
  };
  const session = batch.session;
  const encoded = session === undefined ? undefined : encodeSessionDoc(session);
  const rows: CommitRows = {
    sessionId,
    relaxed: batch.relaxed === true,
    runsSession: runsTheSession(batch),
    clearTurn: batch.clearTurn === true,
    session:
      session === undefined
        ? undefined
        : {
            id: plain(session?.id),
            status: plain(session?.status),
            entry: plain(session?.entry),
            agent: plain(session?.agent),
            turns: plain(session?.turns),
            updatedAt: plain(session?.updatedAt),
            // The conversation the row holds several times is stored once (row-encoding.ts); the text is made
            // below, with the messages.
            doc: '',
          },
    messages: undefined,
    // Entries read by index: destructuring them would go through an iterator.
    runs: (batch.runs ?? []).map((entry) => [
      plain(entry[0]),
      entry[1] === null ? null : json(entry[1], `the checkpoint of nested run "${entry[0]}"`),
    ]),
    journal: (batch.journal ?? []).map((entry) => [
      plain(entry[0]),
      json(entry[1], `journal entry "${entry[0]}"`),
    ]),
    events: [],
    eventsDoc: '',
    approvals: (batch.approvals ?? []).map((record) => {
      const doc = json(record, `approval ${String(record.callId)}`);
      return {
        callId: plain(record.callId),
        status: plain(record.status),
        requestedAt: plain(record.requestedAt),
        decidedAt: typeof record.decidedAt === 'number' ? record.decidedAt : null,
        doc,
      };
    }),
  };
  const events = batch.events;
  if (events !== undefined && events.length > 0) {
    // The events' columns as the row stores them (stored-events.ts), serialized in one call.
    const stored = new Array<unknown[]>(events.length);
    rows.events = new Array(events.length);
    let plainData = true;
    for (let index = 0; index < events.length; index++) {
      const event = events[index] as RunEvent;
      const agent = plain(event.agent);
      const time = plain(event.time);
      const type = plain(event.type);
      rows.events[index] = { seq: plain(event.seq), time, agent, type };
      const data: unknown = event.data;
      // What JSON.stringify would not write as JSON by itself (inside the list it becomes null): serialized alone,
      // which refuses it by name.
      if (
        data === undefined ||
        typeof data === 'function' ||
        typeof data === 'symbol' ||
        typeof (data as { toJSON?: unknown } | null)?.toJSON === 'function'
      )
        plainData = false;
      stored[index] = [
        time,
        agent,
        typeof event.route === 'string' ? event.route : agent,
        typeof event.depth === 'number' ? event.depth : 0,
        type,
        event.sessionId === sessionId || typeof event.sessionId !== 'string' ? null : event.sessionId,
        data,
      ];
    }
    if (!plainData)
      for (let index = 0; index < events.length; index++) {
        const event = events[index] as RunEvent;
        (stored[index] as unknown[])[6] = JSON.parse(
          json(event.data, `the data of event ${String(event.seq)}`),
        );
      }
    let doc: string | undefined;
    try {
      doc = JSON.stringify(stored);
    } catch {
      // The event whose data is not JSON, by name.
      for (let index = 0; index < events.length; index++) {
        const event = events[index] as RunEvent;
        json(event.data, `the data of event ${String(event.seq)}`);
      }
    }
    rows.eventsDoc = doc ?? json(stored, 'the events');
  }
  // Last: the log remembers the messages as written once every value of the batch is known to be JSON.
  if (encoded !== undefined && session !== undefined && rows.session !== undefined) {
    const rowJson = json(encoded.row, 'the session row');
    const messageLog = log ?? createMessageLog();
    const conversation = messageLog.write(sessionId, encoded.messages, (message, index) =>
      json(message, `message ${index} of the conversation`),
    );
    rows.messages = conversation.rows;
    rows.session.doc = sessionDocText(rowJson, conversation.stored, conversation.tail);
    // A session that stops running here is not remembered: the log holds the conversations of running sessions
    // only (a session's next turn writes its conversation once, then what is new).
    if (session.status !== 'running' && session.status !== 'awaiting') messageLog.forget(sessionId);
  }
  return rows;
}

/**
 * Writes one commit's rows inside the caller's transaction (or savepoint): checks the lease and the rules, writes
 * the records and the session's head. Throws SQLite's error or the store's typed one; the caller undoes what it wrote.
 */
export function writeCommit(s: Statements, rows: CommitRows): void {
  const sessionId = rows.sessionId;
  // The rules passed (checkBatch, below, before anything is written): every column has the type they require.
  const session = rows.session as
    | (Omit<StoredSession, 'id'> & { doc: string; status: StoredSession['status'] })
    | undefined;
  let columns: SessionColumns | undefined;
  if (session !== undefined) {
    beginChecksum('sessions');
    addToChecksum(sessionId);
    addToChecksum(session.status);
    addToChecksum(session.entry);
    addToChecksum(session.agent);
    addToChecksum(session.turns);
    addToChecksum(session.updatedAt);
    addToChecksum(session.doc);
    const sum = endChecksum();
    columns = [
      session.status,
      session.entry,
      session.agent,
      session.turns,
      session.updatedAt,
      session.doc,
      sum,
    ];
  }
  // A session this connection runs: its row is written where its head and lease are as this connection left them
  // (written-heads.ts), without reading them first.
  let before = columns !== undefined ? s.written.remembered(sessionId) : undefined;
  if (before !== undefined && columns !== undefined) {
    let passes = true;
    try {
      checkBatch(sessionId, rows, before.lastSeq, true);
    } catch {
      // Refused against the remembered head: the stored one decides (below).
      passes = false;
    }
    if (!passes || !s.written.updateIfUnchanged(sessionId, columns)) before = undefined;
  }
  if (before === undefined) before = readHeadAndCheck(s, rows, columns);
  const head: SessionHead = before ?? {
    lastSeq: -1,
    runs: 0,
    journal: 0,
    approvals: 0,
    messages: 0,
    messagesSum: 0,
  };
  if (rows.messages !== undefined) writeMessages(s, sessionId, rows.messages, head);
  if (rows.clearTurn) {
    if (head.runs > 0) s.deleteRuns.run(sessionId);
    if (head.journal > 0) s.deleteJournal.run(sessionId);
    head.runs = 0;
    head.journal = 0;
  }
  // Indexed loops: destructuring an entry would go through an iterator (garbage on every commit).
  for (let index = 0; index < rows.runs.length; index++) {
    const route = (rows.runs[index] as [string, string | null])[0];
    const doc = (rows.runs[index] as [string, string | null])[1];
    if (doc === null) head.runs -= Number(s.deleteRun.run(sessionId, route).changes);
    else {
      const sum = recordChecksum('runs', { session_id: sessionId, route, doc });
      if (inserted(s.insertRun.run(sessionId, route, doc, sum))) head.runs++;
      else s.updateRun.run(doc, sum, sessionId, route);
    }
  }
  for (let index = 0; index < rows.journal.length; index++) {
    const key = (rows.journal[index] as [string, string])[0];
    const doc = (rows.journal[index] as [string, string])[1];
    beginChecksum('journal');
    addToChecksum(sessionId);
    addToChecksum(key);
    addToChecksum(doc);
    const sum = endChecksum();
    if (inserted(s.insertJournal.run(sessionId, key, doc, sum))) head.journal++;
    else s.updateJournal.run(doc, sum, sessionId, key);
  }
  if (rows.events.length > 0) {
    // One row for the commit's events (the rules passed: their seqs continue the log without gaps).
    const firstSeq = (rows.events[0] as { seq: number }).seq;
    const lastSeq = (rows.events[rows.events.length - 1] as { seq: number }).seq;
    beginChecksum('events');
    addToChecksum(sessionId);
    addToChecksum(firstSeq);
    addToChecksum(lastSeq);
    addToChecksum(rows.eventsDoc);
    s.insertEvents.run(sessionId, firstSeq, lastSeq, rows.eventsDoc, endChecksum());
    head.lastSeq = lastSeq;
  }
  for (const approval of rows.approvals) {
    const record = approval as {
      callId: string;
      status: string;
      requestedAt: number;
      decidedAt: number | null;
    };
    const sum = recordChecksum('approvals', {
      session_id: sessionId,
      call_id: record.callId,
      status: record.status,
      requested_at: record.requestedAt,
      decided_at: record.decidedAt,
      doc: approval.doc,
    });
    const columns = [record.status, record.requestedAt, record.decidedAt, approval.doc, sum] as const;
    if (inserted(s.insertApproval.run(sessionId, record.callId, ...columns))) head.approvals++;
    else s.updateApproval.run(...columns, sessionId, record.callId);
  }
  const sum = s.heads.write(sessionId, head, before !== undefined);
  // A session that stops running here (finished, stopped, failed, suspended) lets its lease go with the commit and
  // is forgotten; one this process runs is remembered with the head it now has.
  if (session !== undefined && session.status !== 'running' && session.status !== 'awaiting') {
    s.written.forget(sessionId);
    s.leases.release(sessionId);
  } else if (rows.runsSession) s.written.remember(sessionId, head, sum, session?.status);
}

/**
 * The head and lease read and checked as a commit of a session this connection does not remember needs them: the
 * lease (fencing), the head (verified), the rules; then the session row written. Returns the head before the commit.
 */
function readHeadAndCheck(
  s: Statements,
  rows: CommitRows,
  columns: SessionColumns | undefined,
): SessionHead | undefined {
  const sessionId = rows.sessionId;
  s.written.forget(sessionId);
  // The head says what the session holds (its last event, how many records of each kind); the commit updates
  // it by what it writes, instead of counting the session's records again. The lease is read with it.
  const headAndLease = s.selectHeadAndLease.get(sessionId) as Row;
  // Only the process holding the session's lease writes what it runs (a decision on an approval may come from
  // any process): a process that was taken over is fenced first, whatever its batch holds.
  if (rows.runsSession) s.leases.checkCommit(sessionId, headAndLease);
  const before = s.heads.find(sessionId, headAndLease);
  if (before === undefined && rows.session === undefined && s.selectRowExists.get(sessionId) !== undefined)
    throw new StoreCorruptError(sessionId, 'its head (what the session holds) is missing');
  checkBatch(sessionId, rows, before?.lastSeq ?? -1, rows.session !== undefined || before !== undefined);
  if (columns !== undefined) {
    // A session with a head has its row: it is updated in place (cheaper than an upsert), and a row that is gone
    // is a loss, not a new session.
    if (before === undefined) s.upsertSession.run(sessionId, ...columns);
    else if (Number(s.updateSession.run(...columns, sessionId).changes) === 0)
      throw new StoreCorruptError(sessionId, 'its session row is lost (its head is still there)');
  }
  return before;
}

/**
 * Writes a commit's messages after the `keep` the session still has, and updates its head. The messages kept must be
 * the ones the commit was made against (its process's last commit of the session): otherwise (an earlier commit of
 * the session failed, or another process wrote it) the commit is refused, and the next one writes every message.
 */
function writeMessages(s: Statements, sessionId: string, messages: MessageRows, head: SessionHead): void {
  const { keep, keepSum, docs, sums } = messages;
  const kept =
    keep === head.messages
      ? head.messagesSum === keepSum
      : keep < head.messages && (keep === 0 || s.selectMessageSum.get(sessionId, keep - 1)?.sum === keepSum);
  if (!kept)
    throw new StoreCommitError(
      sessionId,
      'message_sequence',
      `the batch continues a conversation of ${keep} messages that is not the stored one (${head.messages} messages): an earlier commit of the session failed, or another process wrote it`,
    );
  if (head.messages > keep) s.deleteMessagesFrom.run(sessionId, keep);
  if (docs.length > 0) {
    const columns: Sqlite.SQLInputValue[] = [];
    for (const [index, doc] of docs.entries())
      columns.push(sessionId, keep + index, doc, sums[index] as number);
    s.insertMessages(columns);
  }
  head.messages = keep + docs.length;
  head.messagesSum = docs.length > 0 ? (sums.at(-1) as number) : keepSum;
}

/** Whether a batch is the running session's own (fenced by its lease), not a decision on one of its approvals. */
function runsTheSession(batch: CommitBatch): boolean {
  return (
    batch.session !== undefined ||
    batch.runs !== undefined ||
    batch.journal !== undefined ||
    batch.events !== undefined ||
    batch.clearTurn === true
  );
}

const knownStatuses: ReadonlySet<unknown> = new Set(storedSessionStatuses);

/**
 * A summary from the row's columns alone. A damaged row is still listed (recover() then reports it by name when
 * `load` refuses it, and the other sessions still recover): every column is covered by the row's checksum, which
 * `load` verifies before anything is resumed.
 */
function summaryOf(row: Row): SessionSummary {
  const { id, status, entry, agent, turns, updated_at: updatedAt, pending } = row;
  if (typeof id !== 'string')
    throw new StoreCorruptError(undefined, `a session row has the id ${String(id)}, not a string`);
  if (!knownStatuses.has(status))
    throw new StoreCorruptError(
      id,
      `its status ${JSON.stringify(status)} is not one of ${storedSessionStatuses.join(', ')}`,
    );
  if (
    typeof entry !== 'string' ||
    typeof agent !== 'string' ||
    typeof turns !== 'number' ||
    typeof updatedAt !== 'number' ||
    typeof pending !== 'number'
  )
    throw new StoreCorruptError(id, 'its row has columns of the wrong type');
  return {
    sessionId: id,
    status: status as SessionSummary['status'],
    entry,
    agent,
    turns,
    updatedAt,
    pendingApprovals: pending,
  };
}

function approvalOf(sessionId: string, row: Row): ApprovalRecord {
  const where = `approval ${JSON.stringify(row.call_id)}`;
  verifyRecord(sessionId, where, 'approvals', row);
  const record = validateApprovalRecord(sessionId, parseStoredJson(sessionId, where, row.doc), where);
  // The columns are checksummed with the record: they must say what it says.
  if (
    record.sessionId !== sessionId ||
    record.callId !== row.call_id ||
    record.status !== row.status ||
    record.requestedAt !== row.requested_at ||
    (record.decidedAt ?? null) !== row.decided_at
  )
    throw new StoreCorruptError(sessionId, `${where}: its columns and its record disagree`);
  return record;
}

/** The session row, verified, decoded and validated; its columns must say what its record says. */
function sessionOf(sessionId: string, row: Row, messages: readonly unknown[]): StoredSession {
  verifyRecord(sessionId, 'the session row', 'sessions', row as RecordColumns);
  const session = validateStoredSession(
    sessionId,
    decodeSessionDoc(sessionId, parseStoredJson(sessionId, 'the session row', row.doc), messages),
  );
  if (
    row.id !== sessionId ||
    row.status !== session.status ||
    row.entry !== session.entry ||
    row.agent !== session.agent ||
    row.turns !== session.turns ||
    row.updated_at !== session.updatedAt
  )
    throw new StoreCorruptError(sessionId, 'the session row: its columns and its record disagree');
  return session;
}

/** SQLite's primary result code of an error from node:sqlite (extended codes keep it in the low byte). */
function sqliteCode(error: unknown): number | undefined {
  const code = (error as { errcode?: unknown } | null)?.errcode;
  return typeof code === 'number' ? code & 0xff : undefined;
}

const SQLITE_ERROR = 1;
const SQLITE_BUSY = 5;
const SQLITE_LOCKED = 6;
const SQLITE_CORRUPT = 11;
const SQLITE_CONSTRAINT = 19;
const SQLITE_NOTADB = 26;

/** A typed error for a failure of SQLite: damage is StoreCorruptError (the file, no session), the rest StoreIoError. */
export function storeErrorOf(error: unknown, path: string, action: string): Error {
  if (error instanceof TroupeError) return error;
  const code = sqliteCode(error);
  const message = messageOf(error);
  // A file that passed SQLite's header check but whose schema names tables it lacks has a damaged schema page.
  const damagedSchema =
    code === SQLITE_ERROR && action === openAction && /no such |malformed|has no column/.test(message);
  if (code === SQLITE_CORRUPT || code === SQLITE_NOTADB || damagedSchema)
    return new StoreCorruptError(undefined, `"${path}" ${action}: ${message}`, { cause: error });
  return new StoreIoError(path, `${action}: ${message}`, {
    busy: code === SQLITE_BUSY || code === SQLITE_LOCKED,
    cause: error,
  });
}

/** A commit's failure: values SQLite refused to bind or store are the batch's fault; the rest as for any call. */
export function commitErrorOf(error: unknown, path: string, sessionId: string): Error {
  const nodeCode = (error as { code?: unknown } | null)?.code;
  if (
    sqliteCode(error) === SQLITE_CONSTRAINT ||
    nodeCode === 'ERR_INVALID_ARG_TYPE' ||
    nodeCode === 'ERR_INVALID_ARG_VALUE'
  )
    return new StoreCommitError(sessionId, 'invalid_value', messageOf(error), { cause: error });
  return storeErrorOf(error, path, `could not commit session "${sessionId}"`);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function closeTransaction(db: Sqlite.DatabaseSync): void {
  try {
    db.exec('ROLLBACK');
  } catch {
    // Nothing to roll back.
  }
}

function closeQuietly(db: Sqlite.DatabaseSync): void {
  try {
    db.close();
  } catch {
    // Closing after a failed open: the failure that matters is already being thrown.
  }
}
