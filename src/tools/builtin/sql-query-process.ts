/**
 * The long-lived child process of one sqlQuery tool: it receives queries over its IPC channel, runs each with
 * runReadOnlyQuery, one at a time, and sends back the outcome as JSON text. A query that runs too long is ended by
 * killing this process: a thread cannot stop SQLite in the middle of a step, and node:sqlite offers no interrupt.
 * The parent kills it at its timeout; a watchdog thread here also kills it a little past the running query's
 * deadline, and as soon as the parent is gone, so a runaway query never outlives its deadline even if the parent
 * died without cleaning up. An idle process ends as soon as its channel to the parent closes. It says it is ready
 * once the watchdog runs and its memory bound is set; the parent sends no query before.
 *
 * The memory a query may take (the second argument, in bytes) is bounded by the operating system where it can be:
 * on Linux, the process's address space is capped (RLIMIT_AS, set with util-linux `prlimit`) at its size once
 * started plus that amount, so every allocation past it fails, whichever SQL function, sort or cache makes it:
 * SQLite answers "out of memory" and the process lives on. (SQLite's own `hard_heap_limit` is not enforced in
 * node:sqlite's build, and V8's heap flags do not cover SQLite's native memory.) Where no such cap can be set, the
 * watchdog kills the process once its resident memory passes its start-up size plus that amount; it looks every
 * 25 ms, so a fast allocation can overshoot by what it allocates in that time.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type {
  QueryAnswerMessage,
  QueryProcessReadyMessage,
  QueryRequestMessage,
} from './sql-query-messages.ts';
import { runReadOnlyQuery } from './sql-readonly-query.ts';

/** How long after the parent's own deadline the process ends itself. */
const graceMs = 1000;

/**
 * Shared with the watchdog thread: [0] the running query's deadline (epoch milliseconds), 0 while idle; [1] the
 * resident memory (bytes) past which the process is killed, 0 until set.
 */
const shared = new BigInt64Array(new SharedArrayBuffer(16));

// The watchdog runs on its own thread, so it keeps running while SQLite blocks the main one. It reports why it
// kills on stderr with a direct write: the main thread, which would relay an ordinary one, may be blocked.
const watchdogSource = `
const { workerData } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const shared = new BigInt64Array(workerData.shared);
const parent = workerData.parent;
setInterval(() => {
  const at = Atomics.load(shared, 0);
  const maxResident = Atomics.load(shared, 1);
  if (maxResident !== 0n && BigInt(process.memoryUsage.rss()) > maxResident) {
    writeSync(2, 'The query used more memory than a query may and was stopped.\\n');
    process.kill(process.pid, 'SIGKILL');
  }
  if ((at !== 0n && BigInt(Date.now()) > at) || process.ppid !== parent) process.kill(process.pid, 'SIGKILL');
}, 25);
`;
// The parent passes its pid: read here, process.ppid could already be that of init if the parent died early.
const parent = Number(process.argv[2]);
const givenLimit = Number(process.argv[3]);
const memoryLimitBytes = Number.isSafeInteger(givenLimit) && givenLimit > 0 ? givenLimit : 256 * 1024 * 1024;
const watchdog = new Worker(watchdogSource, {
  eval: true,
  workerData: { shared: shared.buffer, parent },
});
// Only the channel keeps this process alive: once the parent disconnects, it ends.
watchdog.unref();
// A thread can take long to start on a busy machine; no query runs before the watchdog does.
watchdog.once('online', () => {
  const bound = boundMemory();
  const ready: QueryProcessReadyMessage = { ready: true, memoryBound: bound };
  process.send?.(ready, undefined, undefined, () => {
    // The parent is gone; 'disconnect' ends this process.
  });
});

/**
 * Caps the address space at its present size plus the memory a query may use, where the system allows it (Linux
 * with `prlimit`); else, and as a second line, arms the watchdog's resident-memory check.
 */
function boundMemory(): 'address-space' | 'resident-memory' {
  const startSize = process.memoryUsage.rss();
  Atomics.store(shared, 1, BigInt(startSize + memoryLimitBytes));
  if (process.platform !== 'linux') return 'resident-memory';
  try {
    const size = /^VmSize:\s*(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (size === null) return 'resident-memory';
    const limit = Number(size[1]) * 1024 + memoryLimitBytes;
    execFileSync('prlimit', ['--pid', String(process.pid), `--as=${limit}:${limit}`], {
      stdio: 'ignore',
      timeout: 10_000,
    });
    return 'address-space';
  } catch (error) {
    writeSync(2, `Memory is bounded by the watchdog only: ${(error as Error).message}\n`);
    return 'resident-memory';
  }
}

process.on('message', (message: QueryRequestMessage) => {
  Atomics.store(shared, 0, BigInt(Date.now() + message.timeoutMs + graceMs));
  const outcome = runReadOnlyQuery(message.request);
  Atomics.store(shared, 0, 0n);
  let answer = JSON.stringify(outcome);
  if (answer.length > message.maxAnswerChars)
    answer = JSON.stringify({
      ok: false,
      message: 'The answer is too large; select fewer or shorter columns.',
    });
  const reply: QueryAnswerMessage = { id: message.id, answer };
  process.send?.(reply, undefined, undefined, () => {
    // The parent is gone; 'disconnect' ends this process.
  });
});
process.on('disconnect', () => process.exit(0));
