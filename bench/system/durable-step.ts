/**
 * The cost of a durable step: one session turn of N tool steps (scripted model answering at once, a trivial tool),
 * on the memory store, on SQLite with synchronous NORMAL and with FULL (the default), and a plain run() of the same
 * agent as the floor. Rounds are interleaved (each round runs every subject, the order rotating) and the figure per
 * subject is the median over rounds of µs per tool step (turn wall / N), with its range and its ratio to the memory
 * store. Each turn is a fresh session (spawn → result); stopping and deleting it afterwards is not timed.
 * With `concurrent` > 1, that many sessions (or runs) run their turn at once and the figure is the batch's wall over
 * all their steps (throughput, not latency). Group commit (`createSqliteStore(path, { groupCommit: true })`)
 * pays off only when sessions commit in the same event-loop turn; alone, it shows what its extra hop costs.
 * A last pass counts what the turn commits (commits and JSON bytes per step, by kind).
 *
 *   npm run build && node bench/system/durable-step.ts [steps=10] [rounds=7] [concurrent=1] [directory=os.tmpdir()]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type CommitBatch,
  createAgentSystem,
  createMemoryStore,
  run,
  type SessionStore,
} from '../../dist/index.js';
import {
  answerAfter,
  fsyncProbe,
  median,
  openStore,
  type StoreKind,
  spread,
  stepAgent,
} from './durable-workload.ts';

const steps = Number(process.argv[2] ?? 10);
const rounds = Number(process.argv[3] ?? 7);
const concurrent = Number(process.argv[4] ?? 1);
const directory = mkdtempSync(join(process.argv[5] ?? tmpdir(), 'troupe-bench-durable-'));
const roundMs = 400;
const minTurns = 5;

const agent = stepAgent({ steps });
const expected = answerAfter(steps);

interface Subject {
  name: string;
  /** One turn (or probe); resolves with the µs it took (only the part that counts) and the steps it made. */
  turn: () => Promise<{ us: number; units: number }>;
  samples: number[];
  close: () => void | Promise<void>;
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
      const sessions = ids.map((id) => system.spawn(agent, 'Do the task.', { sessionId: id }));
      const results = await Promise.all(sessions.map((session) => session.result));
      const elapsed = performance.now() - start;
      for (const result of results)
        if (result.status !== 'completed' || result.text !== expected)
          throw new Error(`${name}: the turn ended ${result.stopReason}: ${result.text}`);
      for (const session of sessions) await session.stop();
      for (const id of ids) await store.delete(id);
      return { us: elapsed * 1000, units: steps * concurrent };
    },
    close: async () => {
      await system.shutdown();
      await store.close();
    },
  };
}

const subjects: Subject[] = [
  {
    name: 'run() (floor)',
    samples: [],
    async turn() {
      const start = performance.now();
      const results = await Promise.all(Array.from({ length: concurrent }, () => run(agent, 'Do the task.')));
      const elapsed = performance.now() - start;
      for (const result of results)
        if (result.status !== 'completed' || result.text !== expected)
          throw new Error(`run(): ended ${result.stopReason}`);
      return { us: elapsed * 1000, units: steps * concurrent };
    },
    close() {},
  },
  sessionSubject('session, memory store', 'memory'),
  sessionSubject('session, SQLite NORMAL', 'sqlite-normal'),
  sessionSubject('session, SQLite FULL', 'sqlite-full'),
  sessionSubject('session, SQLite group commit', 'sqlite-group'),
  probeSubject(),
];

/** The fsync probe as a subject: µs per tiny FULL commit, in the same rounds. */
function probeSubject(): Subject {
  const probe = fsyncProbe(join(directory, 'probe.db'));
  return {
    name: 'fsync probe: 1 tiny FULL commit',
    samples: [],
    turn: async () => {
      let us = 0;
      for (let i = 0; i < 10; i++) us += probe.commit();
      return { us, units: 10 };
    },
    close: probe.close,
  };
}

