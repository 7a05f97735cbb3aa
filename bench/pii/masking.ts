/**
 * What personal-data masking costs, on the built package: the same runs with no masking, with event masking
 * (`pii: {}`) and with model masking too (`pii: { model: true }`), interleaved round by round, read with
 * `for await (const event of stream(...))`.
 *
 * Wall and CPU time (this process's user + system) are both reported: on a machine shared with other work the CPU
 * time is the steadier figure.
 *
 * - deltas: one answer streamed as D text deltas (prose of 3 to 12 words per delta; one delta in ten carries an
 *   email, a phone number or a card number, some split across two deltas). Figure: µs per delta (the run's wall
 *   over its deltas) and the ratio to no masking.
 * - events: S tool steps, each tool answering 400 characters (one email in it): every tool_call, tool_response,
 *   model_response... event is masked. Figure: µs per event and the ratio to no masking.
 * - pieces: the masker alone on a delta-sized text without personal data, with one, and on 400 characters.
 *
 *   npm run build && node bench/pii/masking.ts [deltas=4000] [steps=100] [rounds=9]
 */
import { z } from 'zod';
import { defineAgent, PiiMasker, type PiiOptions, piiKinds, stream, tool } from '../../dist/index.js';
import { scriptedModel } from '../../dist/testing/index.js';

const deltaCount = Number(process.argv[2] ?? 4000);
const steps = Number(process.argv[3] ?? 100);
const rounds = Number(process.argv[4] ?? 9);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] as number;

const words =
  'the order was shipped to our customer on time and the invoice follows in a separate message'.split(' ');
function prose(n: number, seed: number): string {
  let out = '';
  for (let i = 0; i < n; i++) out += `${words[(seed * 7 + i * 3) % words.length]} `;
  return out;
}
const sensitive = ['mail bob@example.com ', 'call +1 415 555 2671 ', 'card 4111 1111 1111 1111 '];
const pieces: string[] = [];
for (let i = 0; i < deltaCount; i++) {
  if (i % 10 === 5) {
    const value = sensitive[((i / 10) % 3) | 0] as string;
    // Every other one is split in the middle, across two deltas.
    if (i % 20 === 5) {
      pieces.push(value.slice(0, value.length >> 1));
      pieces.push(value.slice(value.length >> 1));
      i++;
    } else pieces.push(value);
  } else pieces.push(prose(3 + (i % 10), i));
}

const deltaAgent = defineAgent({
  name: 'writer',
  instructions: 'Write.',
  model: scriptedModel([{ deltas: pieces }], { loop: true }),
});

const toolText = `${prose(36, 1)} contact ann@example.org ${prose(30, 2)}`.slice(0, 400);
const lookup = tool({
  name: 'lookup',
  description: 'looks something up',
  input: z.object({ k: z.number() }),
  execute: () => toolText,
});
const toolAgent = defineAgent({
  name: 'worker',
  instructions: 'Work.',
  limits: { maxSteps: steps + 2, maxToolCallsPerTool: null },
  tools: [lookup],
  model: scriptedModel((_request, index) =>
    index < steps
      ? { toolCalls: [{ name: 'lookup', args: { k: index } }] }
      : { text: 'done, see ann@example.org' },
  ),
});

async function timed(agent: typeof deltaAgent, pii: PiiOptions | undefined) {
  const cpu = process.cpuUsage();
  const started = performance.now();
  let deltas = 0;
  let events = 0;
  const s = stream(agent, 'Go.', pii ? { pii } : {});
  for await (const event of s) {
    events++;
    if (event.type === 'delta') deltas++;
  }
  const result = await s.result;
  if (result.status !== 'completed') throw new Error(`run ${result.status}: ${result.stopReason}`);
  const used = process.cpuUsage(cpu);
  return { ms: performance.now() - started, cpuMs: (used.user + used.system) / 1000, deltas, events };
}

const subjects: { name: string; pii: PiiOptions | undefined }[] = [
  { name: 'no masking', pii: undefined },
  { name: 'events masked', pii: {} },
  { name: 'events + model masked', pii: { model: true } },
];

async function workload(name: string, agent: typeof deltaAgent, per: 'deltas' | 'events') {
  const samples = new Map<string, number[]>(subjects.map((subject) => [subject.name, []]));
  const cpuSamples = new Map<string, number[]>(subjects.map((subject) => [subject.name, []]));
  for (const subject of subjects) await timed(agent, subject.pii); // warm-up
  for (let round = 0; round < rounds; round++) {
    const order = subjects.map((_, i) => subjects[(i + round) % subjects.length] as (typeof subjects)[0]);
    for (const subject of order) {
      const { ms, cpuMs, deltas, events } = await timed(agent, subject.pii);
      const count = per === 'deltas' ? deltas : events;
      samples.get(subject.name)?.push((ms * 1000) / count);
      cpuSamples.get(subject.name)?.push((cpuMs * 1000) / count);
    }
  }
  for (const [what, table] of [
    ['wall', samples],
    ['CPU', cpuSamples],
  ] as const) {
    const base = median(table.get('no masking') as number[]);
    console.log(
      `\n${name}: ${what} µs per ${per === 'deltas' ? 'delta' : 'event'} (median of ${rounds} rounds)`,
    );
    for (const subject of subjects) {
      const values = table.get(subject.name) as number[];
      const m = median(values);
      console.log(
        `  ${subject.name.padEnd(24)} ${m.toFixed(2).padStart(8)} µs  [${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}]  ×${(m / base).toFixed(2)}`,
      );
    }
  }
}

function micro() {
  const masker = new PiiMasker({ kinds: new Set(piiKinds) });
  const cases = [
    ['delta without personal data', 'the invoice follows in '],
    ['delta with an email', 'mail bob@example.com '],
    ['400 characters, one email', toolText],
  ] as const;
  console.log('\nmasker.mask alone (µs per call)');
  for (const [label, text] of cases) {
    const n = 50_000;
    for (let i = 0; i < 2_000; i++) masker.mask(text);
    const values: number[] = [];
    for (let r = 0; r < 5; r++) {
      const started = performance.now();
      for (let i = 0; i < n; i++) masker.mask(text);
      values.push(((performance.now() - started) * 1000) / n);
    }
    console.log(`  ${label.padEnd(28)} ${median(values).toFixed(2).padStart(8)} µs`);
  }
}

console.log(
  `pii masking: ${deltaCount} deltas, ${steps} tool steps, ${rounds} rounds, node ${process.version}`,
);
await workload('deltas', deltaAgent, 'deltas');
await workload('events', toolAgent as unknown as typeof deltaAgent, 'events');
micro();
