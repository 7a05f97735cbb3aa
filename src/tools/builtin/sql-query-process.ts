/**
 * The child process the sqlQuery tool starts for each query: it reads one request (JSON) on stdin, runs it with
 * runReadOnlyQuery and writes the outcome (JSON) on stdout. A query that runs too long is ended by killing this
 * process: a thread cannot stop SQLite in the middle of a step, and node:sqlite offers no interrupt.
 */
import { type ReadOnlyQueryRequest, runReadOnlyQuery } from './sql-readonly-query.ts';

const chunks: Buffer[] = [];
process.stdin.on('data', (chunk: Buffer) => chunks.push(chunk));
process.stdin.on('end', () => {
  const request = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ReadOnlyQueryRequest;
  process.stdout.write(JSON.stringify(runReadOnlyQuery(request)));
});
