/**
 * Where W2's cost on SQLite with group commit goes beside the store's statements: W2 (N sessions at once, one turn of
 * 3 tool steps, 10 ms model) on the memory store and on SQLite FULL with group commit, per commit made:
 *
 * - CPU of all threads, of the main thread, and of the other threads (the collector's helpers, mostly);
 * - the collector's pauses on the main thread by kind (scavenges, major), their count and µs per commit;
 * - promises, immediates and timeouts created per commit (a pass of its own, with an async hook);
 * - bytes allocated per commit, split between the bundle chunk that holds the SQLite store and the rest (a sampling
 *   heap profile that keeps what the collector freed; a pass of its own).
 *
 *   npm run build && node bench/system/commit-outside-store.ts [sessions=10000] [rounds=2] [allocation sessions=2000]
 *
 * With TROUPE_BENCH_BASE=<another build's dist folder>, that build is measured too, interleaved.
 */
import { createHook } from 'node:async_hooks';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import * as built from '../../dist/index.js';
import {
  type AllocationNode,
  allocationBySite,
  sampleAllocations,
} from '../experiments/allocation-by-site.ts';
import { median, openStore, type StoreKind, stepAgent, type WorkloadLibrary } from './durable-workload.ts';

const sessions = Number(process.argv[2] ?? 10_000);
const rounds = Number(process.argv[3] ?? 2);
const allocationSessions = Number(process.argv[4] ?? 2000);
const baseFolder = process.env.TROUPE_BENCH_BASE;
const builds = new Map<string, WorkloadLibrary>([['this tree', built]]);
if (baseFolder !== undefined) builds.set('base', await import(join(baseFolder, 'index.js')));
const kinds: StoreKind[] = ['memory', 'sqlite-group'];
const directory = mkdtempSync(join(tmpdir(), 'troupe-bench-outside-'));

/** The collector's pauses seen since the last reset, by kind. */
const pauses = new Map<string, { ms: number; count: number }>();
const gcKinds = new Map([
  [1, 'scavenge'],
  [2, 'major'],
  [4, 'incremental'],
  [8, 'weak callbacks'],
]);
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const kind = gcKinds.get((entry.detail as { kind: number }).kind) ?? 'other';
    const seen = pauses.get(kind) ?? { ms: 0, count: 0 };
    seen.ms += entry.duration;
    seen.count++;
    pauses.set(kind, seen);
  }
}).observe({ entryTypes: ['gc'] });

/** Runs `count` W2 sessions to their end on a fresh store; returns the commits the store was asked for. */
async function w2(lib: WorkloadLibrary, kind: StoreKind, count: number, file: string): Promise<number> {
  const raw = openStore(kind, file, lib);
  let commits = 0;
  const store = Object.create(raw) as typeof raw;
  store.commit = (sessionId, batch) => {
    commits++;
    return raw.commit(sessionId, batch);
  };
  const system = lib.createAgentSystem({ store });
  const agent = stepAgent({ steps: 3, modelDelayMs: 10, lib });
  try {
    const started = Array.from({ length: count }, (_, index) =>
      system.spawn(agent, 'Do the task.', { sessionId: `s${index}` }),
    );
    for (const result of await Promise.all(started.map((session) => session.result)))
      if (result.status !== 'completed') throw new Error(`${kind}: a turn ended ${result.stopReason}`);
  } finally {
    await system.shutdown();
    await raw.close();
  }
  return commits;
}

/** Whether a bundle chunk holds the SQLite store (its esbuild marker), by the chunk's URL. */
const storeChunks = new Map<string, boolean>();
function inStoreChunk(url: string): boolean {
  let known = storeChunks.get(url);
  if (known === undefined) {
    try {
      known =
        url.startsWith('file:') &&
        readFileSync(fileURLToPath(url), 'utf8').includes('// src/persistence/sqlite-store.ts');
    } catch {
      known = false;
    }
    storeChunks.set(url, known);
  }
  return known;
}

