/**
 * What a SQLite store with group commit costs per commit, without the runtime around it: the commits of N W2
 * sessions (one turn of 3 tool steps each, 10 ms model) are captured on the memory store, in the order they were made,
 * then replayed into a fresh group-commit store per repetition, in groups of `group` commits. The figures are this
 * process's CPU time per commit (user + system) and the bytes it wrote per commit (`write()` calls: the log, the
 * checkpoints into the file, temporary files), from /proc/self/io.
 *
 *   npm run build && node bench/system/commit-replay.ts [sessions=2000] [repetitions=3] [group=4096]
 *
 * With TROUPE_BENCH_BASE=<another build's dist folder>, that build is replayed too, interleaved (see group-commit.ts);
 * TROUPE_BENCH_BASE_WRITER=thread adds the base build with its writer thread.
 * TROUPE_BENCH_STEPS=<n> makes each turn n tool steps instead of W2's 3 (a longer conversation).
 * TROUPE_BENCH_ORDER=scattered replays each session's k-th commit in a new random order of the sessions (a fixed
 * seed), each session's commits still in their order: W2's sessions move in step, so a group's commits are of
 * sessions made one after the other, whose rows are neighbours in the file; sessions at different paces are not.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as built from '../../dist/index.js';
import { captureCommits, median, spread, type WorkloadLibrary } from './durable-workload.ts';

const sessions = Number(process.argv[2] ?? 2000);
const repetitions = Number(process.argv[3] ?? 3);
const group = Number(process.argv[4] ?? 4096);
const baseFolder = process.env.TROUPE_BENCH_BASE;
/** The subjects: this build with each group-commit writer, and the base build with its default. */
const builds: [string, WorkloadLibrary, ('thread' | 'inline')?][] = [
  ['thread', built, 'thread'],
  ['inline', built, 'inline'],
];
if (baseFolder !== undefined) {
  const base: WorkloadLibrary = await import(join(baseFolder, 'index.js'));
  // TROUPE_BENCH_BASE_WRITER=thread replays the base with its writer thread too ('base thread').
  if (process.env.TROUPE_BENCH_BASE_WRITER === 'thread') builds.push(['base thread', base, 'thread']);
  builds.push(['base', base]);
}

/** Bytes this process has written through write() calls so far. */
function written(): number {
  const match = /wchar: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'));
  return match ? Number(match[1]) : Number.NaN;
}

// TROUPE_BENCH_STEPS: tool steps per turn (default 3, W2's); more steps make longer conversations.
const captured = await captureCommits(sessions, Number(process.env.TROUPE_BENCH_STEPS ?? 3));
const commits = process.env.TROUPE_BENCH_ORDER === 'scattered' ? scattered(captured) : captured;

/** The commits with each session's k-th commit in a new random order of the sessions, k = 0, 1, … */
function scattered<T>(list: readonly [string, T][]): [string, T][] {
  const bySession = new Map<string, [string, T][]>();
  for (const entry of list) {
    const own = bySession.get(entry[0]);
    if (own === undefined) bySession.set(entry[0], [entry]);
    else own.push(entry);
  }
  const order = [...bySession.values()];
  let seed = 12_345;
  const random = (): number => {
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
    return seed / 2 ** 32;
  };
  const out: [string, T][] = [];
  for (let wave = 0; out.length < list.length; wave++) {
    for (let index = order.length - 1; index > 0; index--) {
      const other = Math.floor(random() * (index + 1));
      [order[index], order[other]] = [order[other] as [string, T][], order[index] as [string, T][]];
    }
    for (const own of order) {
      const entry = own[wave];
      if (entry !== undefined) out.push(entry);
    }
  }
  return out;
}

const directory = mkdtempSync(join(tmpdir(), 'troupe-bench-replay-'));
const cpu = new Map<string, number[]>(builds.map(([name]) => [name, []]));
const mainCpu = new Map<string, number[]>(builds.map(([name]) => [name, []]));
const bytes = new Map<string, number>();
try {
  for (let repetition = 0; repetition < repetitions; repetition++) {
    for (let index = 0; index < builds.length; index++) {
      const [name, lib, writer] = builds[(index + repetition) % builds.length] as (typeof builds)[number];
      const store = lib.createSqliteStore(join(directory, `${repetition}-${index}.db`), {
        groupCommit: writer === undefined ? { maxBatch: group } : { maxBatch: group, writer },
      });
      const writtenBefore = written();
      const before = process.cpuUsage();
      const beforeMain = process.threadCpuUsage();
      for (let first = 0; first < commits.length; first += group)
        await Promise.all(
          commits.slice(first, first + group).map(([sessionId, batch]) => store.commit(sessionId, batch)),
        );
      const used = process.cpuUsage(before);
      const usedMain = process.threadCpuUsage(beforeMain);
      mainCpu.get(name)?.push((usedMain.user + usedMain.system) / commits.length);
      bytes.set(name, (written() - writtenBefore) / commits.length);
      store.close();
      cpu.get(name)?.push((used.user + used.system) / commits.length);
    }
  }
  console.log(
    `node ${process.version}, ${sessions.toLocaleString('en-US')} W2 sessions, ${(commits.length / sessions).toFixed(2)} commits per session, replayed in groups of ${group}${process.env.TROUPE_BENCH_ORDER === 'scattered' ? ', scattered' : ''}, ${repetitions} repetitions`,
  );
  console.log(
    `${'build'.padEnd(12)} ${'µs CPU per commit: median (range)'.padEnd(36)} ${'main thread µs per commit'.padEnd(30)} bytes written per commit`,
  );
  for (const [name, values] of cpu)
    console.log(
      `${name.padEnd(12)} ${spread(values).padEnd(36)} ${spread(mainCpu.get(name) ?? []).padEnd(30)} ${Math.round(bytes.get(name) ?? 0).toLocaleString('en-US')}`,
    );
  console.log(
    `(µs per session: ${[...cpu].map(([name, values]) => `${name} ${Math.round((median(values) * commits.length) / sessions)}`).join(', ')})`,
  );
} finally {
  rmSync(directory, { recursive: true, force: true });
}
