/**
 * The writer thread of group commit (see sqlite-writer-thread.ts): a connection of its own to the store's file,
 * which writes the groups the event loop posts, each in one transaction, and answers per commit.
 */
import { receiveMessageOnPort, workerData } from 'node:worker_threads';
import { readCommitRows } from './commit-rows-wire.ts';
import { type GroupOutcome, writeGroup } from './group-commit.ts';
import type { SessionLeases } from './session-lease.ts';
import { type CommitRows, openDatabase, prepareStatements, sqliteGroupTransaction } from './sqlite-store.ts';
import type { FromWriter, ToWriter, WriterInit } from './sqlite-writer-thread.ts';
import { errorToWire, type WireError } from './store-error-wire.ts';

const init = workerData as WriterInit;
const port = init.port;
const flags = new Int32Array(init.signal);

/** Marks in the shared signal that the thread stopped, waking a thread that waits for it. */
const stopped = (): void => {
  Atomics.store(flags, 1, 1);
  Atomics.notify(flags, 0);
};
// A thread that ends (an error nothing here expected, process.exit) says so: the event loop's waits see it at once.
process.on('exit', stopped);

let connection:
  | {
      db: ReturnType<typeof openDatabase>;
      leases: SessionLeases;
      transaction: ReturnType<typeof sqliteGroupTransaction>;
    }
  | undefined;
/** Why the connection could not be opened: every group fails with it. */
let openFailure: WireError | undefined;
try {
  const db = openDatabase(init.path, init.synchronous, init.busyTimeoutMs, false);
  const sql = prepareStatements(db, init.leaseTtlMs, init.holder);
  connection = {
    db,
    leases: sql.leases,
    transaction: sqliteGroupTransaction(db, sql, init.path, init.synchronous, () => {}),
  };
} catch (error) {
  openFailure = errorToWire(error, init.path);
}

// The leases this connection took with its commits are renewed between them, as the store's own timer does for
// the leases taken on the event loop's connection.
const renewal = setInterval(
  () => {
    try {
      connection?.leases.renewAll();
    } catch {
      // Tried again on the next tick; a commit checks the lease anyway.
    }
  },
  Math.max(1, Math.floor(init.leaseTtlMs / 3)),
);
renewal.unref();

const answer = (message: FromWriter): void => {
  port.postMessage(message);
  if (message.type === 'done') Atomics.store(flags, 0, message.id);
  Atomics.notify(flags, 0);
};

/** Writes groups that waited together in one transaction, and answers each group. */
const writeGroups = (groups: { id: number; entries: CommitRows[] }[]): void => {
  const entries = groups.flatMap((group) => group.entries);
  let outcomes: GroupOutcome[];
  if (connection === undefined) {
    const error = openFailure;
    outcomes = entries.map(() => ({ ok: false, error }));
  } else {
    const transaction = connection.transaction;
    outcomes = writeGroup(
      transaction,
      entries.map((entry) => ({ entry, relaxed: entry.relaxed })),
    );
  }
  let first = 0;
  for (const group of groups) {
    const errors: WireError[] = [];
    const known = new Map<unknown, number>();
    const results = group.entries.map((_, index) => {
      const outcome = outcomes[first + index] as GroupOutcome;
      if (outcome.ok) return -1;
      let at = known.get(outcome.error);
      if (at === undefined) {
        at = errors.length;
        known.set(outcome.error, at);
        const error = outcome.error;
        errors.push(
          error !== null && typeof error === 'object' && 'kind' in error
            ? (error as WireError)
            : errorToWire(error, init.path),
        );
      }
      return at;
    });
    first += group.entries.length;
    answer({ type: 'done', id: group.id, results, errors });
  }
};

const close = (): void => {
  clearInterval(renewal);
  let error: WireError | undefined;
  if (connection !== undefined) {
    try {
      connection.leases.releaseAll();
    } catch {
      // A lease left behind is taken at once by the next process on this host (this pid is gone by then).
    }
    try {
      connection.db.close();
    } catch (closeError) {
      error = errorToWire(closeError, init.path);
    }
  }
  answer({ type: 'closed', error });
  stopped();
  port.close();
};

port.on('message', (first: ToWriter) => {
  // The groups posted while the last one was being written join one transaction, up to maxBatch commits.
  const groups: { id: number; entries: CommitRows[] }[] = [];
  let closing = false;
  let size = 0;
  for (let message: ToWriter | undefined = first; message !== undefined; ) {
    if (message.type === 'close') {
      closing = true;
      break;
    }
    groups.push({ id: message.id, entries: readCommitRows(message.wire, message.count) });
    size += message.count;
    if (size >= init.maxBatch) break;
    message = (receiveMessageOnPort(port)?.message as ToWriter | undefined) ?? undefined;
  }
  if (groups.length > 0) writeGroups(groups);
  if (closing) close();
});
