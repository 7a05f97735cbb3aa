/**
 * Experiment: the agent statechart alone on XState's interpreter and on the compiled one (src/engine), interleaved
 * in one process. The real agent machine with an effects actor that answers at once (no model, tools or event
 * bus), runs of 10 tool steps: what a tool step costs the statechart runtime, and nothing else.
 *
 *   npm run build && npx tsx bench/experiments/interpreter.ts
 *
 * Both machines must end every run in the same state with the same context; the script checks it.
 */
import { compileMachine } from '../../src/engine/compiled-machine.ts';
import { statechartAlone } from '../statechart-alone.ts';

const steps = 10;
const { machine: stock, runOnce } = statechartAlone(steps);
const compiled = compileMachine(stock);
const once = runOnce;

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
