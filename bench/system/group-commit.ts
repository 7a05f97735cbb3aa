/**
 * W2 on durable sessions: N sessions at once, each one turn of 3 tool steps with a 10 ms model (the W2 workload of
 * bench/worker.ts, as sessions instead of run()s), on the memory store, on SQLite FULL with one transaction per commit,
 * and on SQLite FULL with group commit. Rounds are interleaved (the order rotating); each subject gets a fresh file
 * per round. The figure is the batch's wall time, median over rounds, with its range, its ratio to the memory store's
 * (the target: group commit within 2x of memory), and the commits a session makes (each one fsync on FULL without
 * group commit).
 *
 *   npm run build && node bench/system/group-commit.ts [sessions=10000] [rounds=3] [stores=memory,full,group] [directory]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAgentSystem, type SessionStore } from '../../dist/index.js';
import { answerAfter, median, openStore, type StoreKind, spread, stepAgent } from './durable-workload.ts';

const sessions = Number(process.argv[2] ?? 10_000);
const rounds = Number(process.argv[3] ?? 3);
const stores = (process.argv[4] ?? 'memory,full,group').split(',');
const directory = mkdtempSync(join(process.argv[5] ?? tmpdir(), 'troupe-bench-group-'));
const steps = 3;
const agent = stepAgent({ steps, modelDelayMs: 10 });
const expected = answerAfter(steps);

const kinds: Record<string, { name: string; kind: StoreKind }> = {
  memory: { name: 'memory store', kind: 'memory' },
  full: { name: 'SQLite FULL', kind: 'sqlite-full' },
  normal: { name: 'SQLite NORMAL', kind: 'sqlite-normal' },
  group: { name: 'SQLite FULL, group commit', kind: 'sqlite-group' },
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

async function once(
  kind: StoreKind,
  round: number,
  count = sessions,
): Promise<{ ms: number; commits: number }> {
  const raw = openStore(kind, join(directory, `${kind}-${round}.db`));
  const { store, commits } = counting(raw);
  const system = createAgentSystem({ store });
  try {
    const start = performance.now();
    const started = Array.from({ length: count }, (_, index) =>
      system.spawn(agent, 'Do the task.', { sessionId: `s${index}` }),
    );
    const results = await Promise.all(started.map((session) => session.result));
    const ms = performance.now() - start;
    for (const result of results)
      if (result.status !== 'completed' || result.text !== expected)
        throw new Error(`${kind}: a turn ended ${result.stopReason}: ${result.text}`);
    return { ms, commits: commits() };
  } finally {
    await system.shutdown();
    await raw.close();
  }
}

const samples = new Map<string, number[]>(stores.map((store) => [store, []]));
let commitsPerSession = 0;
try {
  // A warm-up pass, not counted: compiled code and a first file for every store.
  for (const store of stores) {
    const subject = kinds[store];
    if (subject === undefined) throw new Error(`no store "${store}" (memory, full, normal, group)`);
    await once(subject.kind, -1, 50);
  }
  for (let round = 0; round < rounds; round++) {
    const order = stores.map((_, index) => stores[(index + round) % stores.length] as string);
    for (const store of order) {
      const subject = kinds[store] as (typeof kinds)[string];
      const { ms, commits } = await once(subject.kind, round);
      samples.get(store)?.push(ms);
      commitsPerSession = commits / sessions;
      console.error(`round ${round + 1}: ${subject.name}: ${Math.round(ms)} ms`);
    }
  }
  const memory = median(samples.get('memory') ?? [Number.NaN]);
  console.log(
    `node ${process.version}, ${sessions.toLocaleString('en-US')} sessions at once × ${steps} tool steps, 10 ms model, ${rounds} interleaved rounds, ${commitsPerSession.toFixed(1)} commits per session, files in ${directory}`,
  );
  console.log(`${'store'.padEnd(28)} ${'wall ms: median (range)'.padEnd(28)} × memory`);
  for (const [store, values] of samples)
    console.log(
      `${(kinds[store]?.name ?? store).padEnd(28)} ${spread(values).padEnd(28)} ${(median(values) / memory).toFixed(2).padStart(7)}`,
    );
} finally {
  rmSync(directory, { recursive: true, force: true });
}
