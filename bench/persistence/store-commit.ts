/**
 * Microseconds per commit of a typical checkpoint batch (the session row with a 20-message transcript and the turn's
 * agent checkpoint, plus 3 events) on the SQLite store with synchronous FULL, with NORMAL, and on the memory store.
 * Rounds are interleaved (each round runs every store, in a rotating order) so drift in the machine's speed hits
 * all of them alike; the figure per store is the median over rounds, also given as a ratio to the memory store.
 * 'JSON only' is the part of a SQLite commit spent making the JSON text of the batch.
 *   node bench/persistence/store-commit.ts [rounds=7] [directory for the database files=os.tmpdir()]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunEvent } from '../../src/core/events.ts';
import type { Message } from '../../src/core/messages.ts';
import type { AgentCheckpoint } from '../../src/machines/agent.ts';
import { createMemoryStore } from '../../src/persistence/memory-store.ts';
import { createSqliteStore } from '../../src/persistence/sqlite-store.ts';
import type { StoredSession } from '../../src/persistence/store.ts';
import type { SyncSessionStore } from '../../src/persistence/sync-store.ts';

const rounds = Number(process.argv[2] ?? 7);
const directory = mkdtempSync(join(process.argv[3] ?? tmpdir(), 'troupe-bench-store-'));
/** Each store runs at least this long per round (and at least `minCommits` commits). */
const roundMs = 300;
const minCommits = 30;

const usage = { input: 1_200, output: 180, cached: 512, reasoning: 0 };
const paragraph = 'The order #4411 shipped on Monday from the Rotterdam warehouse and is due on Thursday. ';

/** 20 messages: a system prompt, then user / assistant with a tool call / tool result / assistant answer turns. */
const transcript: Message[] = [{ role: 'system', content: `You are the support agent. ${paragraph}` }];
for (let turn = 0; transcript.length < 20; turn++) {
  const id = `call_${turn}`;
  transcript.push(
    { role: 'user', content: `Where is my order ${turn}? ${paragraph}` },
    {
      role: 'assistant',
      content: '',
      toolCalls: [{ id, name: 'lookup_order', args: { orderId: `4411-${turn}`, fields: ['status', 'eta'] } }],
    },
    {
      role: 'tool',
      toolCallId: id,
      name: 'lookup_order',
      content: JSON.stringify({ status: 'shipped', eta: 'Thu' }),
    },
    { role: 'assistant', content: paragraph.repeat(2), agent: 'support' },
  );
}
transcript.length = 20;
const openCall = { id: 'call_next', name: 'lookup_order', args: { orderId: '4411-next' } };
const agentHistory: Message[] = [...transcript, { role: 'user', content: 'And the next one?' }];

const checkpoint: AgentCheckpoint = {
  history: [...agentHistory, { role: 'assistant', content: '', toolCalls: [openCall] }],
  step: 1,
  modelCalls: 1,
  retryCount: 0,
  toolCallsRun: 0,
  toolCallCounts: {},
  callSignatures: {},
  degradedTools: [],
  usage,
  openCalls: [openCall],
  decision: { kind: 'continue_with_tools', calls: [openCall] },
  forcedFinalAnswer: false,
  approvals: null,
  phase: 'toolUse',
};

function row(id: string, updatedAt: number): StoredSession {
  return {
    id,
    status: 'running',
    entry: 'support',
    agent: 'support',
    turns: 5,
    transcript,
    turn: {
      number: 6,
      input: 'And the next one?',
      session: {
        current: 'support',
        transcript: agentHistory,
        turnStart: transcript.length,
        agentHistory,
        agentBase: agentHistory.length,
        path: ['support'],
        refusals: 0,
        spent: { usage, modelCalls: 0, toolCallsRun: 0 },
        segment: 6,
        turns: 5,
      },
      agent: { name: 'support', segment: 6, checkpoint },
    },
    queued: [],
    options: {
      maxHandoffDepth: 5,
      maxHandoffRevisits: 1,
      supervision: {
        strategy: 'restart',
        maxRestarts: 2,
        onExhausted: 'escalate',
        backoffMs: 100,
        backoffFactor: 2,
        maxBackoffMs: 10_000,
      },
    },
    updatedAt,
  };
}

