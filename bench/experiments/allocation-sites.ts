/**
 * Where a W1 tool step allocates: V8's sampling heap profiler over 300 warm runs (10 tool steps each, 0 ms model,
 * the `troupe` adapter), bytes per tool step by the function that allocated them, objects the collector already
 * freed included. Garbage is a sixth of a warm step's CPU; this names what to trim.
 *
 *   npm run build && node bench/experiments/allocation-sites.ts [dist folder=dist] [rows=40] [--after50]
 *
 * With --after50, the 100 runs after 50 warm-up runs instead (W1's early regime, where most of a step runs in V8's
 * baseline tiers and nothing is escape-analysed away).
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { prepareTroupeWith, type TroupeModule } from '../frameworks/troupe-adapter.ts';
import type { Scenario } from '../scenario.ts';
import { allocationBySite, sampleAllocations } from './allocation-by-site.ts';

const early = process.argv.includes('--after50');
const [distArg, rowsArg] = process.argv.slice(2).filter((arg) => arg !== '--after50');
const dist = resolve(import.meta.dirname, '..', '..', distArg ?? 'dist');
const rows = Number(rowsArg ?? 40);
const troupe = (await import(pathToFileURL(resolve(dist, 'index.js')).href)) as TroupeModule;
const scenario: Scenario = { toolSteps: 10, toolsPerTurn: 1, modelDelayMs: 0, toolDelayMs: 0, deltas: 0 };
const runner = prepareTroupeWith(troupe, 'troupe', scenario);
if (early) for (let i = 0; i < 50; i++) await runner.run('warm up');
else {
  const warmUntil = performance.now() + 1500;
  while (performance.now() < warmUntil) await runner.run('warm up');
}

const runs = early ? 100 : 300;
const { head } = await sampleAllocations(256, async () => {
  for (let i = 0; i < runs; i++) await runner.run(`task ${i}`);
});

const steps = runs * scenario.toolSteps;
const { total, sites } = allocationBySite(head);
console.log(`${(total / steps).toFixed(0)} bytes allocated per tool step (${dist})`);
for (const [site, bytes] of sites.slice(0, rows))
  console.log(`${(bytes / steps).toFixed(0).padStart(7)}  ${site}`);
