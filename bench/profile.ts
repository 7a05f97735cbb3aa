/**
 * Counts what one Troupe run costs the statechart runtime: inspection events per tool step (events delivered,
 * microsteps, snapshots, actors created, actions). npx tsx bench/profile.ts [steps] (it reads the compiled interpreter from src/)
 * For CPU: node --cpu-prof --cpu-prof-dir=/tmp/prof bench/worker.ts troupe W1
 */
import { z } from 'zod';
import { defineAgent, type ModelProvider, run, tool } from '../dist/index.js';

const steps = Number(process.argv[2] ?? 10);
const model: ModelProvider = {
  provider: 'bench',
  model: 'bench',
  async generate(request) {
    const results = request.messages.filter((m) => m.role === 'tool').length;
    return results < steps
      ? {
          text: '',
          toolCalls: [{ id: `c${results}`, name: 'step', args: { step: results } }],
          stopReason: 'tool_use',
          usage: { input: 1, output: 1, cached: 0, reasoning: 0 },
        }
      : {
          text: 'done',
          toolCalls: [],
          stopReason: 'end_turn',
          usage: { input: 1, output: 1, cached: 0, reasoning: 0 },
        };
  },
};
const agent = defineAgent({
  name: 'bench',
  instructions: 'x',
  model,
  tools: [
    tool({ name: 'step', description: 'd', input: z.object({ step: z.number() }), execute: () => 'ok' }),
  ],
  limits: { maxSteps: steps + 1, maxToolCallsPerTool: null },
});

const counts: Record<string, number> = {};
const events: Record<string, number> = {};
const result = await run(agent, 'go', {
  inspect: (event) => {
    counts[event.type] = (counts[event.type] ?? 0) + 1;
    if (event.type === '@xstate.event') {
      const type = (event as { event: { type: string } }).event.type;
      events[type] = (events[type] ?? 0) + 1;
    }
  },
});
if (result.status !== 'completed' || result.toolCallCount !== steps)
  throw new Error(`unexpected ${result.stopReason}`);
console.log(`one run, ${steps} tool steps (${steps + 1} model calls):`);
for (const [type, n] of Object.entries(counts))
  console.log(`  ${type}: ${n} (${(n / steps).toFixed(2)} per step)`);
console.log('events delivered, by type:');
for (const [type, n] of Object.entries(events)) console.log(`  ${type}: ${n}`);

// ---- The statechart alone: the real agent machine with an effects actor that answers at once (no model, no
// tools, no event bus), on the compiled interpreter Troupe runs it on. This is the floor any Troupe run pays per
// step for its statechart (bench/experiments/interpreter.ts compares it with XState's own interpreter).
const { statechartAlone } = await import('./statechart-alone.ts');
const { compileMachine } = await import('../src/engine/compiled-machine.ts');
const alone = statechartAlone(steps);
const compiled = compileMachine(alone.machine);
const once = () => alone.runOnce(compiled).context;
const keys = Object.keys(once()).length;
for (let i = 0; i < 2000; i++) once();
const runs = 5000;
const t0 = performance.now();
for (let i = 0; i < runs; i++) once();
const perStep = ((performance.now() - t0) * 1000) / (runs * steps);
console.log(
  `statechart alone (agent machine, compiled, instant effects, ${keys} context keys): ${perStep.toFixed(1)} µs per step`,
);
