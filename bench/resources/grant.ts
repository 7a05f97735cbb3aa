/**
 * The resource manager handle on the hot path, on the built package (`npm run build` first; bench/w5.ts
 * measures it the same way inside the full benchmark): with S runs open and each holding one granted call, the
 * latency of `reserve` until its grant, reserve + settle per call, and the events per second the manager's actor
 * takes when all S runs call back to back; then in the path: S concurrent runs (3 tool steps and an answer,
 * instant model and tool) with and without a shared manager, and what the manager adds per model call.
 *
 *   npm run build && node bench/resources/grant.ts [--quick]
 */
import { z } from 'zod';
import { createResourceManager, defineAgent, type ResourceManager, run, tool } from '../../dist/index.js';
import { scriptedModel } from '../../dist/testing/index.js';

const quick = process.argv.includes('--quick');
const sizes = [1, 100, 10_000];
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] as number;

async function measure(sessions: number) {
  const rm = createResourceManager({
    budgets: { perTenant: { tokens: 1e15 } },
    quotas: [{ provider: 'bench', model: 'bench', requestsPerMinute: 1e12, tokensPerMinute: 1e15 }],
  });
  const held = [];
  for (let s = 0; s < sessions; s++) {
    rm.openRun({ session: `s${s}`, provider: 'bench', model: 'bench', budget: { tokens: 1e12 } });
    const outcome = await rm.reserve({
      session: `s${s}`,
      provider: 'bench',
      model: 'bench',
      estimate: { input: 1, output: 1 },
    });
    if (outcome.granted) held.push(outcome.grant);
  }
  const usage = { input: 100, output: 20, cached: 0, reasoning: 0 };
  const call = async (s: number) => {
    const started = performance.now();
    const outcome = await rm.reserve({
      session: `s${s}`,
      provider: 'bench',
      model: 'bench',
      estimate: { input: 100, output: 100 },
    });
    const grantedAfter = performance.now() - started;
    if (!outcome.granted) throw new Error(outcome.message);
    rm.settle(outcome.grant, usage);
    return grantedAfter;
  };
  const calls = quick ? 2_000 : 20_000;
  const latencies: number[] = [];
  for (let c = 0; c < 500; c++) await call(c % sessions);
  let started = performance.now();
  for (let c = 0; c < calls; c++) latencies.push(await call(c % sessions));
  const callUs = ((performance.now() - started) * 1000) / calls;
  const perSession = Math.max(1, Math.round(calls / sessions));
  started = performance.now();
  await Promise.all(
    Array.from({ length: sessions }, async (_, s) => {
      for (let c = 0; c < perSession; c++) await call(s);
    }),
  );
  const wallS = (performance.now() - started) / 1000;
  for (const grant of held) rm.release(grant);
  rm.stop();
  // Two actor events per call: reserve and settle.
  return { grantUs: median(latencies) * 1000, callUs, eventsPerSecond: (2 * sessions * perSession) / wallS };
}

const rows = [
  '| open runs | reserve→grant (median) | reserve + settle | manager events/s, all calling |',
  '|---|---|---|---|',
];
for (const size of sizes) {
  const m = await measure(size);
  rows.push(
    `| ${size.toLocaleString('en')} | ${m.grantUs.toFixed(1)} µs | ${m.callUs.toFixed(1)} µs | ${Math.round(m.eventsPerSecond).toLocaleString('en')} |`,
  );
}
process.stdout.write(
  `resource manager handle (Node ${process.version}, ${quick ? 'quick' : 'full'})\n${rows.join('\n')}\n`,
);

const step = tool({
  name: 'step',
  description: 'a step',
  input: z.object({ n: z.number() }),
  execute: ({ n }) => n,
});
const agent = defineAgent({
  name: 'bench',
  instructions: 'Work.',
  model: scriptedModel(
    // The model is shared by concurrent runs: each run's step comes from its own history.
    (request, index) =>
      request.messages.filter((message) => message.role === 'tool').length >= 3
        ? { text: 'done', usage: { input: 50, output: 5 } }
        : {
            toolCalls: [{ name: 'step', args: { n: index } }],
            stopReason: 'tool_use',
            usage: { input: 50, output: 5 },
          },
    { model: 'gpt-5-mini', keepRequests: 0 },
  ),
  tools: [step],
});

/** µs of wall time per model call for `sessions` concurrent runs; small batches are repeated to about 400 runs. */
async function runs(sessions: number, resources: ResourceManager | undefined): Promise<number> {
  const batches = Math.max(1, Math.ceil(400 / sessions));
  let calls = 0;
  const started = performance.now();
  for (let b = 0; b < batches; b++) {
    const results = await Promise.all(
      Array.from({ length: sessions }, () => run(agent, 'go', resources ? { resources } : {})),
    );
    if (results.some((result) => result.stopReason !== 'completed'))
      throw new Error('a bench run did not complete');
    calls += results.reduce((sum, result) => sum + result.modelCalls, 0);
  }
  return ((performance.now() - started) * 1000) / calls;
}

// Warm-up: JIT both paths before measuring.
for (let w = 0; w < 3; w++) {
  await runs(100, undefined);
  const rm = createResourceManager();
  await runs(100, rm);
  rm.stop();
}

const path = [
  '| concurrent runs | µs per model call, no manager | with a shared manager | added per call |',
  '|---|---|---|---|',
];
for (const size of sizes) {
  const repeats = quick ? 1 : 3;
  const without: number[] = [];
  const withManager: number[] = [];
  for (let r = 0; r < repeats; r++) {
    without.push(await runs(size, undefined));
    const rm = createResourceManager({ budgets: { perTenant: { tokens: 1e15 } } });
    withManager.push(await runs(size, rm));
    rm.stop();
  }
  const a = median(without);
  const b = median(withManager);
  path.push(
    `| ${size.toLocaleString('en')} | ${a.toFixed(1)} | ${b.toFixed(1)} | ${(b - a).toFixed(1)} µs |`,
  );
}
process.stdout.write(
  `in the path (3 tool steps + answer per run, medians of ${quick ? 1 : 3})\n${path.join('\n')}\n`,
);
