/**
 * Paired fresh processes of W1 (`worker.ts troupe-baseline W1 --quick`) for two builds, in turn (order
 * alternating), in two regimes: V8's default tiers, and the baseline tiers only (`--no-opt --no-maglev`). Prints,
 * per metric, each build's median and quartiles and the median of the per-pair ratios (new over base).
 *
 *   node bench/experiments/paired-w1.ts <base dist> <new dist> [pairs=10] [regime=both|default|baseline]
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';

const [baseDist, newDist, pairsArg, regimeArg] = process.argv.slice(2);
if (!baseDist || !newDist) throw new Error('usage: paired-w1.ts <base dist> <new dist> [pairs] [regime]');
const pairs = Number(pairsArg ?? 10);
const regime = regimeArg ?? 'both';
const bench = resolve(import.meta.dirname, '..');
const metrics = ['usPerStep', 'cpuUsPerStep', 'usPerStepAfter50', 'cpuUsPerStepAfter50'] as const;
type Metrics = Record<(typeof metrics)[number], number>;

function once(dist: string, flags: string[]): Metrics {
  const out = spawnSync(
    process.execPath,
    [...flags, '--expose-gc', 'worker.ts', 'troupe-baseline', 'W1', '--quick'],
    { cwd: bench, env: { ...process.env, TROUPE_BASELINE_DIST: resolve(dist) }, encoding: 'utf8' },
  );
  if (out.status !== 0) throw new Error(out.stderr);
  return JSON.parse(out.stdout.trim().split('\n').at(-1) as string).metrics as Metrics;
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  return (sorted[low] as number) + ((sorted[Math.ceil(at)] as number) - (sorted[low] as number)) * (at - low);
}

const regimes: [string, string[]][] = [];
if (regime !== 'baseline') regimes.push(['default', []]);
if (regime !== 'default') regimes.push(['--no-opt --no-maglev', ['--no-opt', '--no-maglev']]);
for (const [name, flags] of regimes) {
  const base: Metrics[] = [];
  const next: Metrics[] = [];
  const loads: number[] = [];
  for (let i = 0; i < pairs; i++) {
    loads.push(loadavg()[0] as number);
    if (i % 2 === 0) {
      base.push(once(baseDist, flags));
      next.push(once(newDist, flags));
    } else {
      next.push(once(newDist, flags));
      base.push(once(baseDist, flags));
    }
  }
  console.log(
    `${name}: ${pairs} pairs, load ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}`,
  );
  for (const metric of metrics) {
    const b = base.map((m) => m[metric]);
    const n = next.map((m) => m[metric]);
    const ratios = n.map((value, i) => value / (b[i] as number));
    const f = (values: number[]) =>
      `${quantile(values, 0.5).toFixed(1)} (${quantile(values, 0.25).toFixed(1)}-${quantile(values, 0.75).toFixed(1)})`;
    console.log(
      `  ${metric.padEnd(20)} base ${f(b).padEnd(20)} new ${f(n).padEnd(20)} ratio ${quantile(ratios, 0.5).toFixed(2)} (${quantile(ratios, 0.25).toFixed(2)}-${quantile(ratios, 0.75).toFixed(2)})`,
    );
  }
}
