/**
 * Measures one (framework, workload) pair in a fresh process and prints one JSON line of metrics.
 *   node --expose-gc bench/worker.ts <framework> <W1|W2|W3|W4> [--quick] [--mem]
 * The orchestrator (run.ts) runs these interleaved; run one by hand to profile (add --cpu-prof).
 */
import { frameworkLoaders } from './frameworks/index.ts';
import { check, modelHooks, type Runner, type Scenario, toolCounter } from './scenario.ts';

const [frameworkName = '', workload = '', ...flags] = process.argv.slice(2);
const quick = flags.includes('--quick');
const withMemory = flags.includes('--mem');
const loader = frameworkLoaders[frameworkName];
if (!loader) throw new Error(`unknown framework ${frameworkName}`);
const framework = await loader();

const gc = (globalThis as { gc?: () => void }).gc;
function collect(): void {
  if (!gc) throw new Error('run the worker with --expose-gc');
  gc();
  gc();
}
function heapUsed(): number {
  return process.memoryUsage().heapUsed;
}

async function prepare(scenario: Scenario): Promise<Runner> {
  return framework.prepare(scenario);
}

function expectTools(before: number, want: number): void {
  const ran = toolCounter.executions - before;
  if (ran !== want) throw new Error(`${frameworkName}: ${ran} tool executions, want ${want}`);
}

/** CPU µs (user + system, all threads of this process) since `since`: steadier than wall time on a shared machine. */
function cpuUsSince(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return used.user + used.system;
}

/**
 * W1: µs per tool step, sequential runs of 10 tool steps with a 0 ms model (wall, and CPU), in two regimes: right
 * after 50 warm-up runs, and after 1 s of warm-up.
 */
async function w1(): Promise<Record<string, number>> {
  const scenario: Scenario = { toolSteps: 10, toolsPerTurn: 1, modelDelayMs: 0, toolDelayMs: 0, deltas: 0 };
  const runner = await prepare(scenario);
  const runFor = async (ms: number, minRuns: number) => {
    const started = performance.now();
    const cpu = process.cpuUsage();
    const before = toolCounter.executions;
    let runs = 0;
    while (runs < minRuns || performance.now() - started < ms) {
      check(scenario, await runner.run(`task ${runs}`), frameworkName);
      runs++;
    }
    const elapsed = performance.now() - started;
    const cpuUs = cpuUsSince(cpu);
    expectTools(before, runs * scenario.toolSteps);
    return { runs, elapsed, cpuUs };
  };
  // Early regime: a fresh process after 50 warm-up runs (what a short script or a first request sees: V8 has not
  // finished optimizing), then 100 runs timed. Warm regime: the same process after 1 s more of runs.
  await runFor(0, 50);
  const early = await runFor(0, 100);
  const earlySteps = early.runs * scenario.toolSteps;
  await runFor(quick ? 300 : 1000, 20);
  const { runs, elapsed, cpuUs } = await runFor(quick ? 700 : 2000, 20);
  const steps = runs * scenario.toolSteps;
  return {
    usPerStep: (elapsed * 1000) / steps,
    cpuUsPerStep: cpuUs / steps,
    usPerStepAfter50: (early.elapsed * 1000) / earlySteps,
    cpuUsPerStepAfter50: early.cpuUs / earlySteps,
    runs,
  };
}

/** Starts `n` runs at once and waits for all; checks every answer and the total tool executions. */
async function batch(
  runner: Runner,
  scenario: Scenario,
  n: number,
): Promise<{ wallMs: number; cpuMs: number }> {
  const before = toolCounter.executions;
  const started = performance.now();
  const cpu = process.cpuUsage();
  const all: Promise<unknown>[] = new Array(n);
  for (let i = 0; i < n; i++) {
    all[i] = runner.run(`task ${i}`).then((outcome) => check(scenario, outcome, frameworkName));
  }
  await Promise.all(all);
  const wallMs = performance.now() - started;
  const cpuMs = cpuUsSince(cpu) / 1000;
  expectTools(before, n * scenario.toolSteps);
  return { wallMs, cpuMs };
}

