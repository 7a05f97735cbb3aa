/**
 * The benchmark orchestrator: runs every (framework, workload) pair in its own process, interleaved across
 * repetitions (the order of frameworks rotates each repetition), and writes medians, ranges and ratios to the floor
 * measured in the same run to bench/results/latest.md (and the raw samples to latest.json).
 *
 *   node bench/run.ts            all frameworks, all workloads, full repetitions (about 15 minutes)
 *   node bench/run.ts --quick    floor and troupe only, fewer repetitions (about a minute), to results/quick.md
 *   options: --frameworks=floor,troupe,ai-sdk  --workloads=W1,W3  --reps=3  --out=path.md
 *            --compare=troupe,troupe-baseline   adds a column: the first framework's median over the second's, and the
 *                                               range of that ratio within each repetition (measured minutes apart)
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { frameworkNames } from './frameworks/index.ts';

const here = import.meta.dirname;
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const option = (name: string): string | undefined =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

const frameworks = option('frameworks')?.split(',') ?? (quick ? ['floor', 'troupe'] : frameworkNames);
const workloads = option('workloads')?.split(',') ?? ['W1', 'W2', 'W3', 'W4', 'W5', 'W1G'];
const defaultReps: Record<string, number> = quick
  ? { W1: 3, W2: 1, W3: 3, W4: 1, W5: 1, W1G: 1 }
  : { W1: 5, W2: 3, W3: 5, W4: 3, W5: 3, W1G: 3 };
const repsOverride = option('reps');
const compare = option('compare')?.split(',');
if (compare && (compare.length !== 2 || !compare.every((f) => frameworks.includes(f)))) {
  console.error('--compare takes two of the measured frameworks: --compare=troupe,troupe-baseline');
  process.exit(1);
}
const timeoutMs: Record<string, number> = {
  W1: 120_000,
  W2: 600_000,
  W3: 300_000,
  W4: 120_000,
  W5: 300_000,
  W1G: 300_000,
};

interface Sample {
  framework: string;
  workload: string;
  rep: number;
  metrics?: Record<string, number>;
  error?: string;
  /** The 1-minute load average when the sample started (the machine may be shared). */
  load?: number;
}

function runWorker(framework: string, workload: string, rep: number): Promise<Sample> {
  const script =
    workload === 'W5'
      ? join(here, 'w5-worker.ts')
      : workload === 'W1G'
        ? join(here, 'w1-guardrails.ts')
        : join(here, 'worker.ts');
  const workerArgs = ['--expose-gc', '--max-old-space-size=12288', script, framework, workload];
  if (quick) workerArgs.push('--quick');
  if (rep === 0) workerArgs.push('--mem');
  return new Promise((resolve) => {
    const child = spawn(process.execPath, workerArgs, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs[workload] ?? 300_000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const line = out.trim().split('\n').pop() ?? '';
      try {
        const parsed = JSON.parse(line) as { metrics: Record<string, number> };
        resolve({ framework, workload, rep, metrics: parsed.metrics });
      } catch {
        const why =
          signal === 'SIGKILL' ? `timed out after ${(timeoutMs[workload] ?? 0) / 1000} s` : `exit ${code}`;
        const detail = err
          .trim()
          .split('\n')
          .filter((l) => !l.startsWith('    at '))
          .slice(-3)
          .join(' | ');
        resolve({ framework, workload, rep, error: `${why}: ${detail}`.slice(0, 300) });
      }
    });
  });
}

const samples: Sample[] = [];
const maxReps = Math.max(
  ...workloads.map((w) => (repsOverride ? Number(repsOverride) : (defaultReps[w] ?? 1))),
);
const started = Date.now();
const loadBefore = loadavg()[0] ?? 0;
for (let rep = 0; rep < maxReps; rep++) {
  for (const workload of workloads) {
    const reps = repsOverride ? Number(repsOverride) : (defaultReps[workload] ?? 1);
    if (rep >= reps) continue;
    // W5 measures the resource manager, W1G guardrails: only Troupe has them.
    const names =
      workload === 'W5' || workload === 'W1G' ? frameworks.filter((f) => f === 'troupe') : frameworks;
    const rotated = names.map((_, i) => names[(i + rep) % names.length] as string);
    for (const framework of rotated) {
      const load = loadavg()[0] ?? 0;
      const sample = { ...(await runWorker(framework, workload, rep)), load };
      samples.push(sample);
      const shown = sample.error ?? JSON.stringify(sample.metrics);
      console.log(
        `[${((Date.now() - started) / 1000).toFixed(0)} s] rep ${rep + 1} ${workload} ${framework}: ${shown}`,
      );
    }
  }
}

