/**
 * Sessions per second through `recover()`. For each K and round:
 *   1. a child process spawns K sessions in a new SQLite file (each with a 20-message conversation behind it; its
 *      turn asks for one tool call whose tool never answers), waits until every tool call has started (so every
 *      session's checkpoint before it is committed), and is killed with SIGKILL;
 *   2. a fresh child process opens the file (SQLite FULL unless told otherwise) and times, in an order that
 *      alternates between rounds:
 *      - `recover()`: until it returns, until all K resumed sessions are running again (each has started its tool
 *        call again: the tool holds every call until all K have started), and until every turn has finished
 *        (the tools answer at once, then the model answers);
 *      - K fresh sessions spawned on the same store with the same conversation behind them, the same three marks
 *        (a fresh session makes one model call more before its tool call: the one that asks for it);
 *      and, before both, reading alone: `store.list()` and `store.load()` of every interrupted session.
 * Per K, the median over rounds (and range) of sessions/s, and recover's ratio to fresh spawns of the same run.
 *
 * The stores (each its own file, created the same way): `full` (the default), `normal`, and `group`, the
 * FULL store with group commit (`groupCommit: true`); several are measured in a rotating order.
 *
 *   npm run build && node bench/system/recover.ts [K=100,1000] [rounds=3] [stores=full|normal|group,...] [directory]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAgentSystem, createSqliteStore, type Message, type RunResult } from '../../dist/index.js';
import { answerAfter, fsyncProbe, median, openStore, spread, stepAgent } from './durable-workload.ts';

const paragraph = 'The order #4411 shipped on Monday from the Rotterdam warehouse and is due on Thursday. ';

/** The conversation each session has behind it: 10 questions and answers. */
function conversation(): Message[] {
  const messages: Message[] = [];
  for (let i = 0; i < 10; i++)
    messages.push(
      { role: 'user', content: `Question ${i}: where is my order? ${paragraph}` },
      { role: 'assistant', content: paragraph.repeat(2) },
    );
  return messages;
}

const role = process.argv[2];
const storeNames: Record<string, string> = {
  full: 'SQLite FULL',
  normal: 'SQLite NORMAL',
  group: 'group commit',
};

