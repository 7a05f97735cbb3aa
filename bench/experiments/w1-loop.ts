/**
 * W1's runs in a loop with V8's sampling profiler on after 50 warm-up runs, the profile written to a file for
 * inclusive-time reading (`inclusive-time.ts`). V8 flags go on the command line (`node --no-opt --no-maglev ...`
 * profiles the step as V8's baseline tiers run it).
 *
 *   node bench/experiments/w1-loop.ts <out.cpuprofile> [dist folder=dist] [runs=300]
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
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 50 });
await session.post('Profiler.start');
for (let i = 0; i < runs; i++) check(scenario, await runner.run(`task ${i}`), 'troupe');
const { profile } = await session.post('Profiler.stop');
writeFileSync(out, JSON.stringify(profile));