// ---- aggregation ----
function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

interface Stat {
  median: number;
  min: number;
  max: number;
  n: number;
}

function stat(framework: string, workload: string, metric: string): Stat | undefined {
  const values = samples
    .filter((s) => s.framework === framework && s.workload === workload && s.metrics?.[metric] !== undefined)
    .map((s) => s.metrics?.[metric] as number);
  if (values.length === 0) return undefined;
  return { median: median(values), min: Math.min(...values), max: Math.max(...values), n: values.length };
}

function errorOf(framework: string, workload: string): string | undefined {
  const failed = samples.find((s) => s.framework === framework && s.workload === workload && s.error);
  return failed?.error;
}

function format(value: number): string {
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString('en-US');
  if (Math.abs(value) >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

interface Row {
  label: string;
  workload: string;
  metric: string;
  lowerIsBetter: true;
}

const rows: Row[] = [
  {
    label: 'W1 µs per tool step (1 tool, 10 steps, 0 ms model), warm (after 1 s)',
    workload: 'W1',
    metric: 'usPerStep',
    lowerIsBetter: true,
  },
  { label: 'W1 CPU µs per tool step', workload: 'W1', metric: 'cpuUsPerStep', lowerIsBetter: true },
  {
    label: 'W1 µs per tool step after 50 warm-up runs (the next 100 runs, fresh process)',
    workload: 'W1',
    metric: 'usPerStepAfter50',
    lowerIsBetter: true,
  },
  {
    label: 'W1 CPU µs per tool step after 50 warm-up runs',
    workload: 'W1',
    metric: 'cpuUsPerStepAfter50',
    lowerIsBetter: true,
  },
  {
    label: 'W2 wall ms, 10,000 concurrent runs × 3 steps, 10 ms model (ideal 40)',
    workload: 'W2',
    metric: 'wallMs',
    lowerIsBetter: true,
  },
  { label: 'W2 CPU ms of the 10,000 runs', workload: 'W2', metric: 'cpuMs', lowerIsBetter: true },
  { label: 'W2 KB live heap per concurrent run', workload: 'W2', metric: 'kbPerRun', lowerIsBetter: true },
  {
    label: 'W2 KB left per finished run',
    workload: 'W2',
    metric: 'kbRetainedPerFinishedRun',
    lowerIsBetter: true,
  },
  { label: 'W3 µs per streamed text delta', workload: 'W3', metric: 'usPerDelta', lowerIsBetter: true },
  {
    label: 'W3 CPU µs per streamed text delta',
    workload: 'W3',
    metric: 'cpuUsPerDelta',
    lowerIsBetter: true,
  },
  {
    label: 'W4 wall ms, 3 tools × 100 ms in one turn (ideal 100)',
    workload: 'W4',
    metric: 'wallMs',
    lowerIsBetter: true,
  },
];

const tableFrameworks = frameworks.filter((f) => f !== 'floor');
const hasFloor = frameworks.includes('floor');
const header = [
  'workload',
  ...(hasFloor ? ['floor'] : []),
  ...tableFrameworks.map((f) => (hasFloor ? `${f} (× floor)` : f)),
  ...(compare ? [`${compare[0]} / ${compare[1]} (range within a repetition)`] : []),
];

/** The first compared framework's median over the second's, and the range of that ratio within each repetition. */
function comparison(workload: string, metric: string): string {
  if (!compare) return '';
  const [a, b] = compare as [string, string];
  const sa = stat(a, workload, metric);
  const sb = stat(b, workload, metric);
  if (!sa || !sb || sb.median === 0 || metric === 'kbRetainedPerFinishedRun') return '–';
  const paired: number[] = [];
  for (const sample of samples) {
    if (sample.framework !== a || sample.workload !== workload) continue;
    const other = samples.find((s) => s.framework === b && s.workload === workload && s.rep === sample.rep);
    const x = sample.metrics?.[metric];
    const y = other?.metrics?.[metric];
    if (x !== undefined && y !== undefined && y > 0) paired.push(x / y);
  }
  const range =
    paired.length > 1 ? ` (${Math.min(...paired).toFixed(2)} – ${Math.max(...paired).toFixed(2)})` : '';
  return `${(sa.median / sb.median).toFixed(2)}${range}`;
}
const lines: string[] = [];
lines.push(
  `| ${header.join(' | ')} |`,
  `|---|${header
    .slice(1)
    .map(() => '---:')
    .join('|')}|`,
);
for (const row of rows.filter((r) => workloads.includes(r.workload))) {
  const floorStat = hasFloor ? stat('floor', row.workload, row.metric) : undefined;
  const cells = [row.label];
  if (hasFloor)
    cells.push(floorStat ? format(floorStat.median) : errorOf('floor', row.workload) ? 'failed' : '–');
  for (const framework of tableFrameworks) {
    const s = stat(framework, row.workload, row.metric);
    if (!s) {
      cells.push(errorOf(framework, row.workload) ? 'failed (see notes)' : '–');
      continue;
    }
    const ratio =
      floorStat && floorStat.median > 0 && row.metric !== 'kbRetainedPerFinishedRun'
        ? ` (${format(s.median / floorStat.median)}×)`
        : '';
    cells.push(`${format(s.median)}${ratio}`);
  }
  if (compare) cells.push(comparison(row.workload, row.metric));
  lines.push(`| ${cells.join(' | ')} |`);
}

const ranges: string[] = [];
for (const row of rows.filter((r) => workloads.includes(r.workload))) {
  for (const framework of frameworks) {
    const s = stat(framework, row.workload, row.metric);
    if (s)
      ranges.push(
        `| ${row.workload} ${row.metric} | ${framework} | ${format(s.median)} | ${format(s.min)} – ${format(s.max)} | ${s.n} |`,
      );
  }
}

const w5Lines: string[] = [];
if (workloads.includes('W5')) {
  const w5 = samples.filter((s) => s.workload === 'W5');
  if (w5.length === 0 || w5.every((s) => s.error)) {
    w5Lines.push(`W5 (resource manager): not run${w5[0]?.error ? `: ${w5[0].error}` : ''}.`);
  } else {
    w5Lines.push(
      '| sessions open | reserve→grant µs (one call in flight) | reserve + settle µs per call | calls/s, all sessions calling at once | added µs per model call, end to end in runs | reps |',
      '|---:|---:|---:|---:|---:|---:|',
    );
    for (const sessions of [1, 100, 10_000]) {
      const get = (m: string) => stat('troupe', 'W5', `${m}@${sessions}`);
      const cells = ['grantUs', 'callUs', 'callsPerSecond', 'addedUsPerCall'].map((m) => {
        const s = get(m);
        return s ? `${format(s.median)} (${format(s.min)} – ${format(s.max)})` : '–';
      });
      w5Lines.push(
        `| ${sessions.toLocaleString('en-US')} | ${cells.join(' | ')} | ${get('callUs')?.n ?? 0} |`,
      );
    }
    const note = samples.find((s) => s.workload === 'W5' && s.metrics?.notImplemented);
    if (note) w5Lines.push('', 'W5: not yet (the resource manager is not in the tree).');
  }
}

const w1gLines: string[] = [];
if (workloads.includes('W1G')) {
  const w1g = samples.filter((s) => s.workload === 'W1G');
  if (w1g.length === 0 || w1g.every((s) => s.error)) {
    w1gLines.push(`W1G (guardrails): not run${w1g[0]?.error ? `: ${w1g[0].error}` : ''}.`);
  } else {
    w1gLines.push(
      '| one input + one output guardrail of | µs per tool step | added µs per tool step (vs none, same round) | CPU µs per tool step | added CPU µs per tool step | added CPU µs per run (10 steps) | µs per check, alone | reps |',
      '|---|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const variant of ['none', 'tokenLimit', 'blockedPatterns', 'llmJudge', 'all']) {
      const step = stat('troupe', 'W1G', `usPerStep@${variant}`);
      const added = stat('troupe', 'W1G', `addedUsPerStep@${variant}`);
      const range = (s: Stat | undefined) =>
        s ? `${format(s.median)} (${format(s.min)} – ${format(s.max)})` : '–';
      const alone = stat('troupe', 'W1G', `usPerCheck@${variant}`);
      const cpu = stat('troupe', 'W1G', `cpuUsPerStep@${variant}`);
      const addedCpu = stat('troupe', 'W1G', `addedCpuUsPerStep@${variant}`);
      w1gLines.push(
        `| ${variant === 'all' ? 'each kind (all three)' : variant} | ${range(step)} | ${variant === 'none' ? '–' : range(added)} | ${range(cpu)} | ${variant === 'none' ? '–' : range(addedCpu)} | ${addedCpu ? format(addedCpu.median * 10) : '–'} | ${alone ? range(alone) : '–'} | ${step?.n ?? 0} |`,
      );
    }
  }
}

const errors = samples
  .filter((s) => s.error)
  .map((s) => `- ${s.framework} ${s.workload} rep ${s.rep + 1}: ${s.error}`);

function version(pkg: string): string {
  try {
    const path =
      pkg === 'troupe' ? join(here, '..', 'package.json') : join(here, 'node_modules', pkg, 'package.json');
    return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version;
  } catch {
    return '?';
  }
}
const rootPkg = JSON.parse(readFileSync(join(here, '..', 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
};
const versions = [
  `troupe ${version('troupe')} (xstate ${rootPkg.dependencies.xstate})`,
  `ai ${version('ai')}`,
  `@openai/agents ${version('@openai/agents')}`,
  `langchain ${version('langchain')} (@langchain/core ${version('@langchain/core')}, @langchain/langgraph ${version('@langchain/langgraph')})`,
  `@mastra/core ${version('@mastra/core')}`,
  `zod ${version('zod')}`,
];

const loads = samples.flatMap((s) => (s.load === undefined ? [] : [s.load]));
const loadRange =
  loads.length > 0
    ? `, ${Math.min(...loads).toFixed(1)} – ${Math.max(...loads).toFixed(1)} at the samples' starts`
    : '';

const md = [
  `# Benchmark results (${quick ? 'quick' : 'full'} run)`,
  '',
  `${new Date().toISOString()} · ${cpus().length} × ${cpus()[0]?.model ?? '?'} · ${(totalmem() / 2 ** 30).toFixed(0)} GB · Node ${process.version} · ${process.platform}/${process.arch} · load average ${loadBefore.toFixed(1)} at start, ${(loadavg()[0] ?? 0).toFixed(1)} at end${loadRange} · ${((Date.now() - started) / 60_000).toFixed(1)} min`,
  '',
  `Versions: ${versions.join(', ')}.`,
  '',
  `Each cell is the median over repetitions (each a separate process, frameworks interleaved); ratios are to the floor of the same run. Command: \`node bench/run.ts ${args.join(' ')}\`.`,
  '',
  ...lines,
  '',
  ...(w5Lines.length > 0 ? ['## W5: resource manager in the path (Troupe)', '', ...w5Lines, ''] : []),
  ...(w1gLines.length > 0 ? ['## W1G: W1 with guardrails (Troupe)', '', ...w1gLines, ''] : []),
  '## Ranges (min – max over repetitions)',
  '',
  '| metric | framework | median | range | reps |',
  '|---|---|---:|---:|---:|',
  ...ranges,
  '',
  ...(errors.length > 0 ? ['## Failures', '', ...errors, ''] : []),
].join('\n');

// A quick run must not overwrite the full results that BENCHMARKS.md quotes.
const out = option('out') ?? join(here, 'results', quick ? 'quick.md' : 'latest.md');
writeFileSync(out, `${md}\n`);
writeFileSync(out.replace(/\.md$/, '.json'), `${JSON.stringify({ args, samples }, null, 1)}\n`);
console.log(`\n${md}\n\nwritten to ${out}`);
