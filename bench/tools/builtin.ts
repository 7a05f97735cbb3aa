/**
 * The built-in tools on the built package (`npm run build` first), each against a baseline measured in the same run:
 * - calculator: one evaluation of a typical expression, and the refusal of an exponent tower, against JavaScript
 *   compiling and running the same expression (`new Function`, which the tool must never use);
 * - sqlQuery: one query through the tool (in the tool's long-lived query process, which a runaway query's timeout
 *   kills) against the same query in-process, against the first query of a fresh tool (a process start-up, what
 *   every query cost when each ran in its own process) and against starting an empty Node process; and how long
 *   after its timeout a runaway recursive CTE is reported;
 * - documentSearch: one search over a 1,000-document corpus (index built once) against a linear scan of the
 *   chunks for the query's words.
 *
 *   npm run build && npx tsx bench/tools/builtin.ts [--quick]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import {
  type calculator,
  documentSearch,
  evaluateArithmetic,
  sqlQuery,
} from '../../dist/tools/builtin/index.js';
import { runReadOnlyQuery } from '../../src/tools/builtin/sql-readonly-query.ts';

const quick = process.argv.includes('--quick');
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] as number;
const context = { signal: new AbortController().signal } as Parameters<
  ReturnType<typeof calculator>['execute']
>[1];

function timeEach(times: number, work: () => void): number {
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    work();
    samples.push(performance.now() - started);
  }
  return median(samples);
}

async function timeEachAsync(times: number, work: () => Promise<unknown>): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    await work();
    samples.push(performance.now() - started);
  }
  return median(samples);
}

// Calculator.
const expression = '(1.5 + 2) * 3 ** 2 // 4 - -7 % 3';
const jsExpression = '(1.5 + 2) * 3 ** 2 / 4 - -7 % 3';
const reps = quick ? 2_000 : 20_000;
for (let i = 0; i < 1000; i++) evaluateArithmetic(expression);
const calcUs = timeEach(reps, () => evaluateArithmetic(expression)) * 1000;
const jsUs = timeEach(reps, () => new Function(`return ${jsExpression}`)()) * 1000;
const towerUs =
  timeEach(quick ? 200 : 2000, () => {
    try {
      evaluateArithmetic('9**9**9**9');
    } catch {
      // refused, as expected
    }
  }) * 1000;
console.log(
  `calculator: ${calcUs.toFixed(1)} µs per evaluation (new Function: ${jsUs.toFixed(1)} µs, ${(calcUs / jsUs).toFixed(2)}x); 9**9**9**9 refused in ${towerUs.toFixed(1)} µs`,
);

// SQL.
const dir = mkdtempSync(join(tmpdir(), 'troupe-bench-sql-'));
try {
  const database = join(dir, 'bench.db');
  const db = new DatabaseSync(database);
  db.exec('CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)');
  const insert = db.prepare('INSERT INTO orders (total) VALUES (?)');
  for (let i = 0; i < 1000; i++) insert.run(i * 1.5);
  db.close();
  const query = 'SELECT id, total FROM orders WHERE total > 100 ORDER BY total DESC LIMIT 20';
  const sql = sqlQuery({ database, timeoutMs: 30_000 });
  const queries = quick ? 5 : 20;
  await sql.execute({ query }, context);
  const toolMs = await timeEachAsync(queries * 10, () => sql.execute({ query }, context));
  await sql.close();
  const inProcessMs = timeEach(queries * 10, () =>
    runReadOnlyQuery({ database, sql: query, maxRows: 100, maxCellChars: 2000, heapLimitBytes: 1 << 28 }),
  );
  const freshToolMs = await timeEachAsync(queries, async () => {
    await using fresh = sqlQuery({ database, timeoutMs: 30_000 });
    await fresh.execute({ query }, context);
  });
  const emptyNodeMs = await timeEachAsync(
    queries,
    () =>
      new Promise((resolve) => {
        spawn(process.execPath, ['-e', '']).on('close', resolve);
      }),
  );
  console.log(
    `sqlQuery: ${toolMs.toFixed(2)} ms per query (in-process: ${inProcessMs.toFixed(2)} ms, tool / in-process ${(toolMs / inProcessMs).toFixed(1)}x; first query of a fresh tool, with its process start-up: ${freshToolMs.toFixed(1)} ms, ${(freshToolMs / toolMs).toFixed(0)}x a query; an empty Node process: ${emptyNodeMs.toFixed(1)} ms)`,
  );
  const timeoutMs = 500;
  await using runaway = sqlQuery({ database, timeoutMs });
  await runaway.execute({ query }, context); // the process is started, as in an agent's later queries
  const started = performance.now();
  await runaway
    .execute(
      { query: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c' },
      context,
    )
    .catch(() => undefined);
  const stoppedMs = performance.now() - started;
  console.log(
    `sqlQuery: a runaway recursive CTE with timeoutMs ${timeoutMs} was reported after ${stoppedMs.toFixed(0)} ms (${(stoppedMs / timeoutMs).toFixed(2)}x the timeout)`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}

// Document search.
const topics = ['install', 'configure', 'budget', 'network', 'storage', 'upgrade', 'backup', 'security'];
const documents = Array.from({ length: 1000 }, (_, index) => {
  const topic = topics[index % topics.length] as string;
  return {
    id: `doc-${index}.md`,
    text: `# ${topic} guide ${index}\n\n## Overview\n\nThis page explains ${topic} step ${index} for release ${index % 37}.\n\n## Details\n\nRun the ${topic} command with flag --level ${index % 11}, then check the log for code E${index}.\n`,
  };
});
const search = documentSearch({ documents });
const buildStarted = performance.now();
await search.execute({ query: 'warm up' }, context);
const buildMs = performance.now() - buildStarted;
const words = ['backup', 'flag', 'E512'];
const searchMs = await timeEachAsync(quick ? 20 : 200, () =>
  search.execute({ query: words.join(' ') }, context),
);
const chunks = documents.flatMap((document) => document.text.split(/\n(?=#)/));
const scanMs = timeEach(quick ? 20 : 200, () => {
  const lower = words.map((word) => word.toLowerCase());
  chunks.filter((chunk) => lower.some((word) => chunk.toLowerCase().includes(word)));
});
console.log(
  `documentSearch: 1000 documents (${chunks.length} chunks) indexed in ${buildMs.toFixed(0)} ms; ${searchMs.toFixed(2)} ms per search (linear substring scan: ${scanMs.toFixed(2)} ms, ${(searchMs / scanMs).toFixed(2)}x)`,
);