function events(sessionId: string, seq: number, time: number): RunEvent[] {
  return [
    {
      time,
      agent: 'support',
      sessionId,
      route: 'support',
      depth: 0,
      seq,
      type: 'model_response',
      data: { step: 1, text: '', toolCallCount: 1, stopReason: 'tool_use', usage },
    },
    {
      time,
      agent: 'support',
      sessionId,
      route: 'support',
      depth: 0,
      seq: seq + 1,
      type: 'usage',
      data: { usage, cumulative: usage },
    },
    {
      time,
      agent: 'support',
      sessionId,
      route: 'support',
      depth: 0,
      seq: seq + 2,
      type: 'tool_call',
      data: {
        callId: openCall.id,
        name: openCall.name,
        args: openCall.args,
      },
    },
  ];
}

/** Keeps the JSON-only subject's work observable, so it is not optimized away. */
let sink = 0;

interface Subject {
  name: string;
  store: Pick<SyncSessionStore, 'commit' | 'close'>;
  nextSeq: number;
  clock: number;
  samples: number[];
}

const subjects: Subject[] = [
  { name: 'memory', store: createMemoryStore(), nextSeq: 0, clock: 0, samples: [] },
  {
    name: 'sqlite FULL',
    store: createSqliteStore(join(directory, 'full.db')),
    nextSeq: 0,
    clock: 0,
    samples: [],
  },
  {
    name: 'sqlite NORMAL',
    store: createSqliteStore(join(directory, 'normal.db'), { synchronous: 'normal' }),
    nextSeq: 0,
    clock: 0,
    samples: [],
  },
  {
    // The floor of the SQLite store's commit: the JSON text it makes of the batch before writing it.
    name: 'JSON only',
    store: {
      commit(_, batch) {
        sink += JSON.stringify(batch.session).length;
        for (const event of batch.events ?? []) sink += JSON.stringify(event.data).length;
      },
      close() {},
    },
    nextSeq: 0,
    clock: 0,
    samples: [],
  },
];

/** One commit of the batch: the row replaced whole, 3 events appended. */
function commitOnce(subject: Subject): void {
  subject.clock++;
  subject.store.commit('bench', {
    session: row('bench', subject.clock),
    events: events('bench', subject.nextSeq, subject.clock),
  });
  subject.nextSeq += 3;
}

/** µs per commit over one round of at least `roundMs` and `minCommits`. */
function measure(subject: Subject): number {
  let commits = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < roundMs || commits < minCommits) {
    commitOnce(subject);
    commits++;
    if ((commits & 7) === 0 || commits < minCommits) elapsed = performance.now() - start;
  }
  elapsed = performance.now() - start;
  return (elapsed * 1_000) / commits;
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

try {
  for (const subject of subjects) for (let i = 0; i < minCommits; i++) commitOnce(subject); // warm-up
  for (let round = 0; round < rounds; round++)
    for (let i = 0; i < subjects.length; i++) {
      const subject = subjects[(round + i) % subjects.length] as Subject;
      subject.samples.push(measure(subject));
    }
  const bytes = JSON.stringify(row('bench', 1)).length + JSON.stringify(events('bench', 0, 1)).length;
  const memory = median(subjects[0]?.samples ?? []);
  console.log(
    `node ${process.version}, ${rounds} interleaved rounds of >= ${roundMs} ms, files in ${directory}`,
  );
  console.log(
    `batch: session row (20-message transcript + turn checkpoint) + 3 events, ${bytes} bytes of JSON`,
  );
  console.log('store            µs/commit (median)   min      max      × memory');
  for (const subject of subjects) {
    const mid = median(subject.samples);
    console.log(
      `${subject.name.padEnd(16)} ${mid.toFixed(1).padStart(10)}          ${Math.min(...subject.samples)
        .toFixed(1)
        .padStart(8)} ${Math.max(...subject.samples)
        .toFixed(1)
        .padStart(8)}   ${(mid / memory).toFixed(0).padStart(6)}×`,
    );
  }
  if (sink === 0) console.log('(nothing was serialized)');
} finally {
  for (const subject of subjects) subject.store.close();
  rmSync(directory, { recursive: true, force: true });
}
