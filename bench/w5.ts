import { createResourceManager, type ResourceManager } from '../dist/index.js';
import { prepareTroupe } from './frameworks/troupe.ts';
import type { Scenario } from './scenario.ts';

/**
 * W5: the resource manager at 1, 100 and 10,000 sessions.
 * - reserve→grant: S open runs; one call at a time (round robin over them): the latency of `reserve` until its
 *   grant and the cost of reserve + settle; then all S sessions calling back to back at once: calls per second.
 * - in the path: S concurrent Troupe runs (3 tool steps, 0 ms model) with and without a shared manager; the
 *   difference in wall time divided by the model calls is what the manager adds per call.
 */
const sizes = [1, 100, 10_000];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1] as number;
}

function manager(): ResourceManager {
  // Limits high enough never to bind: this measures the bookkeeping every call pays, not waiting.
  return createResourceManager({
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

async function grants(sessions: number, totalCalls: number): Promise<GrantFigures> {
  const rm = manager();
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
const callsPerRun = scenario.toolSteps + 1;

async function inPath(sessions: number, rounds: number, withManager: boolean): Promise<number> {
  const runner = prepareTroupe(scenario);
  const started = performance.now();
  for (let r = 0; r < rounds; r++) {
    const rm = withManager ? manager() : undefined;
    const all: Promise<unknown>[] = [];
    for (let s = 0; s < sessions; s++)
      all.push(rm ? runner.runWith(`task ${s}`, { resources: rm }) : runner.run(`task ${s}`));
    await Promise.all(all);
    rm?.stop();
  }
  return performance.now() - started;
}

export async function measureW5(quick: boolean): Promise<Record<string, number>> {
  const metrics: Record<string, number> = {};
  const totalCalls = quick ? 10_000 : 40_000;
  await grants(100, 5_000); // warm-up
  for (const sessions of sizes) {
    const g = await grants(sessions, totalCalls);
    metrics[`grantUs@${sessions}`] = g.grantUs;
    metrics[`callUs@${sessions}`] = g.callUs;
    metrics[`callsPerSecond@${sessions}`] = g.callsPerSecond;
  }
  await inPath(100, 5, true);
  await inPath(100, 5, false);
  for (const sessions of sizes) {
    const rounds = Math.max(1, Math.round((quick ? 2_000 : 10_000) / sessions));
    // Alternate without / with three times; the median difference is what the manager adds (the machine's load
    // moves both, so this figure is noisier than callUs).
    const differences: number[] = [];
    for (let i = 0; i < 3; i++) {
      const without = await inPath(sessions, rounds, false);
      const withRm = await inPath(sessions, rounds, true);
      differences.push(withRm - without);
    }
    metrics[`addedUsPerCall@${sessions}`] = (median(differences) * 1000) / (sessions * rounds * callsPerRun);
  }
  return metrics;
}
