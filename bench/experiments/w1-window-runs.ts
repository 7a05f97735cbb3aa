/**
 * W1's window after 50 warm-up runs, run by run: one process makes 50 warm-up runs and then times runs 51–150 one by
 * one, and prints as JSON the window's mean µs per tool step (what `paired-w1.ts` reports), the median run's, the
 * mean without the 5 slowest runs, and the collector's pauses that started inside the window (µs per step, the major
 * ones' ms each, the count of minor ones). It tells a window slowed throughout from one slowed by a few pauses.
 *
 *   node bench/experiments/w1-window-runs.ts [dist folder=dist]      # one process; run it several times
 */
import { join, resolve } from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

const dist = resolve(process.argv[2] ?? 'dist');
const troupe = await import(pathToFileURL(join(dist, 'index.js')).href);
const { prepareTroupeWith } = await import('../frameworks/troupe-adapter.ts');
const { check } = await import('../scenario.ts');
const scenario = { toolSteps: 10, toolsPerTurn: 1, modelDelayMs: 0, toolDelayMs: 0, deltas: 0 };
const runner = prepareTroupeWith(troupe, 'troupe', scenario);
const gcs: { start: number; duration: number; major: boolean }[] = [];
const obs = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const kind = (e as unknown as { detail: { kind: number } }).detail.kind;
    gcs.push({
      start: e.startTime,
      duration: e.duration,
      major: kind === constants.NODE_PERFORMANCE_GC_MAJOR,
    });
  }
});
obs.observe({ entryTypes: ['gc'] });
for (let i = 0; i < 50; i++) check(scenario, await runner.run(`task ${i}`), 'troupe');
const per: number[] = [];
const windowStart = performance.now();
for (let i = 0; i < 100; i++) {
  const t = performance.now();
  check(scenario, await runner.run(`task ${i}`), 'troupe');
  per.push(((performance.now() - t) * 1000) / 10);
}
const windowEnd = performance.now();
// The observer is told of the window's last collections in a later task.
await new Promise((r) => setTimeout(r, 10));
const inWindow = gcs.filter((g) => g.start >= windowStart && g.start < windowEnd);
const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);
const sorted = [...per].sort((a, b) => a - b);
console.log(
  JSON.stringify({
    meanUs: +(sum(per) / 100).toFixed(1),
    medianRunUs: +(sorted[50] as number).toFixed(1),
    meanWithoutTop5: +(sum(sorted.slice(0, 95)) / 95).toFixed(1),
    gcUsPerStep: +((sum(inWindow.map((g) => g.duration)) * 1000) / 1000).toFixed(1),
    majorGcs: inWindow.filter((g) => g.major).map((g) => +g.duration.toFixed(1)),
    minorGcs: inWindow.filter((g) => !g.major).length,
  }),
);
process.exit(0);
