import type { MessagePort } from 'node:worker_threads';
import { appendCommitRows, type CommitRowsWire } from './commit-rows-wire.ts';
import { type GroupCommitSettings, gatherGroups } from './group-commit.ts';
import type { LeaseHolder } from './session-lease.ts';
import type { CommitRows } from './sqlite-store.ts';
import { errorFromWire, type WireError } from './store-error-wire.ts';
import { StoreIoError } from './store-errors.ts';

/** What the writer thread needs to open its own connection to the store's file. */
export interface WriterThreadConfig {
  path: string;
  synchronous: 'full' | 'normal';
  busyTimeoutMs: number;
  leaseTtlMs: number;
  /** This process as a lease holder: the thread takes and renews leases in its name. */
  holder: LeaseHolder;
}

/** The writer thread's `workerData`. */
export interface WriterInit extends Omit<WriterThreadConfig, 'holder'> {
  holder: { host: string; pid: number; token: string };
  maxBatch: number;
  port: MessagePort;
  /** Int32 [0]: the id of the last group answered; [1]: 1 once the thread stopped (closed or failed). */
  signal: SharedArrayBuffer;
}

/** To the writer thread: a group of `count` commits to write (their values in one list), or the end. */
export type ToWriter = { type: 'group'; id: number; count: number; wire: CommitRowsWire } | { type: 'close' };

/**
 * From the writer thread: how each commit of a group ended (-1 written, else the index of its error in `errors`:
 * commits that failed for one reason share one error), or that the thread closed its connection.
 */
export type FromWriter =
  | { type: 'done'; id: number; results: number[]; errors: WireError[] }
  | { type: 'closed'; error: WireError | undefined };

/** Group commit with a writer thread (see `startWriterThread`). */
export interface WriterThread {
  /** Queues a commit; the promise resolves once the writer thread has committed its group (on disk). */
  commit(rows: CommitRows): Promise<void>;
  /** Writes every waiting commit and waits (blocking) until the thread has answered them. */
  drain(): void;
  /** Drains, then lets the thread release its leases and close its connection, and ends it. */
  close(): void;
}

