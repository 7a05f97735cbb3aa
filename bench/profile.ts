/**
 * Counts what one Troupe run costs the statechart runtime: inspection events per tool step (events delivered,
 * microsteps, snapshots, actors created, actions). node bench/profile.ts [steps]
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
if (result.status !== 'completed' || result.toolCalls !== steps)
  throw new Error(`unexpected ${result.stopReason}`);
console.log(`one run, ${steps} tool steps (${steps + 1} model calls):`);
for (const [type, n] of Object.entries(counts))
  console.log(`  ${type}: ${n} (${(n / steps).toFixed(2)} per step)`);
console.log('events delivered, by type:');
for (const [type, n] of Object.entries(events)) console.log(`  ${type}: ${n}`);

// ---- The statechart alone: the real agent machine with an effects actor that answers at once (no model, no
// tools, no event bus). This is the floor any Troupe run pays per step for XState's interpreter.
const { agentMachine, defaultLimits } = await import('../dist/index.js');
const { createActor, fromCallback } = await import('xstate');
type Command = { type: string; history?: unknown[] };
const instant = fromCallback<Command, { sessionId: string }>(({ receive, sendBack }) => {
  receive((command) => {
    if (command.type === 'model.call') {
      const results = (command.history ?? []).filter((m) => (m as { role: string }).role === 'tool').length;
      const toolCalls = results < steps ? [{ id: `c${results}`, name: 'step', args: { step: results } }] : [];
      sendBack({
        type: 'model.response',
        response: {
          text: toolCalls.length ? '' : 'done',
          toolCalls,
          stopReason: toolCalls.length ? 'tool_use' : 'end_turn',
          usage: { input: 1, output: 1, cached: 0, reasoning: 0 },
        },
      } as never);
    } else {
      const calls = (command as unknown as { calls: { id: string; name: string }[] }).calls;
      sendBack({
        type: 'tools.done',
        results: calls.map((c) => ({
          callId: c.id,
          name: c.name,
          content: 'ok',
          isError: false,
          executed: true,
          degraded: false,
          attempts: 1,
        })),
      } as never);
    }
  });
});
const machine = agentMachine.provide({ actors: { effects: instant as never } });
const input = {
  sessionId: 's',
  agent: 'bench',
  limits: { ...defaultLimits, maxSteps: steps + 1, maxToolCallsPerTool: null },
  toolNames: ['step'],
  hasOutputSchema: false,
  history: [{ role: 'user' as const, content: 'go' }],
  baseLength: 0,
};
const once = () => {
  const actor = createActor(machine, { input }).start();
  const snapshot = actor.getSnapshot();
  if (snapshot.status !== 'done' || snapshot.context.toolCallsRun !== steps)
    throw new Error('machine run failed');
  return snapshot.context;
};
const keys = Object.keys(once()).length;
for (let i = 0; i < 2000; i++) once();
const runs = 5000;
const t0 = performance.now();
for (let i = 0; i < runs; i++) once();
const perStep = ((performance.now() - t0) * 1000) / (runs * steps);
console.log(
  `statechart alone (agent machine, instant effects, ${keys} context keys): ${perStep.toFixed(1)} µs per step`,
);
