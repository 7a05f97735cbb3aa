/**
 * Where a group commit's time goes, statement by statement: the commits of N W2 sessions (captured on the memory
 * store, as commit-replay.ts does) are replayed in groups into a fresh SQLite store of this tree's source, with each
 * prepared statement and each step of `writeCommit` timed. Prints µs per commit for each, in one process (no runtime
 * around the store). Wall time per call (the store runs on this thread, so it is this thread's time).
 *
 *   node bench/system/commit-statements.ts [sessions=2000] [group=4096] [repetitions=3]
 *
 * With TROUPE_STATEMENTS_BASE=<another tree's src/persistence/sqlite-store.ts>, that tree's store is replayed too,
 * interleaved, and the figures are given side by side (medians of the repetitions). TROUPE_BENCH_STEPS=<n> makes
 * each turn n tool steps instead of W2's 3 (a longer conversation). TROUPE_STATEMENTS_ALLOCATION=1 adds, after the
 * timed repetitions, one replay per tree (untimed) under V8's sampling heap profiler: the bytes the store allocates
 * per commit (garbage included) and the sites that allocate most.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as thisTree from '../../src/persistence/sqlite-store.ts';
import { createMessageLog } from '../../src/persistence/stored-format/stored-messages.ts';
import { allocationBySite, sampleAllocations } from '../experiments/allocation-by-site.ts';
import { captureCommits, spread } from './durable-workload.ts';

const sessions = Number(process.argv[2] ?? 2000);
const group = Number(process.argv[3] ?? 4096);
const repetitions = Number(process.argv[4] ?? 3);
type StoreModule = typeof thisTree;
const variants: [string, StoreModule][] = [['this tree', thisTree]];
const baseSource = process.env.TROUPE_STATEMENTS_BASE;
if (baseSource !== undefined) variants.push(['base', (await import(baseSource)) as StoreModule]);

// TROUPE_BENCH_STEPS: tool steps per turn (default 3, W2's); more steps make longer conversations.
const steps = Number(process.env.TROUPE_BENCH_STEPS ?? 3);
const commits = await captureCommits(sessions, steps);

/** µs per commit of each timed step, per variant, per repetition. */
const figures = new Map<string, Map<string, number[]>>(variants.map(([name]) => [name, new Map()]));
const directory = mkdtempSync(join(tmpdir(), 'troupe-bench-statements-'));
try {
  for (let repetition = 0; repetition < repetitions; repetition++)
    for (let index = 0; index < variants.length; index++) {
      const [name, lib] = variants[(index + repetition) % variants.length] as (typeof variants)[number];
      const spent = new Map<string, number>();
      const timed = <F extends (...args: never[]) => unknown>(step: string, fn: F): F =>
        ((...args: never[]) => {
          const start = process.hrtime.bigint();
          try {
            return fn(...args);
          } finally {
            spent.set(step, (spent.get(step) ?? 0) + Number(process.hrtime.bigint() - start) / 1000);
          }
        }) as F;
      const db = lib.openDatabase(join(directory, `${repetition}-${index}.db`), 'full', 5_000, false);
      const s = lib.prepareStatements(db, 30_000) as Record<string, unknown>;
      for (const [key, value] of Object.entries(s)) {
        if (typeof value === 'function') s[key] = timed(key, value as (...args: never[]) => unknown);
        else if (value !== null && typeof value === 'object') {
          const target = value as Record<string, unknown>;
          const wrapped: Record<string, unknown> = {};
          for (const method of ['run', 'get', 'all'] as const)
            if (typeof target[method] === 'function')
              wrapped[method] = timed(
                `${key}.${method}`,
                (target[method] as (...a: never[]) => unknown).bind(target),
              );
          // Objects of helpers (heads, leases): each of their functions.
          for (const [helper, fn] of Object.entries(target))
            if (typeof fn === 'function' && !(helper in wrapped))
              wrapped[helper] = timed(`${key}.${helper}`, (fn as (...a: never[]) => unknown).bind(wrapped));
          s[key] = wrapped;
        }
      }
      const statements = s as unknown as ReturnType<StoreModule['prepareStatements']>;
      // What the store's commits wrote of each conversation (a tree before layout 7 takes no such argument).
      const log = createMessageLog();
      const rowsOf = timed('commitRowsOf (JSON)', lib.commitRowsOf);
      const json = (sessionId: string, batch: (typeof commits)[number][1]) => rowsOf(sessionId, batch, log);
      const write = timed('writeCommit (all)', lib.writeCommit);
      const start = process.cpuUsage();
      for (let first = 0; first < commits.length; first += group) {
        statements.beginWrite.run();
        for (const [sessionId, batch] of commits.slice(first, first + group)) {
          const rows = json(sessionId, batch);
          statements.savepoint.run();
          write(statements, rows);
          statements.release.run();
        }
        statements.commit.run();
      }
      const cpu = process.cpuUsage(start);
      db.close();
      const mine = figures.get(name) as Map<string, number[]>;
      const add = (step: string, value: number) => mine.set(step, [...(mine.get(step) ?? []), value]);
      add('CPU per commit, in all', (cpu.user + cpu.system) / commits.length);
      for (const [step, micros] of spent) add(step, micros / commits.length);
    }
  console.log(
    `node ${process.version}, ${sessions} W2 sessions, ${(commits.length / sessions).toFixed(2)} commits per session, groups of ${group}, ${repetitions} repetitions; µs per commit, median (range)`,
  );
  const steps = [...(figures.get('this tree') as Map<string, number[]>).keys()];
  for (const [, steps2] of figures)
    for (const step of steps2.keys()) if (!steps.includes(step)) steps.push(step);
  console.log(`${'step'.padEnd(28)} ${variants.map(([name]) => name.padEnd(24)).join(' ')}`);
  for (const step of steps)
    console.log(
      `${step.padEnd(28)} ${variants
        .map(([name]) => {
          const v = figures.get(name)?.get(step);
          return (v === undefined ? '-' : spread(v)).padEnd(24);
        })
        .join(' ')}`,
    );
  if (process.env.TROUPE_STATEMENTS_ALLOCATION === '1')
    for (const [name, lib] of variants) {
      const db = lib.openDatabase(join(directory, `allocation-${name}.db`), 'full', 5_000, false);
      const statements = lib.prepareStatements(db, 30_000);
      const log = createMessageLog();
      const replay = (part: typeof commits) => {
        for (let first = 0; first < part.length; first += group) {
          statements.beginWrite.run();
          for (const [sessionId, batch] of part.slice(first, first + group)) {
            const rows = lib.commitRowsOf(sessionId, batch, log);
            statements.savepoint.run();
            lib.writeCommit(statements, rows);
            statements.release.run();
          }
          statements.commit.run();
        }
      };
      // The first third warms the code up; the rest is sampled.
      const warm = Math.floor(commits.length / 3);
      replay(commits.slice(0, warm));
      const { head } = await sampleAllocations(128, () => replay(commits.slice(warm)));
      db.close();
      const sampled = commits.length - warm;
      const { total, sites } = allocationBySite(head);
      console.log(`${name}: ${(total / sampled).toFixed(0)} bytes allocated per commit; the largest sites:`);
      for (const [site, bytes] of sites.slice(0, 8))
        console.log(`  ${(bytes / sampled).toFixed(0).padStart(6)}  ${site}`);
    }
} finally {
  rmSync(directory, { recursive: true, force: true });
}
