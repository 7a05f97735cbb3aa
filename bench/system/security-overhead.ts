/**
 * What the run context, tool permissions and the audit log cost: one run of N tool steps (scripted model answering
 * at once, a trivial tool) per subject:
 *
 * - `run`: a plain run() (the floor); `run+context`: with a context and an instruction function of it;
 *   `run+audit`: with an audit log on a memory sink (the run's events are then built and observed).
 * - `session`: a turn of a fresh session on the memory store; `session+permissions`: the same agent with a
 *   permissions.byRole() policy (every call allowed); `session+audit`: with an audit log on a JSONL file. An agent
 *   with a policy runs in a session even under run(): compare it with `session`.
 *
 * Rounds are interleaved (each round runs every subject, the order rotating); the figure is the median over rounds
 * of CPU µs (user + system, this process) per tool step, its range, and its ratio to its floor (`run` or
 * `session`) measured in the same run. CPU time, not wall time: on a shared machine the process waits for a core,
 * and wall time measures the other processes. File writes done by libuv's thread pool are counted too.
 *
 *   npm run build && node bench/system/security-overhead.ts [steps=20] [rounds=9] [runsPerRound=20]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import {
  contextType,
  createAgentSystem,
  createAuditLog,
  defineAgent,
  jsonlAuditSink,
  memoryAuditSink,
  permissions,
  run,
  tool,
} from '../../dist/index.js';
import { scriptedModel } from '../../dist/testing/index.js';

const steps = Number(process.argv[2] ?? 20);
const rounds = Number(process.argv[3] ?? 9);
const runsPerRound = Number(process.argv[4] ?? 20);

interface Caller {
  role: string;
}

const echo = tool({
  name: 'echo',
  description: 'Echoes.',
  input: z.object({ n: z.number() }),
  execute: ({ n }) => n,
});
const model = () =>
  scriptedModel((_request, index) =>
    index < steps
      ? { toolCalls: [{ name: 'echo', args: { n: index } }], stopReason: 'tool_use' }
      : { text: 'done' },
  );
const plainAgent = () => defineAgent({ name: 'a', instructions: 'Be brief.', model: model(), tools: [echo] });
const contextAgent = () =>
  defineAgent({
    name: 'a',
    contextType: contextType<Caller>(),
    instructions: ({ context }) => `Serve a ${context.role}.`,
    model: model(),
    tools: [echo],
  });
const guardedAgent = () =>
  defineAgent({
    name: 'a',
    contextType: contextType<Caller>(),
    instructions: 'Be brief.',
    model: model(),
    tools: [echo],
    permissions: permissions.byRole<Caller>({ user: ['*'] }, (context) => context.role),
  });

const directory = mkdtempSync(join(tmpdir(), 'troupe-security-bench-'));
let files = 0;

const subjects: Record<string, () => Promise<void>> = {
  run: async () => {
    await run(plainAgent(), 'go');
  },
  'run+context': async () => {
    await run(contextAgent(), 'go', { context: { role: 'user' } });
  },
  'run+audit': async () => {
    const audit = createAuditLog({ sink: memoryAuditSink() });
    await run(plainAgent(), 'go', { audit });
    await audit.close();
  },
  session: async () => {
    const system = createAgentSystem();
    await system.spawn(plainAgent(), 'go').result;
    await system.shutdown();
  },
  'session+permissions': async () => {
    const system = createAgentSystem();
    await system.spawn(guardedAgent(), 'go', { context: { role: 'user' } }).result;
    await system.shutdown();
  },
  'session+audit': async () => {
    const audit = createAuditLog({ sink: jsonlAuditSink(join(directory, `audit-${files++}.jsonl`)) });
    const system = createAgentSystem({ audit });
    await system.spawn(plainAgent(), 'go').result;
    await system.shutdown();
    await audit.close();
  },
};
const floorOf = (name: string) => (name.startsWith('run') ? 'run' : 'session');

const samples = new Map<string, number[]>(Object.keys(subjects).map((name) => [name, []]));
const names = Object.keys(subjects);
for (const name of names) await subjects[name]?.(); // warm-up
for (let round = 0; round < rounds; round++) {
  const order = names.map((_, i) => names[(i + round) % names.length] as string);
  for (const name of order) {
    const started = process.cpuUsage();
    for (let i = 0; i < runsPerRound; i++) await subjects[name]?.();
    const used = process.cpuUsage(started);
    samples.get(name)?.push((used.user + used.system) / (runsPerRound * steps));
  }
}
rmSync(directory, { recursive: true, force: true });

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};
console.log(`${steps} tool steps per run, ${rounds} rounds of ${runsPerRound} runs; CPU µs per tool step`);
for (const name of names) {
  const values = samples.get(name) ?? [];
  const floor = median(samples.get(floorOf(name)) ?? []);
  console.log(
    `${name.padEnd(20)} median ${median(values).toFixed(1).padStart(7)}  range ${Math.min(...values).toFixed(1)}-${Math.max(...values).toFixed(1)}  x${(median(values) / floor).toFixed(2)} of ${floorOf(name)}`,
  );
}
