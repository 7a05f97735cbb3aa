/**
 * The long-lived child process of one sqlQuery tool: it receives queries over its IPC channel, runs each with
 * runReadOnlyQuery, one at a time, and sends back the outcome as JSON text. A query that runs too long is ended by
 * killing this process: a thread cannot stop SQLite in the middle of a step, and node:sqlite offers no interrupt.
 * The parent kills it at its timeout; a watchdog thread here also kills it a little past the running query's
 * deadline, and as soon as the parent is gone, so a runaway query never outlives its deadline even if the parent
 * died without cleaning up. An idle process ends as soon as its channel to the parent closes. It says it is ready
 * once the watchdog runs; the parent sends no query before.
 */
import { Worker } from 'node:worker_threads';
import type {
  QueryAnswerMessage,
  QueryProcessReadyMessage,
  QueryRequestMessage,
} from './sql-query-messages.ts';
import { runReadOnlyQuery } from './sql-readonly-query.ts';

/** How long after the parent's own deadline the process ends itself. */
const graceMs = 1000;

/** The running query's deadline (epoch milliseconds), 0 while idle; shared with the watchdog thread. */
const deadline = new BigInt64Array(new SharedArrayBuffer(8));

// The watchdog runs on its own thread, so it keeps running while SQLite blocks the main one.
const watchdogSource = `
const { workerData } = require('node:worker_threads');
const deadline = new BigInt64Array(workerData.deadline);
const parent = workerData.parent;
setInterval(() => {
  const at = Atomics.load(deadline, 0);
  if ((at !== 0n && BigInt(Date.now()) > at) || process.ppid !== parent) process.kill(process.pid, 'SIGKILL');
}, 100);
`;
// The parent passes its pid: read here, process.ppid could already be that of init if the parent died early.
const parent = Number(process.argv[2]);
const watchdog = new Worker(watchdogSource, {
  eval: true,
  workerData: { deadline: deadline.buffer, parent },
});
// Only the channel keeps this process alive: once the parent disconnects, it ends.
watchdog.unref();
// A thread can take long to start on a busy machine; no query runs before the watchdog does.
watchdog.once('online', () => {
  const ready: QueryProcessReadyMessage = { ready: true };
  process.send?.(ready, undefined, undefined, () => {
    // The parent is gone; 'disconnect' ends this process.
  });
});

process.on('message', (message: QueryRequestMessage) => {
  Atomics.store(deadline, 0, BigInt(Date.now() + message.timeoutMs + graceMs));
  const outcome = runReadOnlyQuery(message.request);
  Atomics.store(deadline, 0, 0n);
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
