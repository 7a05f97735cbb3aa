/**
 * This tree's build of Troupe against another build (TROUPE_BASELINE_DIST, e.g. the commit before a change), in one
 * process, interleaved: W1 (µs per tool step: runs of 10 tool steps, 0 ms model) and W3 (µs per streamed text delta:
 * one answer of 10,000 deltas), through the same adapter as `troupe` and `troupe-baseline` in bench/run.ts.
 *
 *   TROUPE_BASELINE_DIST=../base/dist node bench/ab.ts [rounds=61]
 *
 * Each round measures a slice of each build back to back (the order alternates, so neither always pays the garbage
 * the other left), and both share the machine's load of that moment; no GC is forced between slices (a forced full
 * GC makes the next slice several times slower, whatever the build); the figure to read is the median over rounds of this build's time
 * over the other's in the same round, with the quartiles of that ratio as its noise. Both builds import the same
 * xstate and zod, so only Troupe's own code differs.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as current from '../dist/index.js';
import { prepareTroupeWith, type TroupeModule, type TroupeRunner } from './frameworks/troupe-adapter.ts';
import { check, type Scenario, toolCounter } from './scenario.ts';

const rounds = Number(process.argv[2] ?? 61);
const dir = process.env.TROUPE_BASELINE_DIST;
if (dir === undefined || dir === '')
  throw new Error('set TROUPE_BASELINE_DIST to the other build’s dist/ folder');
const entry = join(resolve(dir), 'index.js');
if (!existsSync(entry)) throw new Error(`${entry} does not exist (build that tree first)`);
const baseline = (await import(pathToFileURL(entry).href)) as TroupeModule;

interface Slice {
  wallUs: number;
  cpuUs: number;
}

/** Runs `body` once, timed in wall and CPU µs (user + system). */
async function timed(body: () => Promise<void>): Promise<Slice> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  await body();
  const wallUs = (performance.now() - started) * 1000;
  const used = process.cpuUsage(cpu);
  return { wallUs, cpuUs: used.user + used.system };
}

const w1: Scenario = { toolSteps: 10, toolsPerTurn: 1, modelDelayMs: 0, toolDelayMs: 0, deltas: 0 };
const w3: Scenario = { toolSteps: 0, toolsPerTurn: 1, modelDelayMs: 0, toolDelayMs: 0, deltas: 10_000 };
const runsPerSlice = 100;
const streamsPerSlice = 3;

interface Build {
  label: string;
  w1: TroupeRunner;
  w3: TroupeRunner;
  w1Slices: Slice[];
  w3Slices: Slice[];
}

const builds: Build[] = [
  { label: 'troupe', module: current as TroupeModule },
  { label: 'troupe-baseline', module: baseline },
].map(
  ({ label, module }): Build => ({
    label,
    w1: prepareTroupeWith(module, label, w1),
    w3: prepareTroupeWith(module, label, w3),
    w1Slices: [],
    w3Slices: [],
  }),
);

async function w1Slice(build: Build): Promise<void> {
  const before = toolCounter.executions;
  for (let i = 0; i < runsPerSlice; i++) check(w1, await build.w1.run(`task ${i}`), build.label);
  if (toolCounter.executions - before !== runsPerSlice * w1.toolSteps)
    throw new Error(`${build.label}: wrong number of tool executions`);
}

async function w3Slice(build: Build): Promise<void> {
  for (let i = 0; i < streamsPerSlice; i++) check(w3, await build.w3.stream('go'), build.label);
}

// Warm-up: both builds' code optimized before anything counts.
for (let i = 0; i < 10; i++)
  for (const build of builds) {
    await w1Slice(build);
    await w3Slice(build);
  }

for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? builds : [...builds].reverse();
  for (const build of order) build.w1Slices.push(await timed(() => w1Slice(build)));
  for (const build of order) build.w3Slices.push(await timed(() => w3Slice(build)));
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.round(q * (sorted.length - 1)))] as number;
}

const [a, b] = builds as [Build, Build];
const rows: string[] = [
  `Node ${process.version}, ${rounds} interleaved rounds, ${a.label} vs ${b.label} (${dir})`,
  '',
  `| per | ${a.label} µs | ${b.label} µs | ${a.label} / ${b.label}: median of per-round ratios (quartiles) |`,
  '|---|---:|---:|---:|',
];
const units: [string, (build: Build) => Slice[], number][] = [
  ['W1 tool step, wall', (build) => build.w1Slices, runsPerSlice * w1.toolSteps],
  ['W3 streamed delta, wall', (build) => build.w3Slices, streamsPerSlice * w3.deltas],
];
for (const [label, slices, per] of units) {
  for (const kind of ['wallUs', 'cpuUs'] as const) {
    const name = kind === 'wallUs' ? label : label.replace('wall', 'CPU');
    const sa = slices(a).map((s) => s[kind] / per);
    const sb = slices(b).map((s) => s[kind] / per);
    const ratios = sa.map((x, i) => x / (sb[i] as number));
    rows.push(
      `| ${name} | ${quantile(sa, 0.5).toFixed(2)} | ${quantile(sb, 0.5).toFixed(2)} | ${quantile(ratios, 0.5).toFixed(3)} (${quantile(ratios, 0.25).toFixed(3)} – ${quantile(ratios, 0.75).toFixed(3)}) |`,
    );
  }
}
console.log(rows.join('\n'));