/** µs per step (per commit for the probe) over one round of at least `roundMs` and `minTurns`. */
async function measure(subject: Subject): Promise<number> {
  let spent = 0;
  let units = 0;
  let turns = 0;
  const start = performance.now();
  while (turns < minTurns || performance.now() - start < roundMs) {
    const { us, units: made } = await subject.turn();
    spent += us;
    units += made;
    turns++;
  }
  return spent / units;
}

/** What one turn commits, through a counting wrapper around a memory store (JSON sizes as SQLite would write). */
async function commitProfile(): Promise<string[]> {
  const inner = createMemoryStore();
  const counts = new Map<string, { commits: number; bytes: number }>();
  const count = (kind: string, bytes: number) => {
    const entry = counts.get(kind) ?? { commits: 0, bytes: 0 };
    entry.commits++;
    entry.bytes += bytes;
    counts.set(kind, entry);
  };
  const store: SessionStore = {
    ...inner,
    commit(sessionId: string, batch: CommitBatch) {
      const kind = batch.session?.turn?.agent
        ? 'checkpoint (row with the agent checkpoint)'
        : batch.session
          ? 'row without an agent checkpoint (turn start / end)'
          : batch.journal
            ? 'journal entry (a finished call)'
            : batch.events && batch.events.length > 0
              ? 'events only (flush)'
              : 'other';
      let bytes = 0;
      if (batch.session) bytes += JSON.stringify(batch.session).length;
      for (const [, value] of batch.journal ?? []) bytes += JSON.stringify(value).length;
      for (const event of batch.events ?? []) bytes += JSON.stringify(event.data).length;
      count(kind, bytes);
      count('all', bytes);
      return inner.commit(sessionId, batch);
    },
  };
  const system = createAgentSystem({ store });
  const session = system.spawn(agent, 'Do the task.', { sessionId: 'profile' });
  const result = await session.result;
  await system.shutdown();
  if (result.status !== 'completed') throw new Error('profile: the turn did not complete');
  const lines = ['commits of one turn (memory store, counted), per tool step:'];
  for (const [kind, { commits, bytes }] of counts)
    lines.push(
      `  ${kind.padEnd(52)} ${(commits / steps).toFixed(2).padStart(6)} commits, ${Math.round(bytes / steps).toLocaleString('en-US')} bytes of JSON`,
    );
  return lines;
}

try {
  for (const subject of subjects) for (let i = 0; i < 3; i++) await subject.turn(); // warm-up
  for (let round = 0; round < rounds; round++)
    for (let i = 0; i < subjects.length; i++) {
      const subject = subjects[(round + i) % subjects.length] as Subject;
      subject.samples.push(await measure(subject));
    }
  const memory = median(subjects[1]?.samples ?? []);
  const floor = median(subjects[0]?.samples ?? []);
  console.log(
    `node ${process.version}, ${steps} tool steps per turn, ${concurrent} turn(s) at once, ${rounds} interleaved rounds of >= ${roundMs} ms, files in ${directory}`,
  );
  const fsync = median(subjects.at(-1)?.samples ?? []);
  console.log(
    `${'subject'.padEnd(32)} ${'µs per step: median (range)'.padEnd(30)} × memory   × run()   ÷ probe`,
  );
  for (const subject of subjects) {
    const mid = median(subject.samples);
    console.log(
      `${subject.name.padEnd(32)} ${spread(subject.samples).padEnd(30)} ${(mid / memory).toFixed(2).padStart(7)}  ${(mid / floor).toFixed(2).padStart(7)}  ${(mid / fsync).toFixed(2).padStart(7)}`,
    );
  }
  console.log('(the probe row is µs per commit; ÷ probe: a step as a number of tiny FULL commits)');
  for (const line of await commitProfile()) console.log(line);
} finally {
  for (const subject of subjects) await subject.close();
  rmSync(directory, { recursive: true, force: true });
}
