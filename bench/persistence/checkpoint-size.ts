/**
 * How big a session's checkpoint commit is as the conversation grows, what in it is the same conversation written
 * several times, and what writing it once would save.
 *
 * A checkpoint commit replaces the session row whole. The row holds the conversation up to four times: the session
 * transcript (finished turns), the turn checkpoint's session transcript and agent history (both the transcript plus
 * the turn's input), and the agent checkpoint's history (all of that plus the turn's steps so far). They share their
 * messages (the same objects): each is a prefix of the agent's history. Two shapes, from real sessions on a
 * recording memory store (the bytes are the JSON text the SQLite store writes):
 *   - one turn of 50 tool steps: only the agent's history grows;
 *   - a chat: 50 turns of one tool step each: every copy grows.
 * For the rows at 50 steps, µs per commit on SQLite FULL and NORMAL (and JSON.stringify alone), interleaved rounds:
 *   - as committed today;
 *   - stored once: the three shorter copies written as `{ prefixOf: 'history', length, tail }` (a bench-only
 *     encoding: the row cannot be loaded back, the commit's cost is real);
 *   - append-only: the row with every copy written as its length, plus the step's new messages as journal entries
 *     (a stand-in for a messages table that each commit appends to): the floor of a commit that grows with nothing.
 *
 *   npm run build && node bench/persistence/checkpoint-size.ts [result characters=0] [rounds=7] [directory]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type CommitBatch,
  createAgentSystem,
  createMemoryStore,
  createSqliteStore,
  type Message,
  type SessionStore,
  type StoredSession,
  type SyncSessionStore,
} from '../../dist/index.js';
import { median, spread, stepAgent } from '../system/durable-workload.ts';

const resultChars = Number(process.argv[2] ?? 0);
const rounds = Number(process.argv[3] ?? 7);
const directory = mkdtempSync(join(process.argv[4] ?? tmpdir(), 'troupe-bench-size-'));
const marks = [1, 10, 50];
const roundMs = 300;
const minCommits = 20;

/** Records every row that carries an agent checkpoint, in commit order. */
function recordingStore(rows: StoredSession[]): SessionStore {
  const inner = createMemoryStore();
  return {
    ...inner,
    commit(sessionId: string, batch: CommitBatch) {
      if (batch.session?.turn?.agent) rows.push(batch.session);
      return inner.commit(sessionId, batch);
    },
  };
}

const toolResults = (history: readonly Message[]) => history.filter((m) => m.role === 'tool').length;

/**
 * The checkpoint taken before the model call that follows tool step `steps` (counted over the whole conversation):
 * the largest row of that step.
 */
function rowAfter(rows: readonly StoredSession[], steps: number): StoredSession {
  for (const row of rows) {
    const history = row.turn?.agent?.checkpoint.history ?? [];
    if (toolResults(history) === steps && history.at(-1)?.role === 'tool') return row;
  }
  throw new Error(`no checkpoint after ${steps} steps`);
}

async function oneLongTurn(): Promise<StoredSession[]> {
  const rows: StoredSession[] = [];
  const system = createAgentSystem({ store: recordingStore(rows) });
  const session = system.spawn(stepAgent({ steps: 50, resultChars }), 'Do the task.', {
    sessionId: 'long-turn',
  });
  const result = await session.result;
  await system.shutdown();
  if (result.status !== 'completed') throw new Error(`long turn: ${result.stopReason}`);
  return rows;
}

async function chat(): Promise<StoredSession[]> {
  const rows: StoredSession[] = [];
  const system = createAgentSystem({ store: recordingStore(rows) });
  const session = system.spawn(stepAgent({ steps: 1, resultChars }), 'Question 1.', { sessionId: 'chat' });
  let result = await session.result;
  for (let turn = 2; turn <= 50 && result.status === 'completed'; turn++)
    result = await session.send(`Question ${turn}.`);
  await system.shutdown();
  if (result.status !== 'completed') throw new Error(`chat: ${result.stopReason}`);
  return rows;
}

const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

