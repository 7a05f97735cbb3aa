/**
 * W1's window after 50 warm-up runs, run by run: one process makes 50 warm-up runs and then times runs 51–150 one by
 * one, and prints as JSON the window's mean µs per tool step (what `paired-w1.ts` reports), the median run's, the
 * mean without the 5 slowest runs, and the collector's pauses that started inside the window (µs per step, the major
 * ones' ms each, the count of minor ones). It tells a window slowed throughout from one slowed by a few pauses.
 *
 * On Linux it also reads, around each run, the main thread's own CPU time and the time it waited for a CPU
 * (/proc/self/task/<pid>/schedstat), its page faults (/proc/self/task/<pid>/stat) and the process's CPU
 * (`process.cpuUsage`: the main thread plus V8's compiler and collector threads), all per tool step:
 * `mainCpuMedianRunUs` / `mainCpuMeanUs` (the step's code, wherever the wall clock went), `waitUs` (runnable but
 * not running: another process had the CPU), `otherThreadsCpuUs` (V8's background threads), `pageFaults` (the
 * main thread's, in the window: first touches of memory, mostly young-generation pages V8 has just grown) and the
 * median main-thread CPU of the window's runs that took no page fault. Last, after the window, it times a fixed
 * JavaScript loop that touches nothing of Troupe (`machineUs`, the median CPU µs of 30 repetitions): the machine's
 * speed at that moment, which tells a slow window that any program on the machine would have had from one that
 * Troupe's code caused. (Not before the warm-up: its garbage would move the young generation's growth.)
 *
 *   node bench/experiments/w1-window-runs.ts [dist folder=dist] [processes=1]
 *
 * With processes > 1 it runs that many fresh processes one after another (V8 flags given to this command reach
 * them), prints each one's line and then the processes whose machine loop ran at least 1.25 times slower than the
 * batch's fastest, with their windows against the others'.
 */
import { spawnSync } from 'node:child_process';
import { openSync, readSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

const [distArg, processesArg, mode] = process.argv.slice(2);
const dist = resolve(distArg ?? 'dist');
const processes = Number(processesArg ?? 1);
const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);
const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1] as number;

if (processes > 1 && mode !== '--child') {
  const lines: Record<string, number>[] = [];
  for (let i = 0; i < processes; i++) {
    const out = spawnSync(
      process.execPath,
      [...process.execArgv, import.meta.filename, dist, '1', '--child'],
      { encoding: 'utf8' },
    );
    if (out.status !== 0) throw new Error(out.stderr);
    const line = out.stdout.trim().split('\n').at(-1) as string;
    console.log(line);
    lines.push(JSON.parse(line));
  }
  const machine = lines.map((l) => l.machineUs as number);
  const fastest = Math.min(...machine);
  const slow = lines.filter((l) => (l.machineUs as number) >= 1.25 * fastest);
  const rest = lines.filter((l) => (l.machineUs as number) < 1.25 * fastest);
  const describe = (group: Record<string, number>[]) =>
    group.length === 0
      ? 'none'
      : `${group.length}: window mean ${median(group.map((l) => l.meanUs as number)).toFixed(1)}, median run ${median(
          group.map((l) => l.medianRunUs as number),
        ).toFixed(
          1,
        )}, main-thread CPU per step ${median(group.map((l) => l.mainCpuMedianRunUs as number)).toFixed(1)}`;
  console.log(`machine loop at least 1.25x the fastest (${fastest} µs): ${describe(slow)} (medians)`);
  console.log(`the others: ${describe(rest)}; load average ${loadavg()[0].toFixed(2)}`);
  process.exit(0);
}

