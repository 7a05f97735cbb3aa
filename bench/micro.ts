/**
 * Micro-measurements of the pieces of one Troupe loop step, for attributing W1 (run: npx tsx bench/micro.ts: it measures internal modules from src/, which the bundled dist/ does not expose).
 * Numbers are µs per operation; they move with machine load, so compare runs made back to back.
 */
import { z } from 'zod';
import { systemClock, tool } from '../dist/index.js';
import { ToolRegistry } from '../dist/testing/index.js';
import { EventBus } from '../src/core/event-bus.ts';
import { normalizeResponse } from '../src/run/normalize-response.ts';
import { runToolBatch } from '../src/run/tool-runner.ts';

const stepTool = tool({
  name: 'step',
  description: 'd',
  input: z.object({ step: z.number(), k: z.number() }),
  execute: async () => 'ok',
});
const registry = new ToolRegistry([stepTool]);
const controller = new AbortController();
const bus = new EventBus('s', systemClock);
bus.subscribe(() => undefined);

async function time(label: string, n: number, body: (i: number) => unknown): Promise<void> {
  for (let i = 0; i < n / 5; i++) await body(i);
  const started = performance.now();
  for (let i = 0; i < n; i++) await body(i);
  console.log(`${label}: ${(((performance.now() - started) * 1000) / n).toFixed(2)} µs`);
}

await time('runToolBatch, one call, no timeout', 100_000, (i) =>
  runToolBatch({
    calls: [{ id: `c${i}`, name: 'step', args: { step: i, k: 0 } }],
    registry,
    disabled: [],
    concurrency: 8,
    timeoutMs: null,
    maxRetries: 2,
    sessionId: 's',
    route: 'a',
    turn: 0,
    callPath: '',
    agent: 'a',
    step: i,
    signal: controller.signal,
    clock: systemClock,
    onStart: () => undefined,
    onSettled: () => undefined,
    onRetry: () => undefined,
  }),
);
await time('await of a resolved promise (baseline)', 100_000, (i) => Promise.resolve(i));
await time('normalizeResponse, one tool call', 100_000, (i) =>
  normalizeResponse(
    {
      text: '',
      toolCalls: [{ id: 'x', name: 'step', args: { step: 1 } }],
      stopReason: 'tool_use',
      usage: { input: 1, output: 1, cached: 0, reasoning: 0 },
    },
    i,
  ),
);
await time('EventBus.emit, one listener', 100_000, () => bus.emit('a', 'delta', { content: 'x' }));
const schema = z.object({ step: z.number(), k: z.number() });
await time('zod safeParse of the tool arguments', 100_000, (i) => schema.safeParse({ step: i, k: 0 }));

// Whole runs with no tool step (one model call, answered at once): the fixed cost of a run.
const { defineAgent, run } = await import('../dist/index.js');
const answerAgent = defineAgent({
  name: 'bench',
  instructions: 'x',
  model: {
    provider: 'bench',
    model: 'bench',
    generate: async () => ({
      text: 'done',
      toolCalls: [],
      stopReason: 'end_turn',
      usage: { input: 1, output: 1, cached: 0, reasoning: 0 },
    }),
  },
});
await time('a whole run with one model call and no tools', 20_000, () => run(answerAgent, 'go'));
