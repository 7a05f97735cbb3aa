import type * as TroupeDist from '../dist/index.js';
import type { ResourceManager } from '../dist/index.js';
import { prepareTroupeWith, type TroupeModule, type TroupeRunner } from './frameworks/troupe-adapter.ts';
import type { Scenario } from './scenario.ts';

/**
 * W5: the resource manager at 1, 100 and 10,000 sessions.
 * - reserve→grant: S open runs; one call at a time (round robin over them): the latency of `reserve` until its
 *   grant and the cost of reserve + settle; then all S sessions calling back to back at once: calls per second.
 * - in the path: S concurrent Troupe runs (3 tool steps, 0 ms model) with and without a shared manager; the
 *   difference in wall time divided by the model calls is what the manager adds per call.
 *
 * The in-path figure is the difference of two walls of the same size, so it is measured in pairs: each pair runs
 * the same S runs without and with a manager back to back (which goes first alternates from pair to pair, so a
 * drift of the machine's load cancels), after a full GC before each leg when `--expose-gc` is on (so that one leg's
 * garbage is not collected in the next one's time). The figures are the median difference over the pairs and its
 * quartiles, in wall time and in the process's CPU time (user + system), per model call.
 *
 * `measureW5(quick, troupe)` takes the Troupe module to measure, so the same code measures another build
 * (bench/resources/w5-paired.ts alternates two builds in one process).
 */
const sizes = [1, 100, 10_000];

/** What W5 calls of a Troupe build. */
export type W5Module = TroupeModule & Pick<typeof TroupeDist, 'createResourceManager'>;

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

const median = (values: number[]) => quantile(values, 0.5);

function manager(troupe: W5Module): ResourceManager {
  // Limits high enough never to bind: this measures the bookkeeping every call pays, not waiting.
  return troupe.createResourceManager({
    budgets: { perTenant: { tokens: 1e15 } },
    quotas: [{ provider: 'bench', model: 'bench', requestsPerMinute: 1e12, tokensPerMinute: 1e15 }],
  });
}

interface GrantFigures {
  /** One call in flight, S sessions open: reserve until granted. */
  grantUs: number;
  /** The same, reserve + settle: what each model call pays the manager. */
  callUs: number;
  /** All S sessions calling at once, back to back. */
  callsPerSecond: number;
}

async function grants(troupe: W5Module, sessions: number, totalCalls: number): Promise<GrantFigures> {
  const rm = manager(troupe);
  for (let s = 0; s < sessions; s++) rm.openRun({ session: `s${s}`, provider: 'bench', model: 'bench' });
  const usage = { input: 100, output: 20, cached: 0, reasoning: 0 };
  const call = async (s: number): Promise<number> => {
    const started = performance.now();
    const outcome = await rm.reserve({
      session: `s${s}`,
      provider: 'bench',
      model: 'bench',
      estimate: { input: 100, output: 100 },
    });
    const granted = performance.now() - started;
    if (!outcome.granted) throw new Error(`W5: denied ${outcome.reason}: ${outcome.message}`);
    rm.settle(outcome.grant, usage);
    return granted;
  };
  // Sequential: one call at a time, round robin over the open sessions.
  const latencies: number[] = [];
  const sequential = Math.min(totalCalls, 20_000);
  let started = performance.now();
  for (let c = 0; c < sequential; c++) latencies.push(await call(c % sessions));
  const callUs = ((performance.now() - started) * 1000) / sequential;
  // Concurrent: every session calls back to back, all at once.
  const perSession = Math.max(1, Math.round(totalCalls / sessions));
  const session = async (s: number) => {
    for (let c = 0; c < perSession; c++) await call(s);
  };
  started = performance.now();
  const all: Promise<void>[] = [];
  for (let s = 0; s < sessions; s++) all.push(session(s));
  await Promise.all(all);
  const wall = performance.now() - started;
  for (let s = 0; s < sessions; s++) rm.closeRun(`s${s}`);
  rm.stop();
  return {
    grantUs: median(latencies) * 1000,
    callUs,
    callsPerSecond: (sessions * perSession) / (wall / 1000),
  };
}

