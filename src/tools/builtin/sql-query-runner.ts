import { type ChildProcess, fork } from 'node:child_process';
import { abortError } from '../../core/abort.ts';
import { ToolInputError } from '../../core/errors.ts';
import type {
  QueryAnswerMessage,
  QueryProcessReadyMessage,
  QueryRequestMessage,
} from './sql-query-messages.ts';
import type { ReadOnlyQueryOutcome, ReadOnlyQueryRequest } from './sql-readonly-query.ts';

/** Longest answer (JSON text, in characters) taken from the query process; rows are capped first, this is a backstop. */
const maxAnswerChars = 16 * 1024 * 1024;
/** How long a new query process may take to start before the call fails: a start-up, not a query, on a busy machine. */
const startupTimeoutMs = 30_000;
/** How much of the process's last words (stderr) a crash report keeps. */
const maxStderrChars = 4096;

interface QueryJob {
  request: ReadOnlyQueryRequest;
  signal: AbortSignal | undefined;
  resolve: (outcome: ReadOnlyQueryOutcome) => void;
  reject: (error: unknown) => void;
  onAbort: (() => void) | undefined;
}

interface RunningQuery {
  job: QueryJob;
  id: number;
  child: ChildProcess;
  /** The query's timeout once sent; until then, the bound on the process's start. */
  timer: NodeJS.Timeout;
  sent: boolean;
}

interface QueryProcess {
  child: ChildProcess;
  /** Whether the process said it can take queries (its watchdog runs). */
  ready: boolean;
  /** The end of what the process wrote on stderr, for the report when it dies mid-query. */
  stderr: string;
}

/**
 * Runs the queries of one sqlQuery tool in one long-lived child process, started on the first query, so a query
 * costs an IPC round trip instead of a Node start-up. The process runs one query at a time; calls made meanwhile
 * wait their turn, in order (a tool usually serves one agent, and SQLite on one file gains little from parallel
 * readers next to a process each). A query still running after `timeoutMs`, or whose call is aborted, is ended by
 * killing the process (SIGKILL): node:sqlite has no interrupt. The next query starts a fresh process, and so does
 * the next query after a crash. A query's timeout counts from when its process is ready, so a slow start-up (a
 * loaded machine) is not charged to the query. While no query runs, the process does not keep the parent's event
 * loop alive, and it ends by itself when the parent does.
 */
export class SqlQueryRunner {
  readonly #entry: string;
  readonly #timeoutMs: number;
  readonly #memoryLimitBytes: number;
  #process: QueryProcess | undefined;
  #running: RunningQuery | undefined;
  readonly #queue: QueryJob[] = [];
  #nextId = 1;
  #closed = false;
  #closeWhenIdle = false;

  /**
   * `entry` is the query process's module; `timeoutMs` bounds each query, `memoryLimitBytes` the memory the process
   * may take past its start-up size.
   */
  constructor(entry: string, timeoutMs: number, memoryLimitBytes: number) {
    this.#entry = entry;
    this.#timeoutMs = timeoutMs;
    this.#memoryLimitBytes = memoryLimitBytes;
  }

  /** The query process's id while one is running (idle or busy), else undefined. */
  get processId(): number | undefined {
    return this.#process?.child.pid;
  }

  run(request: ReadOnlyQueryRequest, signal: AbortSignal | undefined): Promise<ReadOnlyQueryOutcome> {
    if (this.#closed) return Promise.reject(closedError());
    if (signal?.aborted) return Promise.reject(abortError(signal));
    return new Promise((resolve, reject) => {
      const job: QueryJob = { request, signal, resolve, reject, onAbort: undefined };
      if (signal) {
        // Made in a local first: V8 allocates a function literal stored straight into a property in the old
        // generation, where it would keep the finished query alive until a full collection.
        const onAbort = () => this.#abort(job, signal);
        job.onAbort = onAbort;
        signal.addEventListener('abort', onAbort, { once: true });
      }
      this.#queue.push(job);
      this.#startNext();
    });
  }

  /**
   * Ends the query process and fails the calls still waiting or running; later calls are refused. Resolves once
   * the process has exited.
   */
  close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#queue.splice(0)) this.#settle(job, () => job.reject(closedError()));
    const running = this.#running;
    if (running) {
      this.#finishRunning(running);
      this.#settle(running.job, () => running.job.reject(closedError()));
    }
    const current = this.#process;
    this.#process = undefined;
    if (!current) return Promise.resolve();
    const { child } = current;
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      // Keeps the event loop alive until the exit is seen, so `await tool.close()` ends cleanly in a script.
      child.ref();
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }

