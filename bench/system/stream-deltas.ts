/**
 * Streamed text deltas per second through a session: one turn whose answer is D text deltas, read with
 * `for await (const event of session.events())`, on the memory store, SQLite NORMAL and SQLite FULL, and through a
 * plain stream() as the floor. A session delivers an event only once it is committed, and it commits the events
 * emitted since its last commit in a microtask after the first one: when deltas arrive one per event-loop turn, as
 * they do from a network stream ('macrotask' pacing, the default), every delta is a commit of its own, and on
 * SQLite FULL an fsync of its own. 'sync' pacing (every delta in one go) shows the same turn when they coalesce.
 * Rounds are interleaved; per subject the median over rounds of deltas/s, its range, and the ratio to the memory
 * store. Each turn is a fresh session; stopping and deleting it is not timed. With `concurrent` > 1, that many
 * sessions (or stream()s) stream at once and the figure is all their deltas over the wall of the batch; the
 * SQLite store with group commit (one transaction and one fsync for every session that committed in the same
 * event-loop turn) joins the subjects then.
 *
 *   npm run build && node bench/system/stream-deltas.ts [deltas=2000] [rounds=5] [macrotask|sync] [concurrent=1] [directory]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAgentSystem, stream } from '../../dist/index.js';
import { fsyncProbe, median, openStore, type StoreKind, spread, stepAgent } from './durable-workload.ts';

const deltas = Number(process.argv[2] ?? 2000);
const rounds = Number(process.argv[3] ?? 5);
const pacing = process.argv[4] === 'sync' ? 'sync' : 'macrotask';
const concurrent = Number(process.argv[5] ?? 1);
const directory = mkdtempSync(join(process.argv[6] ?? tmpdir(), 'troupe-bench-deltas-'));
const roundMs = 500;
const minTurns = 2;

const agent = stepAgent({ steps: 0, deltas, deltaPacing: pacing });

interface Subject {
  name: string;
  /** One turn; resolves with its wall in ms and the deltas it carried. */
  turn: () => Promise<{ ms: number; deltas: number }>;
  samples: number[];
  close: () => void | Promise<void>;
}

function check(name: string, seen: number, status: string): void {
  if (seen !== deltas || status !== 'completed')
    throw new Error(`${name}: saw ${seen} of ${deltas} deltas, turn ${status}`);
}

function sessionSubject(name: string, kind: StoreKind): Subject {
  const store = openStore(kind, join(directory, `${kind}.db`));
  const system = createAgentSystem({ store });
  let n = 0;
  return {
    name,
    samples: [],
    async turn() {
      const ids = Array.from({ length: concurrent }, () => `s${n++}`);
      const start = performance.now();
      const sessions = ids.map((id) => system.spawn(agent, 'Say it.', { sessionId: id }));
      const seen = await Promise.all(
        sessions.map(async (session) => {
          let count = 0;
          for await (const event of session.events()) if (event.type === 'delta') count++;
          return count;
        }),
      );
      const results = await Promise.all(sessions.map((session) => session.result));
      const elapsed = performance.now() - start;
      for (const [i, result] of results.entries()) check(name, seen[i] ?? 0, result.status);
      for (const session of sessions) await session.stop();
      for (const id of ids) await store.delete(id);
      return { ms: elapsed, deltas: deltas * concurrent };
    },
    close: async () => {
      await system.shutdown();
      await store.close();
    },
  };
}

const subjects: Subject[] = [
  {
    name: 'stream() (floor)',
    samples: [],
    async turn() {
      const start = performance.now();
      const outcomes = await Promise.all(
        Array.from({ length: concurrent }, async () => {
          const s = stream(agent, 'Say it.');
          let seen = 0;
          for await (const event of s) if (event.type === 'delta') seen++;
          return { seen, status: (await s.result).status };
        }),
      );
      const elapsed = performance.now() - start;
      for (const { seen, status } of outcomes) check('stream()', seen, status);
      return { ms: elapsed, deltas: deltas * concurrent };
    },
    close() {},
  },
  sessionSubject('session, memory store', 'memory'),
  sessionSubject('session, SQLite NORMAL', 'sqlite-normal'),
  sessionSubject('session, SQLite FULL', 'sqlite-full'),
  ...(concurrent > 1 ? [sessionSubject('session, SQLite group commit', 'sqlite-group')] : []),
  probeSubject(),
];

/** The fsync probe as a subject: tiny FULL commits per second, in the same rounds. */
function probeSubject(): Subject {
  const probe = fsyncProbe(join(directory, 'probe.db'));
  return {
    name: 'fsync probe: tiny FULL commits',
    samples: [],
    turn: async () => {
      let us = 0;
      for (let i = 0; i < 10; i++) us += probe.commit();
      return { ms: us / 1000, deltas: 10 };
    },
    close: probe.close,
  };
}

/** Deltas per second (commits per second for the probe) over one round of at least `roundMs` and `minTurns`. */
async function measure(subject: Subject): Promise<number> {
  let spent = 0;
  let carried = 0;
  let turns = 0;
  const start = performance.now();
  while (turns < minTurns || performance.now() - start < roundMs) {
    const { ms, deltas: made } = await subject.turn();
    spent += ms;
    carried += made;
    turns++;
  }
  return (carried * 1000) / spent;
}

try {
  for (const subject of subjects) await subject.turn(); // warm-up
  for (let round = 0; round < rounds; round++)
    for (let i = 0; i < subjects.length; i++) {
      const subject = subjects[(round + i) % subjects.length] as Subject;
      subject.samples.push(await measure(subject));
    }
  const memory = median(subjects[1]?.samples ?? []);
  console.log(
    `node ${process.version}, ${concurrent} session(s) at once, each one answer of ${deltas} deltas (${pacing} pacing), ${rounds} interleaved rounds of >= ${roundMs} ms, files in ${directory}`,
  );
  const fsyncs = median(subjects.at(-1)?.samples ?? []);
  console.log(
    `${'subject'.padEnd(32)} ${'deltas/s: median (range)'.padEnd(30)} × memory   µs per delta   × probe`,
  );
  for (const subject of subjects) {
    const mid = median(subject.samples);
    console.log(
      `${subject.name.padEnd(32)} ${spread(subject.samples).padEnd(30)} ${(mid / memory).toFixed(3).padStart(7)}  ${(1e6 / mid).toFixed(1).padStart(10)}  ${(mid / fsyncs).toFixed(2).padStart(8)}`,
    );
  }
  console.log('(the probe row is tiny FULL commits per second; × probe: deltas per tiny FULL commit)');
} finally {
  for (const subject of subjects) await subject.close();
  rmSync(directory, { recursive: true, force: true });
}
