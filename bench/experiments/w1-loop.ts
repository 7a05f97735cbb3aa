/**
 * W1's runs in a loop after 50 warm-up runs: with V8's sampling profiler on, the profile written to a file, or (out
 * `-`) timed: the CPU and wall µs per tool step of those runs, as JSON. V8 flags go on the command line:
 * `node --no-opt --no-maglev ...` runs the step as V8's baseline tiers run it, the regime of the first runs.
 *
 *   node bench/experiments/w1-loop.ts <out.cpuprofile | -> [dist folder=dist] [runs=300]
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const out = process.argv[2];
if (!out) throw new Error('usage: w1-loop.ts <out.cpuprofile> [dist] [runs]');
const dist = resolve(process.argv[3] ?? 'dist');
const runs = Number(process.argv[4] ?? 300);
const troupe = await import(pathToFileURL(join(dist, 'index.js')).href);
const { prepareTroupeWith } = await import('../frameworks/troupe-adapter.ts');
const { check } = await import('../scenario.ts');
const scenario = { toolSteps: 10, toolsPerTurn: 1, modelDelayMs: 0, toolDelayMs: 0, deltas: 0 };
const runner = prepareTroupeWith(troupe, 'troupe', scenario);
for (let i = 0; i < 50; i++) check(scenario, await runner.run(`task ${i}`), 'troupe');
if (out === '-') {
  const cpu = process.cpuUsage();
  const start = performance.now();
  for (let i = 0; i < runs; i++) check(scenario, await runner.run(`task ${i}`), 'troupe');
  const used = process.cpuUsage(cpu);
  const steps = runs * scenario.toolSteps;
  console.log(
    JSON.stringify({
      cpuUsPerStep: (used.user + used.system) / steps,
      usPerStep: ((performance.now() - start) * 1000) / steps,
    }),
  );
  process.exit(0);
}
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 50 });
await session.post('Profiler.start');
for (let i = 0; i < runs; i++) check(scenario, await runner.run(`task ${i}`), 'troupe');
const { profile } = await session.post('Profiler.stop');
writeFileSync(out, JSON.stringify(profile));