  /** Closes the runner once no query runs or waits (its tool was dropped while a call was still under way). */
  closeWhenIdle(): void {
    if (this.#running || this.#queue.length > 0) this.#closeWhenIdle = true;
    else this.close().catch(() => undefined);
  }

  #startNext(): void {
    if (this.#running || this.#closed) return;
    const job = this.#queue.shift();
    if (!job) {
      if (this.#closeWhenIdle) this.close().catch(() => undefined);
      return;
    }
    let current: QueryProcess;
    try {
      current = this.#process ?? this.#spawn();
    } catch (error) {
      this.#settle(job, () => job.reject(error));
      this.#startNext();
      return;
    }
    const { child } = current;
    const timer = setTimeout(() => {
      this.#kill(job, new Error(`The query process did not start within ${startupTimeoutMs / 1000} s.`));
    }, startupTimeoutMs);
    const running: RunningQuery = { job, id: this.#nextId++, child, timer, sent: false };
    this.#running = running;
    // While a query runs (or waits for its process to start), the channel keeps the event loop alive.
    child.channel?.ref();
    if (current.ready) this.#send(running);
  }

  /** Sends the running query to its ready process; its timeout starts now. */
  #send(running: RunningQuery): void {
    const { job, child } = running;
    clearTimeout(running.timer);
    running.sent = true;
    running.timer = setTimeout(() => {
      this.#kill(
        job,
        new ToolInputError(
          `The query ran longer than ${this.#timeoutMs} ms and was stopped. Make it cheaper: add LIMIT (also inside recursive CTEs), filter earlier, avoid cross joins.`,
        ),
      );
    }, this.#timeoutMs);
    const message: QueryRequestMessage = {
      id: running.id,
      request: job.request,
      timeoutMs: this.#timeoutMs,
      maxAnswerChars,
    };
    child.send(message, (error) => {
      // A failed send means the process is gone; its 'exit' reports the failure to the call.
      if (error) child.kill('SIGKILL');
    });
  }

  #spawn(): QueryProcess {
    const child = fork(this.#entry, [String(process.pid), String(this.#memoryLimitBytes)], {
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      execArgv: [],
    });
    const current: QueryProcess = { child, ready: false, stderr: '' };
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (text: string) => {
      current.stderr = (current.stderr + text).slice(-maxStderrChars);
    });
    child.on('message', (message: QueryAnswerMessage | QueryProcessReadyMessage) => {
      if ('ready' in message) this.#onReady(current);
      else this.#onAnswer(child, message);
    });
    child.on('exit', (code, signal) => this.#onExit(current, `${signal ?? `exit code ${code}`}`));
    child.on('error', (error) => {
      // Spawning or signalling failed: without a usable process, the running query cannot be answered.
      this.#onExit(current, error.message);
    });
    // An idle process never holds the parent open; the channel is ref'd only while a query runs.
    child.unref();
    child.channel?.unref();
    (child.stderr as { unref?: () => void } | null)?.unref?.();
    this.#process = current;
    return current;
  }

  #onReady(current: QueryProcess): void {
    current.ready = true;
    const running = this.#running;
    if (running && running.child === current.child && !running.sent) this.#send(running);
  }

  #onAnswer(child: ChildProcess, message: QueryAnswerMessage): void {
    const running = this.#running;
    if (!running || running.child !== child || running.id !== message.id) return;
    this.#finishRunning(running);
    let outcome: ReadOnlyQueryOutcome;
    try {
      outcome = JSON.parse(message.answer) as ReadOnlyQueryOutcome;
    } catch (error) {
      this.#settle(running.job, () => running.job.reject(error));
      this.#startNext();
      return;
    }
    this.#settle(running.job, () => running.job.resolve(outcome));
    this.#startNext();
  }

  #onExit(current: QueryProcess, how: string): void {
    if (this.#process === current) this.#process = undefined;
    const running = this.#running;
    if (!running || running.child !== current.child) return;
    this.#finishRunning(running);
    const said = current.stderr.trim().split('\n').slice(-3).join(' ');
    this.#settle(running.job, () =>
      running.job.reject(
        new Error(`The query process ended without an answer (${how})${said === '' ? '' : `: ${said}`}`),
      ),
    );
    this.#startNext();
  }

  /** Ends the running job's process (timeout or abort) and fails the call; the next query gets a fresh process. */
  #kill(job: QueryJob, error: unknown): void {
    const running = this.#running;
    if (!running || running.job !== job) return;
    this.#finishRunning(running);
    if (this.#process?.child === running.child) this.#process = undefined;
    running.child.kill('SIGKILL');
    this.#settle(job, () => job.reject(error));
    this.#startNext();
  }

  #abort(job: QueryJob, signal: AbortSignal): void {
    const waiting = this.#queue.indexOf(job);
    if (waiting >= 0) {
      this.#queue.splice(waiting, 1);
      this.#settle(job, () => job.reject(abortError(signal)));
      return;
    }
    this.#kill(job, abortError(signal));
  }

  #finishRunning(running: RunningQuery): void {
    this.#running = undefined;
    clearTimeout(running.timer);
    running.child.channel?.unref();
  }

  #settle(job: QueryJob, settle: () => void): void {
    if (job.signal && job.onAbort) job.signal.removeEventListener('abort', job.onAbort);
    settle();
  }
}

function closedError(): Error {
  return new Error('This sqlQuery tool was closed; make a new one to run more queries.');
}