/** Bytes allocated per commit, in all and in the store's chunk. */
async function allocation(lib: WorkloadLibrary, kind: StoreKind): Promise<{ all: number; store: number }> {
  const { result: commits, head } = await sampleAllocations(1024, () =>
    w2(lib, kind, allocationSessions, join(directory, `alloc-${kind}-${Math.random()}.db`)),
  );
  let store = 0;
  const walk = (node: AllocationNode): void => {
    if (inStoreChunk(node.callFrame.url)) store += node.selfSize;
    for (const child of node.children) walk(child);
  };
  walk(head);
  return { all: allocationBySite(head).total / commits, store: store / commits };
}

/** Async resources created per commit, by type. */
async function resources(lib: WorkloadLibrary, kind: StoreKind): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const hook = createHook({
    init(_id, type) {
      counts.set(type, (counts.get(type) ?? 0) + 1);
    },
  });
  hook.enable();
  const commits = await w2(lib, kind, 1000, join(directory, `hooks-${kind}-${Math.random()}.db`));
  hook.disable();
  return new Map([...counts].map(([type, count]) => [type, count / commits]));
}

interface Sample {
  cpu: number;
  main: number;
  commits: number;
  pauses: Map<string, { ms: number; count: number }>;
}
const samples = new Map<string, Sample[]>();
try {
  for (const [name, lib] of builds)
    for (const kind of kinds) await w2(lib, kind, 50, join(directory, `warm-${name}-${kind}.db`));
  for (let round = 0; round < rounds; round++)
    for (const [name, lib] of builds)
      for (const kind of kinds) {
        pauses.clear();
        const cpu = process.cpuUsage();
        const main = process.threadCpuUsage();
        const commits = await w2(lib, kind, sessions, join(directory, `${name}-${kind}-${round}.db`));
        const usedCpu = process.cpuUsage(cpu);
        const usedMain = process.threadCpuUsage(main);
        // The observer hears of the last pauses on a later turn.
        await new Promise((resolve) => setTimeout(resolve, 20));
        const sample: Sample = {
          cpu: (usedCpu.user + usedCpu.system) / commits,
          main: (usedMain.user + usedMain.system) / commits,
          commits,
          pauses: new Map(pauses),
        };
        const key = `${name}: ${kind}`;
        samples.set(key, [...(samples.get(key) ?? []), sample]);
        console.error(
          `round ${round + 1}: ${key}: ${sample.cpu.toFixed(1)} µs CPU per commit (${sample.main.toFixed(1)} main), load ${loadavg()[0]?.toFixed(1)}`,
        );
      }
  console.log(
    `node ${process.version}, ${sessions.toLocaleString('en-US')} W2 sessions, ${rounds} rounds (medians); allocation at ${allocationSessions.toLocaleString('en-US')} sessions`,
  );
  for (const [name, lib] of builds)
    for (const kind of kinds) {
      const key = `${name}: ${kind}`;
      const runs = samples.get(key) ?? [];
      const at = (pick: (sample: Sample) => number) => median(runs.map(pick)).toFixed(1);
      const pauseKinds = [...new Set(runs.flatMap((sample) => [...sample.pauses.keys()]))];
      const pauseText = pauseKinds
        .map((pauseKind) => {
          const of = (sample: Sample) => sample.pauses.get(pauseKind) ?? { ms: 0, count: 0 };
          return `${pauseKind} ${at((sample) => (of(sample).ms * 1000) / sample.commits)} µs (${median(runs.map((sample) => of(sample).count))})`;
        })
        .join(', ');
      const allocated = await allocation(lib, kind);
      const created = await resources(lib, kind);
      console.log(
        `${key.padEnd(26)} commits/session ${((runs[0]?.commits ?? 0) / sessions).toFixed(1)}; µs per commit: CPU ${at((sample) => sample.cpu)}, main thread ${at((sample) => sample.main)}, other threads ${at((sample) => sample.cpu - sample.main)}; pauses: ${pauseText}`,
      );
      console.log(
        `${''.padEnd(26)} bytes allocated per commit ${Math.round(allocated.all).toLocaleString('en-US')} (the store's chunk ${Math.round(allocated.store).toLocaleString('en-US')}); per commit ${[...created].map(([type, count]) => `${type} ${count.toFixed(2)}`).join(', ')}`,
      );
    }
} finally {
  rmSync(directory, { recursive: true, force: true });
}
