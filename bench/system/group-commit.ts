/**
 * W2 on durable sessions: N sessions at once, each one turn of 3 tool steps with a 10 ms model (the W2 workload of
 * bench/worker.ts, as sessions instead of run()s), on the memory store, on SQLite FULL with one transaction per commit,
 * and on SQLite FULL with group commit (`group`; `thread`: its groups written by the store's writer thread). Rounds are interleaved (the order rotating); each subject gets a fresh file
 * per round. The figure is the batch's wall time, median over rounds, with its range, its ratio to the memory store's
 * (the target: group commit within 2x of memory), and the commits a session makes (each one fsync on FULL without
 * group commit).
 *
 *   npm run build && node bench/system/group-commit.ts [sessions=10000] [rounds=3] [stores=memory,full,group] [directory]
 *
 * Before and after in one run: copy a build to another folder (`cp -r dist /tmp/base-dist`), set
 * TROUPE_BENCH_BASE=/tmp/base-dist, and name its subjects with `@base` (`memory,group,memory@base,group@base`). Each
 * subject's ratio is to the memory store of its own build. CPU time is the process's (all threads) and the main
 * thread's alone.
 *
 * The memory store's own wall moves by 2x within a run on a shared machine, so a ratio of two medians can land on
 * either side of 2x by chance. Each subject other than a memory store is also given its ratio per round: its wall
 * over the wall of its build's memory store in the same round (rounds interleaved, so the two ran seconds apart),
 * as the median and quartiles over the rounds; likewise for the process's CPU.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionStore } from '../../dist/index.js';
import * as built from '../../dist/index.js';
import {
  answerAfter,
  median,
  openStore,
  type StoreKind,
  spread,
  stepAgent,
  type WorkloadLibrary,
} from './durable-workload.ts';

const sessions = Number(process.argv[2] ?? 10_000);
const rounds = Number(process.argv[3] ?? 3);
const stores = (process.argv[4] ?? 'memory,full,group').split(',');
const directory = mkdtempSync(join(process.argv[5] ?? tmpdir(), 'troupe-bench-group-'));
const steps = 3;
const baseFolder = process.env.TROUPE_BENCH_BASE;
const base: WorkloadLibrary | undefined =
  baseFolder === undefined ? undefined : await import(join(baseFolder, 'index.js'));
const libraries = new Map<string, WorkloadLibrary>([['', built]]);
if (base !== undefined) libraries.set('@base', base);
const agents = new Map(
  [...libraries].map(([suffix, lib]) => [suffix, stepAgent({ steps, modelDelayMs: 10, lib })]),
);
const expected = answerAfter(steps);

const kinds: Record<string, { name: string; kind: StoreKind }> = {
  memory: { name: 'memory store', kind: 'memory' },
  full: { name: 'SQLite FULL', kind: 'sqlite-full' },
  normal: { name: 'SQLite NORMAL', kind: 'sqlite-normal' },
  group: { name: 'SQLite FULL, group commit', kind: 'sqlite-group' },
  thread: { name: 'SQLite FULL, group, thread', kind: 'sqlite-group-thread' },
};

/** Counts the commits a store is asked for (the fsyncs of FULL without group commit). */
function counting(store: SessionStore): { store: SessionStore; commits: () => number } {
  let commits = 0;
  const commit = store.commit.bind(store);
  return {
    store: {
      ...store,
      commit: (id, batch) => {
        commits++;
        return commit(id, batch);
      },
    },
    commits: () => commits,
  };
}

/** A subject's store kind and its build: `group@base` is group commit on the baseline build. */
function subjectOf(name: string): { name: string; kind: StoreKind; suffix: string } {
  const at = name.indexOf('@');
  const store = at < 0 ? name : name.slice(0, at);
  const suffix = at < 0 ? '' : name.slice(at);
  const subject = Object.hasOwn(kinds, store) ? kinds[store] : undefined;
  if (subject === undefined) throw new Error(`no store "${store}" (memory, full, normal, group, thread)`);
  if (!libraries.has(suffix))
    throw new Error(`"${name}": set TROUPE_BENCH_BASE to the baseline's dist folder`);
  return { name: `${subject.name}${suffix}`, kind: subject.kind, suffix };
}

