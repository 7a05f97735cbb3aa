/**
 * Bytes W1 allocates per tool step in the window after 50 warm-up runs (runs 51–150), exactly: with a young
 * generation too large to fill in the window (start node with `--min-semi-space-size=64 --max-semi-space-size=64`,
 * in MB), no collection runs there, so the heap's used size after the window less its size before is what the
 * window allocated (the bench model and tool's objects included: the same in every build). Checks that no
 * collection ran and prints bytes per step as JSON. Sites are for `allocation-sites.ts`; this gives the total
 * without sampling error, to compare builds.
 *
 *   node --min-semi-space-size=64 --max-semi-space-size=64 bench/experiments/bytes-per-step.ts [dist=dist] [runs=100]
 */
import { resolve } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { getHeapStatistics } from 'node:v8';
import { prepareTroupeWith, type TroupeModule } from '../frameworks/troupe-adapter.ts';
import { check, type Scenario } from '../scenario.ts';

const dist = resolve(process.argv[2] ?? 'dist');
const runs = Number(process.argv[3] ?? 100);
const troupe = (await import(pathToFileURL(resolve(dist, 'index.js')).href)) as TroupeModule;
const scenario: Scenario = { toolSteps: 10, toolsPerTurn: 1, modelDelayMs: 0, toolDelayMs: 0, deltas: 0 };
const runner = prepareTroupeWith(troupe, 'troupe', scenario);
for (let i = 0; i < 50; i++) check(scenario, await runner.run(`task ${i}`), 'troupe');
let collections = 0;
const observer = new PerformanceObserver((list) => {
  collections += list.getEntries().length;
});
observer.observe({ entryTypes: ['gc'] });
const before = getHeapStatistics().used_heap_size;
for (let i = 0; i < runs; i++) check(scenario, await runner.run(`task ${i}`), 'troupe');
const after = getHeapStatistics().used_heap_size;
// The observer hears of collections from a later job.
await new Promise((done) => setImmediate(done));
observer.disconnect();
console.log(
  JSON.stringify({ bytesPerStep: Math.round((after - before) / (runs * scenario.toolSteps)), collections }),
);
