/**
 * Experiment: what XState's context copy costs the agent machine. Every `assign` runs
 * `Object.assign({}, context, update)` (xstate 5.33.3, resolveAssign); V8 copies an object of up to 19 keys that
 * way in about 0.1 µs, one of 20 or more in several µs (a cliff, measured below). The agent context has more
 * than 19 top-level keys, so each assign pays the slow copy.
 *
 *   node bench/experiments/context-copy.ts
 *
 * Part 2 measures the real agent machine alone (instant effects, as bench/profile.ts), then the same after
 * replacing Object.assign's empty-target case with a spread. In this tight loop of identical runs V8 ends up
 * caching the copy's maps and the two converge after warm-up; in real runs (varied histories, 10,000 concurrent
 * contexts) it does not: end to end, with spread-assign.ts preloaded, W1 went from 61 to 41 µs per step and W2
 * from 4.8 to 3.7 s (BENCHMARKS.md). Both parts run in one process, interleaved, so machine load affects them alike.
 */
import { statechartAlone } from '../statechart-alone.ts';

function keysObject(n: number): Record<string, number> {
  const o: Record<string, number> = {};
  for (let i = 0; i < n; i++) o[`k${i}`] = i;
  return o;
}

console.log('Object.assign({}, previous, update), chained as XState does, ns per copy:');
for (const n of [12, 16, 19, 20, 24, 27]) {
  let x = keysObject(n);
  const started = performance.now();
  for (let i = 0; i < 100_000; i++) x = Object.assign({}, x, { k1: i });
  console.log(`  ${n} keys: ${((performance.now() - started) * 10).toFixed(0)}`);
}

const steps = 10;
const { runOnce } = statechartAlone(steps);
let keys = 0;
const measure = (): number => {
  const once = () => {
    keys = Object.keys(runOnce().context).length;
  };
  for (let i = 0; i < 2000; i++) once();
  const runs = 5000;
  const started = performance.now();
  for (let i = 0; i < runs; i++) once();
  return ((performance.now() - started) * 1000) / (runs * steps);
};

const assign = Object.assign;
const patched = function patched(target: object, ...sources: object[]) {
  if (
    sources.length === 2 &&
    Object.getPrototypeOf(target) === Object.prototype &&
    Object.keys(target).length === 0
  ) {
    return { ...sources[0], ...sources[1] };
  }
  return assign(target, ...sources);
} as typeof Object.assign;
// Alternate four times and keep the best of each: the machine's load moves single figures a lot.
const asIs: number[] = [];
const fast: number[] = [];
for (let round = 0; round < 4; round++) {
  asIs.push(measure());
  Object.assign = patched;
  fast.push(measure());
  Object.assign = assign;
}
console.log(`agent machine alone (${keys} context keys), µs per step, best of 4 (all):`);
console.log(`  as is: ${Math.min(...asIs).toFixed(1)} (${asIs.map((v) => v.toFixed(0)).join(', ')})`);
console.log(
  `  with the copy at spread speed: ${Math.min(...fast).toFixed(1)} (${fast.map((v) => v.toFixed(0)).join(', ')})`,
);