/** W2: 10,000 concurrent runs × 3 tool steps, 10 ms model: wall time, and (with --mem) live heap per run in flight. */
async function w2(): Promise<Record<string, number>> {
  const scenario: Scenario = { toolSteps: 3, toolsPerTurn: 1, modelDelayMs: 10, toolDelayMs: 0, deltas: 0 };
  const n = 10_000;
  const runner = await prepare(scenario);
  await batch(runner, scenario, 200);
  const metrics: Record<string, number> = { sessions: n };
  if (withMemory) {
    // Live heap with every run in flight: measured (after a full GC) when the model has been called n, 2n and 3n
    // times, i.e. when all n runs wait on their 1st, 2nd and 3rd model call. The largest of the three counts.
    collect();
    const baseline = heapUsed();
    let calls = 0;
    let peak = 0;
    modelHooks.onCall = () => {
      calls++;
      if (calls % n === 0 && calls <= 3 * n) {
        collect();
        peak = Math.max(peak, heapUsed() - baseline);
      }
    };
    await batch(runner, scenario, n);
    modelHooks.onCall = undefined;
    metrics.kbPerRun = peak / n / 1024;
    // Whatever a finished run leaves behind (it should be nothing).
    collect();
    metrics.kbRetainedPerFinishedRun = Math.max(0, heapUsed() - baseline) / n / 1024;
  }
  collect();
  const { wallMs, cpuMs } = await batch(runner, scenario, n);
  metrics.wallMs = wallMs;
  metrics.cpuMs = cpuMs;
  return metrics;
}

/** W3: µs per streamed text delta: one answer of 10,000 deltas, consumed as the framework's stream. */
async function w3(): Promise<Record<string, number>> {
  const scenario: Scenario = {
    toolSteps: 0,
    toolsPerTurn: 1,
    modelDelayMs: 0,
    toolDelayMs: 0,
    deltas: 10_000,
  };
  const runner = await prepare(scenario);
  for (let i = 0; i < (quick ? 3 : 5); i++) check(scenario, await runner.stream('go'), frameworkName);
  const times: number[] = [];
  const cpuTimes: number[] = [];
  for (let i = 0; i < (quick ? 7 : 21); i++) {
    const started = performance.now();
    const cpu = process.cpuUsage();
    const outcome = await runner.stream('go');
    times.push(performance.now() - started);
    cpuTimes.push(cpuUsSince(cpu));
    check(scenario, outcome, frameworkName);
  }
  times.sort((a, b) => a - b);
  cpuTimes.sort((a, b) => a - b);
  return {
    usPerDelta: ((times[times.length >> 1] as number) * 1000) / scenario.deltas,
    cpuUsPerDelta: (cpuTimes[cpuTimes.length >> 1] as number) / scenario.deltas,
  };
}

/** W4: one turn with 3 tool calls of 100 ms each: the wall time of the run (ideal: 100 ms if run in parallel). */
async function w4(): Promise<Record<string, number>> {
  const scenario: Scenario = { toolSteps: 1, toolsPerTurn: 3, modelDelayMs: 0, toolDelayMs: 100, deltas: 0 };
  const runner = await prepare(scenario);
  check(scenario, await runner.run('warm up'), frameworkName);
  const times: number[] = [];
  const before = toolCounter.executions;
  const runs = quick ? 3 : 5;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    check(scenario, await runner.run('go'), frameworkName);
    times.push(performance.now() - started);
  }
  expectTools(before, runs * 3);
  times.sort((a, b) => a - b);
  return { wallMs: times[times.length >> 1] as number };
}

const workloads: Record<string, () => Promise<Record<string, number>>> = { W1: w1, W2: w2, W3: w3, W4: w4 };
const measure = workloads[workload];
if (!measure) throw new Error(`unknown workload ${workload}`);
const metrics = await measure();
process.stdout.write(`${JSON.stringify({ framework: frameworkName, workload, metrics })}\n`);
// Some frameworks keep handles open (telemetry, caches): the measurement is done, leave.
process.exit(0);
