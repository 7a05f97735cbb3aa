/**
 * Experiment: the agent statechart alone on XState's interpreter and on the compiled one (src/engine), interleaved
 * in one process. The real agent machine with an effects actor that answers at once (no model, tools or event
 * bus), runs of 10 tool steps: what a tool step costs the statechart runtime, and nothing else.
 *
 *   npm run build && node bench/experiments/interpreter.ts
 *
 * Both machines must end every run in the same state with the same context; the script checks it.
 */
import { createActor, fromCallback } from 'xstate';
import { compileMachine } from '../../dist/engine/compiled-machine.js';
import { agentMachine, defaultLimits } from '../../dist/index.js';

const steps = 10;
type Command = { type: string; history?: { role: string }[]; calls?: { id: string; name: string }[] };
const usage = { input: 1, output: 1, cached: 0, reasoning: 0 };

const instant = fromCallback<Command, { sessionId: string }>(({ receive, sendBack }) => {
  receive((command) => {
    if (command.type === 'model.call') {
      const results = (command.history ?? []).filter((message) => message.role === 'tool').length;
      const toolCalls = results < steps ? [{ id: `c${results}`, name: 'step', args: { step: results } }] : [];
      const response = toolCalls.length
        ? { text: '', toolCalls, stopReason: 'tool_use', usage }
        : { text: 'done', toolCalls, stopReason: 'end_turn', usage };
      sendBack({ type: 'model.response', response } as never);
    } else {
      const results = (command.calls ?? []).map((call) => ({
        callId: call.id,
        name: call.name,
        content: 'ok',
        isError: false,
        executed: true,
        degraded: false,
        attempts: 1,
      }));
      sendBack({ type: 'tools.done', results } as never);
    }
  });
});

const stock = agentMachine.provide({ actors: { effects: instant as never } });
const compiled = compileMachine(stock);
const input = {
  sessionId: 's',
  agent: 'bench',
  limits: { ...defaultLimits, maxSteps: steps + 1, maxToolCallsPerTool: null },
  toolNames: ['step'],
  hasOutputSchema: false,
  history: [{ role: 'user' as const, content: 'go' }],
  baseLength: 0,
};

function once(machine: typeof stock) {
  const snapshot = createActor(machine, { input }).start().getSnapshot();
  if (snapshot.status !== 'done' || snapshot.context.toolCallsRun !== steps)
    throw new Error('the run did not finish');
  return snapshot;
}

const a = once(stock);
const b = once(compiled);
if (JSON.stringify([a.value, a.context, a.output]) !== JSON.stringify([b.value, b.context, b.output]))
  throw new Error('the two interpreters disagree');

const results: Record<string, number[]> = { stock: [], compiled: [] };
for (let round = 0; round < 6; round++) {
  for (const [name, machine] of [
    ['stock', stock],
    ['compiled', compiled],
  ] as const) {
    for (let i = 0; i < 500; i++) once(machine);
    const runs = 2000;
    const started = performance.now();
    for (let i = 0; i < runs; i++) once(machine);
    results[name]?.push(((performance.now() - started) * 1000) / (runs * steps));
  }
}
const median = (values: number[]) => [...values].sort((x, y) => x - y)[values.length >> 1] as number;
for (const [name, values] of Object.entries(results)) {
  const sorted = [...values].sort((x, y) => x - y);
  console.log(
    `${name.padEnd(8)} ${median(values).toFixed(1)} µs per tool step (range ${sorted[0]?.toFixed(1)}–${sorted.at(-1)?.toFixed(1)}, 6 interleaved rounds)`,
  );
}
