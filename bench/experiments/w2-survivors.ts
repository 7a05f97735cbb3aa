/**
 * What W2 allocates that outlives a young collection (10,000 runs at once, 3 tool steps, 10 ms model): V8's sampling
 * heap profiler over the timed batch (after 200 warm-up runs), leaving out the objects a minor collection freed,
 * bytes per run by allocating site. Those are the objects each scavenge copies (and promotes): with every run in
 * flight for the whole batch, what a step makes and the run keeps until its next step is what the collector pays for.
 *
 *   node --expose-gc bench/experiments/w2-survivors.ts [dist=dist|floor] [runs=10000] [--top=40]
 *
 * `floor` profiles the hand-written floor instead, for comparison. Objects on a young page that the scavenger
 * promotes whole (most of it live) count too, though they may have died: the figures are an upper bound per site.
 */
import { Session } from 'node:inspector/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { floor } from '../frameworks/floor.ts';
import { type TroupeModule, troupeFramework } from '../frameworks/troupe-adapter.ts';
import { check, type Scenario } from '../scenario.ts';
import { type AllocationNode, allocationBySite } from './allocation-by-site.ts';

const args = process.argv.slice(2);
const top = Number(args.find((a) => a.startsWith('--top='))?.slice(6) ?? 40);
const [dist = 'dist', runsArg] = args.filter((a) => !a.startsWith('--'));
const n = Number(runsArg ?? 10_000);
const scenario: Scenario = { toolSteps: 3, toolsPerTurn: 1, modelDelayMs: 10, toolDelayMs: 0, deltas: 0 };
const framework =
  dist === 'floor'
    ? floor
    : troupeFramework(
        'troupe',
        (await import(pathToFileURL(join(resolve(dist), 'index.js')).href)) as TroupeModule,
      );
const runner = await framework.prepare(scenario);

async function batch(count: number): Promise<void> {
  const all: Promise<unknown>[] = new Array(count);
  for (let i = 0; i < count; i++)
    all[i] = runner.run(`task ${i}`).then((outcome) => check(scenario, outcome, framework.name));
  await Promise.all(all);
}

await batch(200);
(globalThis as { gc?: () => void }).gc?.();
const session = new Session();
session.connect();
await session.post('HeapProfiler.startSampling', {
  samplingInterval: 512,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: false,
});
await batch(n);
// Objects still alive when the profile stops count as survivors: two minor collections first take away what the
// batch's last runs left (their results, made at the end) without touching what really outlived one.
const gc = (globalThis as { gc?: (options: { type: 'minor' }) => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
gc({ type: 'minor' });
gc({ type: 'minor' });
const { profile } = (await session.post('HeapProfiler.stopSampling')) as {
  profile: { head: AllocationNode };
};
session.disconnect();
const { total, sites } = allocationBySite(profile.head);
console.log(`${n} runs: ${(total / n).toFixed(0)} bytes per run outlived a young collection (${dist})`);
for (const [site, bytes] of sites.slice(0, top))
  console.log(`${(bytes / n).toFixed(0).padStart(7)}  ${site}`);
