/**
 * Where W2's time goes (10,000 runs at once, 3 tool steps, 10 ms model), split by what a run is doing: its start
 * (everything under `startRun` but the model call it starts), its steps, its end (the result, `run_end`, the
 * effects' close and the actor's stop), the garbage collector, and the rest (timers, promises, the benchmark). A
 * CPU profile of the timed batch only (after 200 warm-up runs), taken in process with the inspector. With
 * --alloc, V8's sampling heap profiler over the same batch instead: bytes allocated per run by allocating function
 * (what the young-generation collector has to sweep or copy).
 *
 *   node --expose-gc bench/experiments/w2-split.ts [dist=dist] [runs=10000] [--top=30] [--alloc]
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type TroupeModule, troupeFramework } from '../frameworks/troupe-adapter.ts';
import { check, type Scenario } from '../scenario.ts';
import { type AllocationNode, allocationBySite } from './allocation-by-site.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

const args = process.argv.slice(2);
const allocations = args.includes('--alloc');
const top = Number(args.find((a) => a.startsWith('--top='))?.slice(6) ?? 30);
const [dist = 'dist', runsArg] = args.filter((a) => !a.startsWith('--'));
const n = Number(runsArg ?? 10_000);
const troupe = (await import(pathToFileURL(join(resolve(dist), 'index.js')).href)) as TroupeModule;
const scenario: Scenario = { toolSteps: 3, toolsPerTurn: 1, modelDelayMs: 10, toolDelayMs: 0, deltas: 0 };
const runner = await troupeFramework('troupe', troupe).prepare(scenario);

async function batch(count: number): Promise<void> {
  const all: Promise<unknown>[] = new Array(count);
  for (let i = 0; i < count; i++)
    all[i] = runner.run(`task ${i}`).then((outcome) => check(scenario, outcome, 'troupe'));
  await Promise.all(all);
}

await batch(200);
(globalThis as { gc?: () => void }).gc?.();
const session = new Session();
session.connect();
if (allocations) {
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 512,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  await batch(n);
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as {
    profile: { head: AllocationNode };
  };
  session.disconnect();
  const { total, sites } = allocationBySite(profile.head);
  console.log(`${n} runs: ${(total / n).toFixed(0)} bytes allocated per run (${dist})`);
  for (const [site, bytes] of sites.slice(0, top))
    console.log(`${(bytes / n).toFixed(0).padStart(7)}  ${site}`);
  process.exit(0);
}
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 100 });
await session.post('Profiler.start');
const started = performance.now();
await batch(n);
const wallMs = performance.now() - started;
const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: { nodes: ProfileNode[] } };
session.disconnect();
if (process.env.W2_SPLIT_SAVE) writeFileSync(process.env.W2_SPLIT_SAVE, JSON.stringify(profile));

// A sample's category is decided by the nearest ancestor that names one: the model call a start makes is a step,
// and so is a tool batch's answer (the tool runner's `#finish`, `batchDone`), but the run's end it leads to is not
// (`RunObserver`'s `#finish`, the effects' `close`, nearer).
const categories: [string, RegExp][] = [
  ['step', /^(#callModel|modelCall|runTools|callModel|batchDone|settle|#answered)$/],
  ['start', /^(startRun)$/],
  ['end', /^(#finish|close|closeEffects|endEffects|_stopProcedure|stop)$/],
];
const parent = new Map<number, ProfileNode>();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node);
const split = new Map<string, number>();
const selfByFunction = new Map<string, number>();
const selfByCategory = new Map<string, number>();
let total = 0;
for (const node of profile.nodes) {
  const hits = node.hitCount ?? 0;
  if (hits === 0) continue;
  total += hits;
  const name = node.callFrame.functionName;
  const key = `${name || '(anonymous)'} ${node.callFrame.url.split('/').slice(-1)[0]}:${node.callFrame.lineNumber + 1}`;
  selfByFunction.set(key, (selfByFunction.get(key) ?? 0) + hits);
  let category = name === '(garbage collector)' ? 'gc' : undefined;
  for (let at: ProfileNode | undefined = node; !category && at; at = parent.get(at.id)) {
    const fn = at.callFrame.functionName;
    for (const [label, pattern] of categories)
      if (pattern.test(fn)) {
        category = label;
        break;
      }
  }
  category ??=
    /\/dist\/|chunks\//.test(node.callFrame.url) || /xstate/.test(node.callFrame.url) ? 'step' : 'other';
  split.set(category, (split.get(category) ?? 0) + hits);
  const inCategory = `${category}  ${key}`;
  selfByCategory.set(inCategory, (selfByCategory.get(inCategory) ?? 0) + hits);
}
console.log(`${n} runs, ${wallMs.toFixed(0)} ms wall under the profiler, ${total} samples`);
for (const [label, hits] of [...split].sort((a, b) => b[1] - a[1]))
  console.log(`${label.padEnd(6)} ${((100 * hits) / total).toFixed(1).padStart(5)} %`);
console.log('self time, top functions:');
for (const [key, hits] of [...selfByFunction].sort((a, b) => b[1] - a[1]).slice(0, top))
  console.log(`${((100 * hits) / total).toFixed(1).padStart(5)} %  ${key}`);
console.log('self time by category, top functions of the start and the end:');
for (const [key, hits] of [...selfByCategory]
  .filter(([key]) => /^(start|end) /.test(key))
  .sort((a, b) => b[1] - a[1])
  .slice(0, top))
  console.log(`${((100 * hits) / total).toFixed(1).padStart(5)} %  ${key}`);
