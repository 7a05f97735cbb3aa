/**
 * Cold import time: how long a fresh Node process takes to import Troupe's entry points (from dist/) and the
 * main entry points of the peers (from bench/node_modules), against a bare `node -e ''` start measured in the
 * same run. Every sample is its own process; targets are interleaved and their order rotates each repetition.
 *
 *   npm run build && npm --prefix bench install && node bench/import-time.ts [--reps=15] [--out=path.md]
 *   --before=<dir>   also measure the entry points of another build of Troupe (its dist/ folder), e.g. an older
 *                    commit's, to compare; give it more than once to compare several builds
 *   --troupe-only    only the bare start and Troupe's entry points (no peers: bench/node_modules is not needed)
 *
 * The main entry loads its runtime on the first call of a function that runs agents or holds their state; the rows
 * "`troupe` + runtime" import it and call `createMemoryStore()`, which is what a program pays before its first run
 * (in a build that loads everything at import, the call itself costs next to nothing).
 *
 * Columns: the median wall time of the whole process (spawn to exit), its ratio to the bare start, the median
 * time and CPU time of the `import()` itself measured inside the process (what an application pays at startup), and
 * the median CPU time of the process up to the end of its script (user + system, all threads; steadier than wall
 * time when the machine is shared) with its ratio to the bare start's.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const here = import.meta.dirname;
const root = resolve(here, '..');
const args = process.argv.slice(2);
const option = (name: string): string | undefined =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const reps = Number(option('reps') ?? 15);
const out = option('out');

interface Target {
  label: string;
  /** What to import; undefined for the bare start. */
  specifier?: string;
  /** A function of the imported module to call after the import, inside the timed part. */
  call?: string;
  /** Where the import resolves from (a bare specifier needs the right node_modules). */
  cwd: string;
}

const dist = (path: string): string => pathToFileURL(join(root, 'dist', path)).href;

const targets: Target[] = [
  { label: 'bare start (`node -e`, no import)', cwd: root },
  { label: '`troupe`', specifier: dist('index.js'), cwd: root },
  { label: '`troupe/providers`', specifier: dist('providers/index.js'), cwd: root },
  { label: '`troupe` + runtime', specifier: dist('index.js'), call: 'createMemoryStore', cwd: root },
  { label: '`ai` (AI SDK 7)', specifier: 'ai', cwd: here },
  { label: '`@openai/agents`', specifier: '@openai/agents', cwd: here },
  { label: '`langchain`', specifier: 'langchain', cwd: here },
  { label: '`@mastra/core`', specifier: '@mastra/core', cwd: here },
  // What troupe/providers used to load at import, and what one provider now loads on its first call.
  { label: '`openai` SDK', specifier: 'openai', cwd: root },
  { label: '`@anthropic-ai/sdk`', specifier: '@anthropic-ai/sdk', cwd: root },
  { label: '`@google/genai`', specifier: '@google/genai', cwd: root },
];

const troupeOnly = args.includes('--troupe-only');
if (troupeOnly) targets.splice(4);

// Each --before adds the three rows of Troupe of that build, in the order given.
const befores = args.filter((a) => a.startsWith('--before=')).map((a) => a.slice('--before='.length));
targets.splice(
  4,
  0,
  ...befores.flatMap((before): Target[] => {
    const file = (path: string): string => pathToFileURL(resolve(before, path)).href;
    return [
      { label: `\`troupe\` (${before})`, specifier: file('index.js'), cwd: root },
      { label: `\`troupe/providers\` (${before})`, specifier: file('providers/index.js'), cwd: root },
      {
        label: `\`troupe\` + runtime (${before})`,
        specifier: file('index.js'),
        call: 'createMemoryStore',
        cwd: root,
      },
    ];
  }),
);

if (!existsSync(join(root, 'dist', 'providers', 'index.js'))) {
  console.error('dist/ is missing: run `npm run build` first.');
  process.exit(1);
}
if (!troupeOnly && !existsSync(join(here, 'node_modules', 'ai'))) {
  console.error('bench/node_modules is missing: run `npm --prefix bench install` first.');
  process.exit(1);
}

interface Sample {
  wallMs: number;
  importMs: number | undefined;
  /** CPU time of the import alone, inside the process (less noisy than the whole process's). */
  importCpuMs: number | undefined;
  cpuMs: number;
}

/** Printed by every child last: its CPU time so far (user + system), in ms. */
const printCpu =
  'const c = process.cpuUsage(); process.stdout.write(" " + String((c.user + c.system) / 1000));';

function measure(target: Target): Sample {
  const argv =
    target.specifier === undefined
      ? ['-e', printCpu]
      : [
          '--input-type=module',
          '-e',
          `const c0 = process.cpuUsage(); const t0 = performance.now(); const m = await import(${JSON.stringify(target.specifier)}); ${target.call === undefined ? '' : `m.${target.call}(); `}const t1 = performance.now(); const c1 = process.cpuUsage(c0); process.stdout.write(String(t1 - t0) + " " + String((c1.user + c1.system) / 1000)); ${printCpu}`,
        ];
  const started = process.hrtime.bigint();
  const child = spawnSync(process.execPath, argv, { cwd: target.cwd, encoding: 'utf8' });
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  if (child.status !== 0)
    throw new Error(`${target.label}: exit ${child.status}: ${child.stderr.slice(0, 500)}`);
  const fields = child.stdout.trim().split(' ').map(Number);
  if (target.specifier === undefined)
    return { wallMs, importMs: undefined, importCpuMs: undefined, cpuMs: fields[0] ?? NaN };
  return { wallMs, importMs: fields[0], importCpuMs: fields[1], cpuMs: fields[2] ?? NaN };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

// One untimed pass warms the file system cache, so every target starts from the same place.
for (const target of targets) measure(target);

const samples = new Map<Target, Sample[]>(targets.map((target) => [target, []]));
for (let rep = 0; rep < reps; rep++) {
  for (let i = 0; i < targets.length; i++) {
    const target = targets[(i + rep) % targets.length] as Target;
    samples.get(target)?.push(measure(target));
  }
}

const baseline = median((samples.get(targets[0] as Target) ?? []).map((s) => s.wallMs));
const baselineCpu = median((samples.get(targets[0] as Target) ?? []).map((s) => s.cpuMs));
const lines = [
  `Node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? 'unknown'}), load ${loadavg()[0]?.toFixed(2)}; ` +
    `${reps} interleaved samples per row, medians.`,
  '',
  '| import | process wall ms | × bare start | `import()` ms | `import()` CPU ms | process CPU ms | × bare start |',
  '|---|---:|---:|---:|---:|---:|---:|',
];
for (const target of targets) {
  const list = samples.get(target) ?? [];
  const wall = median(list.map((s) => s.wallMs));
  const cell = (values: (number | undefined)[]): string => {
    const known = values.filter((value): value is number => value !== undefined);
    return known.length > 0 ? median(known).toFixed(1) : '–';
  };
  const cpu = median(list.map((s) => s.cpuMs));
  lines.push(
    `| ${target.label} | ${wall.toFixed(1)} | ${(wall / baseline).toFixed(2)} | ${cell(list.map((s) => s.importMs))} | ${cell(list.map((s) => s.importCpuMs))} | ${cpu.toFixed(1)} | ${(cpu / baselineCpu).toFixed(2)} |`,
  );
}
const table = lines.join('\n');
console.log(table);
if (out !== undefined) {
  writeFileSync(out, `${table}\n`);
  console.log(`\nwritten to ${out}`);
}
