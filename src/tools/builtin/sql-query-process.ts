/**
 * The child process the sqlQuery tool starts for each query: it reads one request (JSON) on stdin, runs it with
 * runReadOnlyQuery and writes the outcome (JSON) on stdout. A query that runs too long is ended by killing this
 * process: a thread cannot stop SQLite in the middle of a step, and node:sqlite offers no interrupt. The parent
 * kills it at its timeout; a watchdog thread here also kills it a little later, and as soon as the parent is gone,
 * so a runaway query never outlives its deadline even if the parent died without cleaning up.
 */
import { Worker } from 'node:worker_threads';
import { type ReadOnlyQueryRequest, runReadOnlyQuery } from './sql-readonly-query.ts';

/** How long after the parent's own deadline the process ends itself. */
const graceMs = 1000;

interface ChildRequest extends ReadOnlyQueryRequest {
  /** Milliseconds the query may run before the parent kills it. */
  timeoutMs: number;
}

// The watchdog runs on its own thread, so it keeps running while SQLite blocks the main one.
const watchdogSource = `
const { workerData } = require('node:worker_threads');
const deadline = Date.now() + workerData.lifetimeMs;
const parent = process.ppid;
setInterval(() => {
  if (Date.now() > deadline || process.ppid !== parent) process.kill(process.pid, 'SIGKILL');
}, 100);
`;

const chunks: Buffer[] = [];
process.stdin.on('data', (chunk: Buffer) => chunks.push(chunk));
process.stdin.on('end', () => {
  const request = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChildRequest;
  const watchdog = new Worker(watchdogSource, {
    eval: true,
    workerData: { lifetimeMs: request.timeoutMs + graceMs },
  });
  watchdog.unref();
  process.stdout.write(JSON.stringify(runReadOnlyQuery(request)), () => process.exit(0));
});