/** Length of the prefix two arrays share by identity. */
function sharedPrefix(a: readonly unknown[], b: readonly unknown[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/** A shorter copy as a reference to the agent's history plus what it does not share with it. */
function asPrefix(copy: readonly Message[], history: readonly Message[]) {
  const length = sharedPrefix(copy, history);
  return { prefixOf: 'history', length, tail: copy.slice(length) };
}

/** The row with the conversation written once (bench-only encoding). */
function storedOnce(row: StoredSession): StoredSession {
  const turn = row.turn;
  const agent = turn?.agent;
  if (!turn || !agent) return row;
  const history = agent.checkpoint.history;
  return {
    ...row,
    transcript: asPrefix(row.transcript, history),
    turn: {
      ...turn,
      session: {
        ...turn.session,
        transcript: asPrefix(turn.session.transcript, history),
        agentHistory: asPrefix(turn.session.agentHistory, history),
      },
    },
  } as unknown as StoredSession;
}

function breakdown(row: StoredSession): string[] {
  const turn = row.turn;
  const agent = turn?.agent;
  if (!turn || !agent) return [];
  const history = agent.checkpoint.history;
  const copies =
    bytes(row.transcript) +
    bytes(turn.session.transcript) +
    bytes(turn.session.agentHistory) +
    bytes(history);
  const whole = bytes(row);
  const once = bytes(storedOnce(row));
  return [
    `${history.length}`,
    whole.toLocaleString('en-US'),
    bytes(row.transcript).toLocaleString('en-US'),
    bytes(turn.session.transcript).toLocaleString('en-US'),
    bytes(turn.session.agentHistory).toLocaleString('en-US'),
    bytes(history).toLocaleString('en-US'),
    (whole - copies).toLocaleString('en-US'),
    `${once.toLocaleString('en-US')} (${once >= whole ? '+' : '−'}${Math.abs((100 * (once - whole)) / whole).toFixed(0)} %)`,
  ];
}

interface Subject {
  name: string;
  commit: (clock: number) => void;
  samples: number[];
}

let sink = 0;

function subjectsFor(label: string, rows: StoredSession[], stores: [string, SyncSessionStore][]): Subject[] {
  const row = rowAfter(rows, 50);
  const forms: [string, (clock: number) => CommitBatch][] = [
    // The store writes the conversation once per row itself (src/persistence/row-encoding.ts).
    ['as today', (clock) => ({ session: { ...row, updatedAt: clock } })],
  ];
  const subjects: Subject[] = [];
  for (const [formName, form] of forms) {
    for (const [storeName, store] of stores) {
      const id = `${label}-${formName}`;
      subjects.push({
        name: `${label}, ${formName}, ${storeName}`,
        commit: (clock) => {
          const batch = form(clock);
          store.commit(id, { ...batch, session: { ...(batch.session as StoredSession), id } });
        },
        samples: [],
      });
    }
    subjects.push({
      name: `${label}, ${formName}, JSON only`,
      commit: (clock) => {
        const batch = form(clock);
        sink += JSON.stringify(batch.session).length;
        for (const [, value] of batch.journal ?? []) sink += JSON.stringify(value).length;
      },
      samples: [],
    });
  }
  return subjects;
}

function measure(subject: Subject, clock: { now: number }): number {
  let commits = 0;
  const start = performance.now();
  while (commits < minCommits || performance.now() - start < roundMs) {
    subject.commit(++clock.now);
    commits++;
  }
  return ((performance.now() - start) * 1000) / commits;
}

const full = createSqliteStore(join(directory, 'full.db'));
const normal = createSqliteStore(join(directory, 'normal.db'), { synchronous: 'normal' });
try {
  const shapes: [string, StoredSession[]][] = [
    ['one turn', await oneLongTurn()],
    ['chat', await chat()],
  ];
  console.log(
    `node ${process.version}, tool results of ${resultChars > 8 ? resultChars : 'a few'} characters; bytes of JSON of the row of the checkpoint after N tool steps`,
  );
  console.log(
    '| shape | steps | messages | row | session transcript | turn: session transcript | turn: agent history | checkpoint history | rest | stored once |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const [label, rows] of shapes)
    for (const steps of marks)
      console.log(`| ${label} | ${steps} | ${breakdown(rowAfter(rows, steps)).join(' | ')} |`);

  const stores: [string, SyncSessionStore][] = [
    ['SQLite FULL', full],
    ['SQLite NORMAL', normal],
  ];
  const subjects = shapes.flatMap(([label, rows]) => subjectsFor(label, rows, stores));
  const clock = { now: 0 };
  for (const subject of subjects) for (let i = 0; i < minCommits; i++) subject.commit(++clock.now); // warm-up
  for (let round = 0; round < rounds; round++)
    for (let i = 0; i < subjects.length; i++)
      (subjects[(round + i) % subjects.length] as Subject).samples.push(
        measure(subjects[(round + i) % subjects.length] as Subject, clock),
      );
  console.log(`\nµs per checkpoint commit at 50 steps, ${rounds} interleaved rounds of >= ${roundMs} ms`);
  console.log('| shape, form, store | µs per commit: median (range) | × as today |');
  console.log('|---|---:|---:|');
  for (const subject of subjects) {
    const today = subjects.find(
      (other) => other.name === subject.name.replace(/, (stored once|append-only),/, ', as today,'),
    );
    console.log(
      `| ${subject.name} | ${spread(subject.samples)} | ${(median(subject.samples) / median(today?.samples ?? [1])).toFixed(2)} |`,
    );
  }
  if (sink === 0) console.log('(nothing was serialized)');
} finally {
  full.close();
  normal.close();
  rmSync(directory, { recursive: true, force: true });
}