interface Waiting {
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit on a worker thread that owns a write connection to the store's file: the event loop gathers the
 * commits of a turn (or of `maxDelayMs`) into a group and posts it; the thread writes the group in one transaction
 * (a savepoint per commit, one fsync) while the event loop goes on, and answers per commit. A commit's promise
 * resolves only once its group is committed, so the write-ahead rule holds as with the writer on the event loop;
 * errors come back as the same classes with the same messages. A thread that dies fails every waiting commit, and
 * every later one, with a StoreIoError. The thread never keeps the process alive when no commit waits.
 */
export function startWriterThread(
  config: WriterThreadConfig,
  settings: GroupCommitSettings,
  /** The thread's module: the store's own writer unless a test gives a stand-in. */
  entry: URL = writerEntry,
): WriterThread {
  const { Worker, MessageChannel, receiveMessageOnPort } = process.getBuiltinModule('node:worker_threads');
  const { port1, port2 } = new MessageChannel();
  const signal = new SharedArrayBuffer(8);
  const flags = new Int32Array(signal);
  const init: WriterInit = {
    path: config.path,
    synchronous: config.synchronous,
    busyTimeoutMs: config.busyTimeoutMs,
    leaseTtlMs: config.leaseTtlMs,
    holder: { host: config.holder.host, pid: config.holder.pid, token: config.holder.token },
    maxBatch: settings.maxBatch,
    port: port2,
    signal,
  };
  const worker = new Worker(entry, {
    workerData: init,
    transferList: [port2],
    // The process's flags (`--experimental-sqlite` on Node 22.5 to 22.12) but those that only name how the main
    // script is read: a worker refuses `--input-type`.
    execArgv: process.execArgv.filter((flag) => !flag.startsWith('--input-type')),
  });
  worker.unref();
  port1.unref();

  const inFlight = new Map<number, Waiting[]>();
  let nextId = 1;
  let dead: Error | undefined;
  let closing = false;
  let closedAnswer: FromWriter | undefined;
  /**
   * The values of the commits waiting in `gathering`, in the same order: each commit is written here when it is made,
   * so that its rows are garbage at once instead of living, and being copied by the collector, until it is answered.
   */
  let wire: CommitRowsWire = [];

  const idle = (): void => {
    if (inFlight.size === 0) port1.unref();
  };
  const fail = (error: Error): void => {
    dead ??= error;
    const waiting = [...[...inFlight.values()].flat(), ...gathering.take()];
    wire = [];
    inFlight.clear();
    for (const each of waiting) each.reject(dead);
    idle();
  };
  let started = false;
  worker.once('online', () => {
    started = true;
  });
  const died = (cause: unknown): StoreIoError => {
    const why = cause instanceof Error ? cause.message : String(cause);
    return new StoreIoError(
      config.path,
      started
        ? `could not commit: its writer thread stopped (${why})`
        : `could not commit: its writer thread did not start (${why}). A bundle that leaves out Troupe's chunks/sqlite-writer-worker.js needs groupCommit: { writer: 'inline' }.`,
      { busy: false, cause },
    );
  };
  worker.on('error', (error) => fail(died(error)));
  worker.on('exit', (code) => {
    if (!closing) fail(died(`exit code ${code}`));
  });

  const handle = (message: FromWriter): void => {
    if (message.type === 'closed') {
      closedAnswer = message;
      return;
    }
    const group = inFlight.get(message.id);
    if (group === undefined) return;
    inFlight.delete(message.id);
    const errors = message.errors.map(errorFromWire);
    for (const [index, waiting] of group.entries()) {
      const result = message.results[index] ?? -1;
      if (result === -1) waiting.resolve();
      else waiting.reject(errors[result]);
    }
    idle();
  };
  port1.on('message', handle);

  const post = (group: Waiting[]): void => {
    const values = wire;
    wire = [];
    if (dead !== undefined) {
      for (const waiting of group) waiting.reject(dead);
      return;
    }
    const id = nextId++;
    inFlight.set(id, group);
    port1.ref();
    try {
      port1.postMessage({ type: 'group', id, count: group.length, wire: values } satisfies ToWriter);
    } catch (error) {
      inFlight.delete(id);
      idle();
      for (const waiting of group) waiting.reject(died(error));
    }
  };
  const gathering = gatherGroups<Waiting>(settings, Math.min(settings.maxBatch, postEvery), post);

  /**
   * Blocks until `done()`, taking the thread's answers as they come. The thread marks in `signal` each group it
   * answered and that it stopped; a thread that answers nothing for far longer than a group can take (it waits at
   * most the busy timeout for the file) is given up as dead, so that this never hangs.
   */
  const waitFor = (done: () => boolean): void => {
    const patienceMs = 2 * config.busyTimeoutMs + 30_000;
    let answered = Atomics.load(flags, 0);
    let since = Date.now();
    for (;;) {
      for (let next = receiveMessageOnPort(port1); next !== undefined; next = receiveMessageOnPort(port1))
        handle(next.message as FromWriter);
      if (done() || dead !== undefined) return;
      if (Atomics.load(flags, 1) !== 0 && receiveMessageOnPort(port1) === undefined) {
        fail(died('it ended'));
        return;
      }
      const now = Atomics.load(flags, 0);
      if (now !== answered) {
        answered = now;
        since = Date.now();
      } else if (Date.now() - since > patienceMs) {
        fail(died(`no answer for ${patienceMs} ms`));
        return;
      }
      Atomics.wait(flags, 0, now, 20);
    }
  };

  return {
    commit(rows) {
      return new Promise<void>((resolve, reject) => {
        if (dead !== undefined) {
          reject(dead);
          return;
        }
        // Its values first: the group may be posted as soon as it is added.
        appendCommitRows(wire, rows);
        gathering.add({ resolve, reject });
      });
    },
    drain() {
      gathering.flush();
      waitFor(() => inFlight.size === 0);
    },
    close() {
      if (closing) return;
      this.drain();
      closing = true;
      if (dead === undefined) {
        port1.postMessage({ type: 'close' } satisfies ToWriter);
        waitFor(() => closedAnswer !== undefined || Atomics.load(flags, 1) !== 0);
        for (let next = receiveMessageOnPort(port1); next !== undefined; next = receiveMessageOnPort(port1))
          handle(next.message as FromWriter);
      }
      port1.close();
      void worker.terminate();
      const error = closedAnswer?.type === 'closed' ? closedAnswer.error : undefined;
      if (error !== undefined) throw errorFromWire(error);
    },
  };
}

/**
 * The event loop posts what waits every this many commits, not only at the end of its turn: the thread starts
 * writing while the event loop still makes the turn's other commits (it joins what arrives meanwhile to the same
 * transaction, up to maxBatch), instead of the two taking turns.
 */
const postEvery = 32;

/** The writer thread's module, beside this one (TypeScript from the sources, JavaScript once built). */
const writerEntry = new URL(
  import.meta.url.endsWith('.ts') ? './sqlite-writer-worker.ts' : './sqlite-writer-worker.js',
  import.meta.url,
);
