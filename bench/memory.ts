/**
 * Memory of Troupe sessions: live heap per idle run (parked on a model call that has not answered), heap left per
 * finished run, and whether a finished run releases its actors (WeakRefs to every XState actor it created, then a
 * full GC). node --expose-gc bench/memory.ts [runs]
 */
import { z } from 'zod';
import { defineAgent, type ModelProvider, type RunOptions, run, tool } from '../dist/index.js';
import { activeRuntimeCount } from '../dist/testing/index.js';

const n = Number(process.argv[2] ?? 10_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
const collect = () => {
  gc();
  gc();
};
const heap = () => process.memoryUsage().heapUsed;

// A model that parks every call until `release()`: the runs sit idle, waiting, as sessions waiting on a provider do.
let parked: (() => void)[] = [];
const release = () => {
  const waiting = parked;
  parked = [];
  for (const wake of waiting) wake();
};
const model: ModelProvider = {
  provider: 'bench',
  model: 'bench',
  async generate(request) {
    await new Promise<void>((resolve) => parked.push(resolve));
    const results = request.messages.filter((m) => m.role === 'tool').length;
    const usage = { input: 10, output: 5, cached: 0, reasoning: 0 };
    return results < 3
      ? {
          text: '',
          toolCalls: [{ id: `c${results}`, name: 'step', args: { step: results } }],
          stopReason: 'tool_use',
          usage,
        }
      : { text: 'done', toolCalls: [], stopReason: 'end_turn', usage };
  },
};
const agent = defineAgent({
  name: 'bench',
  instructions: 'Use the tool, then answer.',
  model,
  tools: [
    tool({ name: 'step', description: 'd', input: z.object({ step: z.number() }), execute: () => 'ok' }),
  ],
  limits: { maxToolCallsPerTool: null },
});

const actors: WeakRef<object>[] = [];
const inspect: RunOptions['inspect'] = (event) => {
  if (event.type === '@xstate.actor') actors.push(new WeakRef(event.actorRef));
};

// Warm up (JIT, module state), then measure.
const warmUp: Promise<unknown>[] = [];
for (let i = 0; i < 200; i++) warmUp.push(run(agent, 'warm up'));
while (activeRuntimeCount() > 0) {
  await new Promise((r) => setTimeout(r, 1));
  release();
}
await Promise.all(warmUp);
actors.length = 0;
collect();
const baseline = heap();

const results: Promise<unknown>[] = [];
for (let i = 0; i < n; i++) results.push(run(agent, `task ${i}`, { inspect }));
await new Promise((r) => setTimeout(r, 10));
collect();
const idle = heap() - baseline;
const actorsPerRun = actors.length / n;
console.log(
  `idle runs (waiting on their first model call): ${n}, live heap ${(idle / n / 1024).toFixed(2)} KB per run, ${actorsPerRun} actors per run`,
);

while (activeRuntimeCount() > 0) {
  release();
  await new Promise((r) => setTimeout(r, 1));
}
const finished = await Promise.all(results);
if (finished.length !== n) throw new Error('runs lost');
results.length = 0;
finished.length = 0;
collect();
await new Promise((r) => setTimeout(r, 10));
collect();
const left = heap() - baseline;
const alive = actors.filter((ref) => ref.deref() !== undefined).length;
console.log(
  `finished: heap left ${(Math.max(0, left) / n / 1024).toFixed(3)} KB per run; actors still reachable ${alive} of ${actors.length}; runtimes registered ${activeRuntimeCount()}`,
);
process.stdout.write(
  `${JSON.stringify({ kbPerIdleRun: idle / n / 1024, actorsPerRun, kbLeftPerFinishedRun: Math.max(0, left) / n / 1024, actorsAlive: alive, actorsCreated: actors.length })}\n`,
);
