/**
 * The resource manager handle on the hot path, from the sources (bench/w5.ts measures the built package the same
 * way inside the full benchmark): with S runs open and each holding one granted call, the latency of `reserve`
 * until its grant, reserve + settle per call, and the events per second the manager's actor takes when all S runs
 * call back to back.
 *
 *   node bench/resources/grant.ts [--quick]
 */
import { createResourceManager } from '../../src/actors/resource-manager.ts';

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
