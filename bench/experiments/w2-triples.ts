/**
 * W2 in paired triples of fresh processes: a base build, a new build (both through the same adapter,
 * `worker.ts troupe-baseline W2`) and the floor (`worker.ts floor W2`), in turn (the order of the two builds
 * alternating). Prints each one's median wall and CPU, each build's wall and CPU over the floor's of the same triple
 * (median and quartiles) and the new build's over the base's.
 *
 *   node bench/experiments/w2-triples.ts <base dist> <new dist> [triples=10] [--mem]
 *
 * `--mem` also reads each build's KB per run in flight (`worker.ts ... W2 --mem`; it runs the batch once more).
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';

const args = process.argv.slice(2);
const withMemory = args.includes('--mem');
const [baseDist, newDist, triplesArg] = args.filter((arg) => !arg.startsWith('--'));
if (!baseDist || !newDist) throw new Error('usage: w2-triples.ts <base dist> <new dist> [triples] [--mem]');
const triples = Number(triplesArg ?? 10);
const bench = resolve(import.meta.dirname, '..');

interface W2 {
  wallMs: number;
  cpuMs: number;
  kbPerRun?: number;
}

function once(framework: string, dist?: string): W2 {
  const out = spawnSync(
    process.execPath,
    ['--expose-gc', 'worker.ts', framework, 'W2', ...(withMemory && dist ? ['--mem'] : [])],
    {
      cwd: bench,
      env: dist ? { ...process.env, TROUPE_BASELINE_DIST: resolve(dist) } : process.env,
      encoding: 'utf8',
    },
  );
  if (out.status !== 0) throw new Error(out.stderr);
  return JSON.parse(out.stdout.trim().split('\n').at(-1) as string).metrics as W2;
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  return (sorted[low] as number) + ((sorted[Math.ceil(at)] as number) - (sorted[low] as number)) * (at - low);
}

function summary(values: number[], digits: number): string {
  return `${quantile(values, 0.5).toFixed(digits)} (${quantile(values, 0.25).toFixed(digits)}-${quantile(values, 0.75).toFixed(digits)})`;
}

const base: W2[] = [];
const next: W2[] = [];
const floor: W2[] = [];
const loads: number[] = [];
const started = new Date();
for (let i = 0; i < triples; i++) {
  loads.push(loadavg()[0] as number);
  if (i % 2 === 0) {
    base.push(once('troupe-baseline', baseDist));
    next.push(once('troupe-baseline', newDist));
  } else {
    next.push(once('troupe-baseline', newDist));
    base.push(once('troupe-baseline', baseDist));
  }
  floor.push(once('floor'));
}
loads.push(loadavg()[0] as number);

console.log(
  `${triples} triples, ${started.toISOString().slice(11, 16)}-${new Date().toISOString().slice(11, 16)} UTC, load ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}`,
);
for (const metric of ['wallMs', 'cpuMs'] as const) {
  const f = floor.map((m) => m[metric]);
  const b = base.map((m) => m[metric]);
  const n = next.map((m) => m[metric]);
  console.log(
    `${metric}: floor ${summary(f, 0)}, base ${summary(b, 0)}, new ${summary(n, 0)}; ` +
      `base x floor ${summary(
        b.map((value, i) => value / (f[i] as number)),
        2,
      )}, new x floor ${summary(
        n.map((value, i) => value / (f[i] as number)),
        2,
      )}, new / base ${summary(
        n.map((value, i) => value / (b[i] as number)),
        3,
      )}`,
  );
}
if (withMemory) {
  const kb = (runs: W2[]) => runs.map((m) => m.kbPerRun ?? Number.NaN);
  console.log(`KB per run in flight: base ${summary(kb(base), 2)}, new ${summary(kb(next), 2)}`);
}