const scenario: Scenario = { toolSteps: 3, toolsPerTurn: 1, modelDelayMs: 0, toolDelayMs: 0, deltas: 0 };
/** Model calls per run: one per tool step and the answer. */
export const callsPerRun = scenario.toolSteps + 1;

/** One leg of a pair: wall and CPU time, in ms. */
export interface Leg {
  wallMs: number;
  cpuMs: number;
}

/** The runner of the scenario's agent on a Troupe build. */
export function w5Runner(troupe: W5Module): TroupeRunner {
  return prepareTroupeWith(troupe, 'troupe', scenario);
}

const gc = (globalThis as { gc?: () => void }).gc;

/** `rounds` times S concurrent runs, each round with a fresh manager shared by its runs (or none). */
export async function inPathLeg(
  troupe: W5Module,
  runner: TroupeRunner,
  sessions: number,
  rounds: number,
  withManager: boolean,
): Promise<Leg> {
  gc?.();
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  for (let r = 0; r < rounds; r++) {
    const rm = withManager ? manager(troupe) : undefined;
    const all: Promise<unknown>[] = [];
    for (let s = 0; s < sessions; s++)
      all.push(rm ? runner.runWith(`task ${s}`, { resources: rm }) : runner.run(`task ${s}`));
    await Promise.all(all);
    rm?.stop();
  }
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  return { wallMs, cpuMs: (cpu.user + cpu.system) / 1000 };
}

/** Runs of S sessions per leg so that a leg makes about `calls` model calls. */
export function roundsFor(sessions: number, calls: number): number {
  return Math.max(1, Math.round(calls / (sessions * callsPerRun)));
}

/** Median and quartiles of per-pair differences, in µs per model call. */
export interface AddedPerCall {
  median: number;
  q1: number;
  q3: number;
}

export function addedPerCall(differencesMs: number[], calls: number): AddedPerCall {
  const perCall = differencesMs.map((d) => (d * 1000) / calls);
  return { median: median(perCall), q1: quantile(perCall, 0.25), q3: quantile(perCall, 0.75) };
}

export async function measureW5(quick: boolean, troupe: W5Module): Promise<Record<string, number>> {
  const metrics: Record<string, number> = {};
  const totalCalls = quick ? 10_000 : 40_000;
  await grants(troupe, 100, 5_000); // warm-up
  for (const sessions of sizes) {
    const g = await grants(troupe, sessions, totalCalls);
    metrics[`grantUs@${sessions}`] = g.grantUs;
    metrics[`callUs@${sessions}`] = g.callUs;
    metrics[`callsPerSecond@${sessions}`] = g.callsPerSecond;
  }
  const runner = w5Runner(troupe);
  await inPathLeg(troupe, runner, 100, 5, true);
  await inPathLeg(troupe, runner, 100, 5, false);
  const pairs = quick ? 5 : 9;
  for (const sessions of sizes) {
    const rounds = roundsFor(sessions, quick ? 8_000 : 40_000);
    const calls = sessions * rounds * callsPerRun;
    const wall: number[] = [];
    const cpu: number[] = [];
    for (let i = 0; i < pairs; i++) {
      // Which leg goes first alternates, so a trend in the machine's load does not favour either.
      const withFirst = i % 2 === 1;
      const first = await inPathLeg(troupe, runner, sessions, rounds, withFirst);
      const second = await inPathLeg(troupe, runner, sessions, rounds, !withFirst);
      const [withRm, without] = withFirst ? [first, second] : [second, first];
      wall.push(withRm.wallMs - without.wallMs);
      cpu.push(withRm.cpuMs - without.cpuMs);
    }
    const w = addedPerCall(wall, calls);
    const c = addedPerCall(cpu, calls);
    metrics[`addedUsPerCall@${sessions}`] = w.median;
    metrics[`addedUsPerCallQ1@${sessions}`] = w.q1;
    metrics[`addedUsPerCallQ3@${sessions}`] = w.q3;
    metrics[`addedCpuUsPerCall@${sessions}`] = c.median;
    metrics[`addedCpuUsPerCallQ1@${sessions}`] = c.q1;
    metrics[`addedCpuUsPerCallQ3@${sessions}`] = c.q3;
  }
  return metrics;
}