/** A fixed loop of allocation, Map and string work, as JIT-compiled JavaScript runs it; nothing of Troupe. */
function machineLoop(n: number): number {
  const map = new Map<number, { a: number; b: string }>();
  let acc = 0;
  for (let i = 0; i < n; i++) {
    const o = { a: i, b: `x${i & 15}` };
    map.set(i & 255, o);
    acc += (map.get((i * 7) & 255)?.a ?? 0) + o.b.length;
  }
  return acc;
}
/** An async chain of object copies, as W1's steps make: promises, microtasks, spreads; nothing of Troupe. */
async function machineChain(n: number): Promise<number> {
  let state = { step: 0, log: [] as string[], total: 0 };
  const next = async (s: typeof state, i: number) => ({ ...s, step: s.step + 1, total: s.total + i });
  for (let i = 0; i < n; i++) state = await next(state, i);
  return state.total;
}
/** The median CPU µs of 30 repetitions of each machine loop (after 10 to compile them). */
async function machineSpeed(): Promise<[number, number]> {
  for (let i = 0; i < 10; i++) {
    machineLoop(20_000);
    await machineChain(2_000);
  }
  const loop: number[] = [];
  const chain: number[] = [];
  for (let i = 0; i < 30; i++) {
    let before = process.cpuUsage();
    machineLoop(20_000);
    let used = process.cpuUsage(before);
    loop.push(used.user + used.system);
    before = process.cpuUsage();
    await machineChain(2_000);
    used = process.cpuUsage(before);
    chain.push(used.user + used.system);
  }
  return [median(loop), median(chain)];
}

/** The main thread's counters, read into a buffer allocated once (null where /proc is missing). */
function threadCounters(): (() => [cpuNs: number, waitNs: number, faults: number]) | null {
  try {
    const task = `/proc/self/task/${process.pid}`;
    const sched = openSync(`${task}/schedstat`, 'r');
    const stat = openSync(`${task}/stat`, 'r');
    const buffer = Buffer.alloc(1024);
    return () => {
      let n = readSync(sched, buffer, 0, 1024, 0);
      const [cpuNs, waitNs] = buffer.toString('latin1', 0, n).split(' ').map(Number) as [number, number];
      n = readSync(stat, buffer, 0, 1024, 0);
      // Field 10 (minflt), counted from the state field that follows the command name's closing parenthesis.
      const fields = buffer.toString('latin1', 0, n).split(') ')[1]?.split(' ') ?? [];
      return [cpuNs, waitNs, Number(fields[7])];
    };
  } catch {
    return null;
  }
}

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
const counters = threadCounters();
const per: number[] = [];
const mainCpu: number[] = [];
const wait: number[] = [];
const faults: number[] = [];
const processCpu: number[] = [];
let thread = counters?.() ?? [0, 0, 0];
let cpu = process.cpuUsage();
const windowStart = performance.now();
for (let i = 0; i < 100; i++) {
  const t = performance.now();
  check(scenario, await runner.run(`task ${i}`), 'troupe');
  per.push(((performance.now() - t) * 1000) / 10);
  // Read after the run's clock stops: the reads cost the thread CPU of their own, counted in the next run's
  // CPU figures (not its wall time) and the same in every run.
  const now = counters?.() ?? [0, 0, 0];
  const cpuNow = process.cpuUsage();
  mainCpu.push((now[0] - thread[0]) / 1000 / 10);
  wait.push((now[1] - thread[1]) / 1000 / 10);
  faults.push(now[2] - thread[2]);
  processCpu.push((cpuNow.user - cpu.user + cpuNow.system - cpu.system) / 10);
  thread = now;
  cpu = cpuNow;
}
const windowEnd = performance.now();
const [machineUs, machineChainUs] = await machineSpeed();
// The observer is told of the window's last collections in a later task.
await new Promise((r) => setTimeout(r, 10));
const inWindow = gcs.filter((g) => g.start >= windowStart && g.start < windowEnd);
const sorted = [...per].sort((a, b) => a - b);
const faultFree = mainCpu.filter((_, i) => faults[i] === 0);
const round = (x: number) => +x.toFixed(1);
console.log(
  JSON.stringify({
    meanUs: round(sum(per) / 100),
    medianRunUs: round(sorted[50] as number),
    meanWithoutTop5: round(sum(sorted.slice(0, 95)) / 95),
    gcUsPerStep: round((sum(inWindow.map((g) => g.duration)) * 1000) / 1000),
    majorGcs: inWindow.filter((g) => g.major).map((g) => round(g.duration)),
    minorGcs: inWindow.filter((g) => !g.major).length,
    ...(counters && {
      mainCpuMedianRunUs: round(median(mainCpu)),
      mainCpuMeanUs: round(sum(mainCpu) / 100),
      waitUs: round(sum(wait) / 100),
      otherThreadsCpuUs: round((sum(processCpu) - sum(mainCpu)) / 100),
      pageFaults: sum(faults),
      faultFreeRuns: faultFree.length,
      faultFreeMainCpuMedianUs: faultFree.length > 0 ? round(median(faultFree)) : null,
    }),
    machineUs,
    machineChainUs,
  }),
);
process.exit(0);