async function once(
  subject: string,
  round: number,
  count = sessions,
): Promise<{ ms: number; cpuMs: number; mainCpuMs: number; commits: number; bytes: number }> {
  const { kind, suffix } = subjectOf(subject);
  const lib = libraries.get(suffix) as WorkloadLibrary;
  const agent = agents.get(suffix);
  const file = join(directory, `${kind}${suffix}-${round}.db`);
  const raw = openStore(kind, file, lib);
  const { store, commits } = counting(raw);
  const system = lib.createAgentSystem({ store });
  try {
    const cpu = process.cpuUsage();
    const mainCpu = process.threadCpuUsage();
    const start = performance.now();
    const started = Array.from({ length: count }, (_, index) =>
      system.spawn(agent, 'Do the task.', { sessionId: `s${index}` }),
    );
    const results = await Promise.all(started.map((session) => session.result));
    const ms = performance.now() - start;
    const used = process.cpuUsage(cpu);
    const cpuMs = (used.user + used.system) / 1000;
    const usedMain = process.threadCpuUsage(mainCpu);
    const mainCpuMs = (usedMain.user + usedMain.system) / 1000;
    for (const result of results)
      if (result.status !== 'completed' || result.text !== expected)
        throw new Error(`${kind}: a turn ended ${result.stopReason}: ${result.text}`);
    const walBytes = kind === 'memory' ? 0 : sizeOf(`${file}-wal`);
    return {
      ms,
      cpuMs,
      mainCpuMs,
      commits: commits(),
      bytes: (walBytes + (kind === 'memory' ? 0 : sizeOf(file))) / count,
    };
  } finally {
    await system.shutdown();
    await raw.close();
  }
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

const samples = new Map<string, number[]>(stores.map((store) => [store, []]));
const cpuSamples = new Map<string, number[]>(stores.map((store) => [store, []]));
const mainCpuSamples = new Map<string, number[]>(stores.map((store) => [store, []]));
const shape = new Map<string, { commits: number; bytes: number }>();

/** Each round's figure of `store` over the same round's figure of its build's memory store. */
function pairedRatios(store: string, figures: Map<string, number[]>): number[] {
  const own = figures.get(store) ?? [];
  const memory = figures.get(`memory${subjectOf(store).suffix}`) ?? [];
  return own.map((value, round) => value / (memory[round] ?? Number.NaN));
}

/** The value at fraction `at` of the sorted values, interpolated between neighbours. */
function quantile(values: readonly number[], at: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const position = (sorted.length - 1) * at;
  const below = Math.floor(position);
  const above = Math.ceil(position);
  const low = sorted[below] as number;
  return low + ((sorted[above] as number) - low) * (position - below);
}

/** `median (lower quartile–upper quartile)` of ratios, and how many rounds were under `limit`. */
function ratioSpread(values: readonly number[], limit: number): string {
  const under = values.filter((value) => value < limit).length;
  return `${quantile(values, 0.5).toFixed(2)} (${quantile(values, 0.25).toFixed(2)}–${quantile(values, 0.75).toFixed(2)}), ${under}/${values.length} < ${limit}`;
}
try {
  // A warm-up pass, not counted: compiled code and a first file for every store.
  for (const store of stores) await once(store, -1, 50);
  for (let round = 0; round < rounds; round++) {
    const order = stores.map((_, index) => stores[(index + round) % stores.length] as string);
    for (const store of order) {
      const { ms, cpuMs, mainCpuMs, commits, bytes } = await once(store, round);
      samples.get(store)?.push(ms);
      cpuSamples.get(store)?.push(cpuMs);
      mainCpuSamples.get(store)?.push(mainCpuMs);
      shape.set(store, { commits: commits / sessions, bytes });
      console.error(
        `round ${round + 1}: ${subjectOf(store).name}: ${Math.round(ms)} ms wall, ${Math.round(cpuMs)} ms CPU (${Math.round(mainCpuMs)} on the main thread), load ${loadavg()[0]?.toFixed(1)}`,
      );
    }
  }
  console.log(
    `node ${process.version}, ${sessions.toLocaleString('en-US')} sessions at once × ${steps} tool steps, 10 ms model, ${rounds} interleaved rounds, files in ${directory}`,
  );
  // CPU time (this process's, user + system, all threads; and the main thread's alone) moves less than wall time
  // on a shared machine.
  console.log(
    `${'store'.padEnd(32)} ${'wall ms: median (range)'.padEnd(26)} × memory  ${'CPU ms: median (range)'.padEnd(26)} × memory  ${'main-thread CPU ms'.padEnd(26)} × memory  commits/session  file+WAL bytes/session`,
  );
  for (const [store, values] of samples) {
    const { name, suffix } = subjectOf(store);
    const memory = median(samples.get(`memory${suffix}`) ?? [Number.NaN]);
    const cpu = cpuSamples.get(store) ?? [];
    const memoryCpu = median(cpuSamples.get(`memory${suffix}`) ?? [Number.NaN]);
    const mainCpu = mainCpuSamples.get(store) ?? [];
    const memoryMainCpu = median(mainCpuSamples.get(`memory${suffix}`) ?? [Number.NaN]);
    const { commits, bytes } = shape.get(store) ?? { commits: 0, bytes: 0 };
    console.log(
      `${name.padEnd(32)} ${spread(values).padEnd(26)} ${(median(values) / memory).toFixed(2).padStart(8)}  ${spread(cpu).padEnd(26)} ${(median(cpu) / memoryCpu).toFixed(2).padStart(8)}  ${spread(mainCpu).padEnd(26)} ${(median(mainCpu) / memoryMainCpu).toFixed(2).padStart(8)} ${commits.toFixed(1).padStart(16)} ${Math.round(bytes).toLocaleString('en-US').padStart(23)}`,
    );
  }
  // Paired per round: each round's ratio to the memory store of the same round and build.
  console.log(
    `${'per round, paired'.padEnd(32)} ${'wall × memory: median (quartiles)'.padEnd(40)} ${'CPU × memory: median (quartiles)'.padEnd(40)} per-round wall × memory`,
  );
  for (const store of samples.keys()) {
    if (store.startsWith('memory')) continue;
    const { name, suffix } = subjectOf(store);
    if (!samples.has(`memory${suffix}`)) continue;
    const wall = pairedRatios(store, samples);
    const cpu = pairedRatios(store, cpuSamples);
    console.log(
      `${name.padEnd(32)} ${ratioSpread(wall, 2).padEnd(40)} ${ratioSpread(cpu, 2).padEnd(40)} ${wall.map((ratio) => ratio.toFixed(2)).join(' ')}`,
    );
  }
} finally {
  rmSync(directory, { recursive: true, force: true });
}
