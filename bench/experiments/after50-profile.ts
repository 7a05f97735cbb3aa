/**
 * Where the W1 tool step's time goes after 50 warm-up runs: CPU-profiles only the 100 runs that follow the warm-up
 * (V8's sampling profiler through node:inspector, 50 µs interval), in several fresh processes, and prints the
 * functions by self time summed over them, with the share of the window each takes.
 *
 *   node bench/experiments/after50-profile.ts [processes=4] [dist folder=dist] [top=40]
 *
 * V8 flags given to this command reach the profiled processes: `node --no-opt --no-maglev` profiles the step as
 * Ignition and Sparkplug run it, which is how most of it runs in the window.
 */
import { spawnSync } from 'node:child_process';
import { Session } from 'node:inspector/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

/** The compiled interpreter's functions (src/engine), by name: their bundled chunk holds the rest of Troupe too. */
const engineFunctions = new Set(
  [
    'transition step settle snapshotOf inspectMicrostep resolveActions resolveList assignContext executeResolved',
    'selectTransition selectEventless evaluateGuard guardArgs of plan exitActionsOf entryActionsOf ActionRun',
    'AssignArgs touch snapshot adopt extra tagsOf start always candidate',
  ]
    .join(' ')
    .split(' '),
);

const [mode, ...rest] = process.argv.slice(2);
if (mode === '--child') {
  const dist = resolve(rest[0] ?? 'dist');
  const troupe = await import(pathToFileURL(join(dist, 'index.js')).href);
  const { prepareTroupeWith } = await import('../frameworks/troupe-adapter.ts');
  const { check } = await import('../scenario.ts');
  const scenario = { toolSteps: 10, toolsPerTurn: 1, modelDelayMs: 0, toolDelayMs: 0, deltas: 0 };
  const runner = prepareTroupeWith(troupe, 'troupe', scenario);
  for (let i = 0; i < 50; i++) check(scenario, await runner.run(`task ${i}`), 'troupe');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 50 });
  await session.post('Profiler.start');
  for (let i = 0; i < 100; i++) check(scenario, await runner.run(`task ${i}`), 'troupe');
  const { profile } = await session.post('Profiler.stop');
  const self = new Map<string, number>();
  let total = 0;
  for (const node of profile.nodes as ProfileNode[]) {
    const hits = node.hitCount ?? 0;
    total += hits;
    const { functionName, url, lineNumber } = node.callFrame;
    const file = url.slice(url.lastIndexOf('/') + 1);
    const key = `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + hits);
  }
  process.stdout.write(JSON.stringify({ total, self: [...self] }));
} else {
  const processes = Number(mode ?? 4);
  const dist = rest[0] ?? 'dist';
  const top = Number(rest[1] ?? 40);
  const sum = new Map<string, number>();
  let total = 0;
  for (let i = 0; i < processes; i++) {
    const child = spawnSync(process.execPath, [...process.execArgv, import.meta.filename, '--child', dist], {
      encoding: 'utf8',
    });
    if (child.status !== 0) throw new Error(child.stderr);
    const out = JSON.parse(child.stdout) as { total: number; self: [string, number][] };
    total += out.total;
    for (const [key, hits] of out.self) sum.set(key, (sum.get(key) ?? 0) + hits);
  }
  const rows = [...sum].sort((a, b) => b[1] - a[1]).slice(0, top);
  for (const [key, hits] of rows) console.log(`${((100 * hits) / total).toFixed(1).padStart(5)} %  ${key}`);
  // The same self time by where it runs: XState's own files, the compiled interpreter (its functions by name),
  // Node's internals, the collector and the profiler, the rest of Troupe.
  const groups = new Map<string, number>();
  for (const [key, hits] of sum) {
    const group = groupOf(key);
    groups.set(group, (groups.get(group) ?? 0) + hits);
  }
  // Samples are 50 µs apart: a group's samples times 50 µs over the window's tool steps is about its time per step.
  const steps = processes * 100 * 10;
  console.log(
    `by group (share of the window; µs per tool step, ${((total * 50) / steps).toFixed(1)} in all):`,
  );
  for (const [group, hits] of [...groups].sort((a, b) => b[1] - a[1]))
    console.log(
      `${((100 * hits) / total).toFixed(1).padStart(5)} %  ${((hits * 50) / steps).toFixed(1).padStart(5)} µs  ${group}`,
    );
}

function groupOf(key: string): string {
  const [name = '', where = ''] = key.split(' ');
  if (where.startsWith(':') || name.startsWith('('))
    return key.startsWith('(garbage collector)') ? 'garbage collector' : 'program, idle, other';
  if (/^(raise|StateMachine|assign|log)-[0-9a-f]+\./.test(where))
    return 'xstate (Actor, system, mailbox, resolvers)';
  if (/^(node:inspector|inspector)/.test(where) || name === 'post') return 'profiler';
  if (!where.startsWith('chunk-')) return where.includes('.ts') ? 'benchmark' : 'node internals';
  if (engineFunctions.has(name)) return 'compiled interpreter';
  return 'troupe (machine, effects, gates, run)';
}