if (role === 'create') {
  // Child 1: K sessions parked in a tool call that never answers; the parent kills this process.
  const [file, kText] = process.argv.slice(3);
  const k = Number(kText);
  let started = 0;
  const agent = stepAgent({
    steps: 1,
    hang: true,
    onExecute: () => {
      if (++started === k) process.stdout.write('ready\n');
    },
  });
  const store = createSqliteStore(file as string, { synchronous: 'normal' });
  const system = createAgentSystem({ store, agents: [agent] });
  const history = conversation();
  for (let i = 0; i < k; i++) system.spawn(agent, 'Do the task.', { sessionId: `interrupted-${i}`, history });
  // Stays alive (the tool calls never end) until SIGKILL.
  setInterval(() => undefined, 60_000);
} else if (role === 'measure') {
  // Child 2: a fresh process on the file the killed one left.
  const [file, kText, order, synchronous] = process.argv.slice(3);
  const k = Number(kText);
  // Each phase holds its K tool calls at a gate until all have started, then lets them answer.
  let executions = 0;
  let allStarted = () => {};
  let gate: Promise<void> | undefined;
  const agent = stepAgent({
    steps: 1,
    onExecute: () => {
      if (++executions === k) allStarted();
    },
    gate: () => gate,
  });
  const expected = answerAfter(1);
  const store = openStore(
    synchronous === 'normal' ? 'sqlite-normal' : synchronous === 'group' ? 'sqlite-group' : 'sqlite-full',
    file as string,
  );
  const metrics: Record<string, number> = {};

  const begin = performance.now();
  const listed = await store.list({ status: ['running', 'awaiting', 'suspended'] });
  for (const summary of listed) await store.load(summary.id);
  metrics.readMs = performance.now() - begin;
  if (listed.length !== k)
    throw new Error(`measure: the store lists ${listed.length} interrupted sessions, not ${k}`);

  const probe = fsyncProbe(`${file}.probe`);
  const probes: number[] = [];
  for (let i = 0; i < 30; i++) probes.push(probe.commit());
  probe.close();
  metrics.fsyncUs = median(probes);

  const system = createAgentSystem({ store, agents: [agent] });
  const check = (what: string, results: { status: string; text: string }[]) => {
    const bad = results.filter((result) => result.status !== 'completed' || result.text !== expected);
    if (results.length !== k || bad.length > 0)
      throw new Error(`${what}: ${results.length} turns, ${bad.length} not completed (${bad[0]?.text})`);
  };
  /** Times `start` to its return, to all K tool calls started, and to all K turns finished. */
  const phase = async (name: string, start: () => Promise<{ result: Promise<RunResult<unknown>> }[]>) => {
    executions = 0;
    let release = () => {};
    gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const started = new Promise<void>((resolve) => {
      allStarted = resolve;
    });
    const t0 = performance.now();
    const sessions = await start();
    metrics[`${name}ReturnedMs`] = performance.now() - t0;
    await started;
    metrics[`${name}RunningMs`] = performance.now() - t0;
    release();
    check(name, await Promise.all(sessions.map((session) => session.result)));
    metrics[`${name}FinishedMs`] = performance.now() - t0;
    if (executions !== k) throw new Error(`${name}: ${executions} tool calls ran, not ${k}`);
  };
  const recoverAll = () =>
    phase('recover', async () => {
      const recovered = await system.recover();
      if (recovered.failures.length > 0) throw new Error(`recover: ${recovered.failures[0]?.error.message}`);
      return recovered.sessions;
    });
  const history = conversation();
  const spawnFresh = () =>
    phase('fresh', async () =>
      Array.from({ length: k }, (_, i) =>
        system.spawn(agent, 'Do the task.', { sessionId: `fresh-${i}`, history }),
      ),
    );
  if (order === 'fresh-first') {
    await spawnFresh();
    await recoverAll();
  } else {
    await recoverAll();
    await spawnFresh();
  }
  await system.shutdown();
  await store.close();
  console.log(JSON.stringify(metrics));
} else {
  // The orchestrator.
  const ks = (process.argv[2] ?? '100,1000').split(',').map(Number);
  const rounds = Number(process.argv[3] ?? 3);
  const modes = (process.argv[4] ?? 'full').split(',');
  for (const mode of modes)
    if (!Object.hasOwn(storeNames, mode))
      throw new Error(`recover: unknown store ${mode} (full, normal, group)`);
  const directory = mkdtempSync(join(process.argv[5] ?? tmpdir(), 'troupe-bench-recover-'));
  const script = import.meta.filename;

  const child = (args: string[], onLine?: (line: string, kill: () => void) => void) =>
    new Promise<string>((resolve, reject) => {
      const proc = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      proc.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (onLine && out.includes('\n')) onLine(out.trim(), () => proc.kill('SIGKILL'));
      });
      proc.stderr.on('data', (chunk: Buffer) => {
        err += chunk.toString();
      });
      proc.on('close', (code, signal) => {
        if (code === 0 || signal === 'SIGKILL') resolve(out.trim());
        else
          reject(new Error(`${args[0]} exited ${code}: ${err.trim().split('\n').slice(0, 6).join(' | ')}`));
      });
    });

  const samples = new Map<string, Record<string, number>[]>();
  try {
    for (let round = 0; round < rounds; round++)
      for (const k of ks)
        for (let index = 0; index < modes.length; index++) {
          // The modes' order rotates each round, like recover's and fresh's order within a measurement.
          const store = modes[(index + round) % modes.length] as string;
          const file = join(directory, `k${k}-r${round}-${store}.db`);
          const createStart = performance.now();
          let killedAt = 0;
          await child(['create', file, String(k)], (line, kill) => {
            if (line === 'ready' && killedAt === 0) {
              killedAt = performance.now();
              kill();
            }
          });
          if (killedAt === 0) throw new Error(`create: the child ended before ${k} sessions were parked`);
          const order = round % 2 === 0 ? 'recover-first' : 'fresh-first';
          const out = await child(['measure', file, String(k), order, store]);
          const metrics = JSON.parse(out.split('\n').pop() ?? '{}') as Record<string, number>;
          metrics.createMs = killedAt - createStart;
          const key = `${store}|${k}`;
          samples.set(key, [...(samples.get(key) ?? []), metrics]);
          console.log(`round ${round + 1}, K = ${k}, ${store}, ${order}: ${JSON.stringify(metrics)}`);
          rmSync(file, { force: true });
        }
    console.log(
      `\nnode ${process.version}, ${rounds} rounds; sessions/s: median (range) over rounds; the last column is a tiny FULL commit measured in the same process (the disk's fsync price)`,
    );
    console.log(
      '| store | K | read alone (list + load) | recover(): returned | recover(): all running again | recover(): all finished | fresh: spawn() returned | fresh: all running | fresh: all finished | recover / fresh, running | recover / fresh, finished | µs per tiny FULL commit |',
    );
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const mode of modes)
      for (const k of ks) {
        const list = samples.get(`${mode}|${k}`) ?? [];
        const rate = (key: string) => spread(list.map((m) => (k * 1000) / (m[key] as number)));
        // Sessions/s of recover over sessions/s of fresh spawns, per round, then the median.
        const ratio = (what: string) =>
          median(
            list.map((m) => (m[`fresh${what}Ms`] as number) / (m[`recover${what}Ms`] as number)),
          ).toFixed(2);
        const cells = [
          storeNames[mode] ?? mode,
          k.toLocaleString('en-US'),
          rate('readMs'),
          rate('recoverReturnedMs'),
          rate('recoverRunningMs'),
          rate('recoverFinishedMs'),
          rate('freshReturnedMs'),
          rate('freshRunningMs'),
          rate('freshFinishedMs'),
          ratio('Running'),
          ratio('Finished'),
          spread(list.map((m) => m.fsyncUs as number)),
        ];
        console.log(`| ${cells.join(' | ')} |`);
      }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}
