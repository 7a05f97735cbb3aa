/**
 * W1 in one process, warm: `warm` runs first (V8 has optimized the step by then), then `runs` runs timed; prints
 * the CPU and the wall µs per tool step of those. Run it for two builds in turn, order alternating, to compare
 * their warm step without the early window's compiles in it.
 *
 *   node bench/experiments/w1-warm-cpu.ts [dist folder=dist] [warm=3000] [runs=2000]
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const dist = resolve(process.argv[2] ?? 'dist');
const warm = Number(process.argv[3] ?? 3000);
const runs = Number(process.argv[4] ?? 2000);
const troupe = await import(pathToFileURL(join(dist, 'index.js')).href);
const { prepareTroupeWith } = await import('../frameworks/troupe-adapter.ts');
const { check } = await import('../scenario.ts');
const scenario = { toolSteps: 10, toolsPerTurn: 1, modelDelayMs: 0, toolDelayMs: 0, deltas: 0 };
const runner = prepareTroupeWith(troupe, 'troupe', scenario);
for (let i = 0; i < warm; i++) check(scenario, await runner.run(`task ${i}`), 'troupe');
const cpu = process.cpuUsage();
const start = performance.now();
for (let i = 0; i < runs; i++) check(scenario, await runner.run(`task ${i}`), 'troupe');
const used = process.cpuUsage(cpu);
console.log(
  ((used.user + used.system) / (runs * 10)).toFixed(2),
  (((performance.now() - start) * 1000) / (runs * 10)).toFixed(2),
);
