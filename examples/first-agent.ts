import { defineAgent, run, stream, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { z } from 'zod';

const add = tool({
  name: 'add',
  description: 'Adds two numbers',
  input: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => a + b, // may be async; a second argument has signal, sessionId, step, idempotencyKey
});

const agent = defineAgent({
  name: 'calculator',
  instructions: 'Use the tools, then answer.',
  // Plays a real model's turns, no API key needed; `loop` plays them again for every run. Or: openai('gpt-5-mini').
  model: scriptedModel(
    [
      { toolCalls: [{ name: 'add', args: { a: 2, b: 3 } }], stopReason: 'tool_use' },
      { text: '{"total": 5}', stopReason: 'end_turn' },
    ],
    { loop: true },
  ),
  tools: [add],
  output: z.object({ total: z.number() }), // optional: a typed final answer
  limits: { maxSteps: 10, toolTimeoutMs: 5_000 }, // every limit is optional
});

const result = await run(agent, 'What is 2 + 3?');
result.status; // 'completed' | 'stopped' | 'failed'
result.stopReason; // 'completed', 'max_steps', 'duplicate_tool_call', 'tool_call_limit', 'decode_failed',
// 'tool_failure_degraded', 'budget_exhausted', 'guardrail_blocked', 'handoff_limit', 'timed_out', 'aborted',
// 'suspended' or 'error' (the closed set: stopReasons)
result.output; // { total: 5 }, typed from the schema
result.text; // the last text the model produced (its refusal, when it refused)
result.history; // the whole conversation: pass it as `history` to the next run
result.error; // why it stopped or failed: { name, code, message }; RunStopped.is(result.error) for a limit
console.log(result.status, result.output); // completed { total: 5 }
// Also: result.historyDelta, result.steps, result.toolCallCount, result.usage, result.modelCalls

// Streaming: typed events { time, agent, sessionId, seq, type, data }
const s = stream(agent, 'What is 2 + 3?', { signal: AbortSignal.timeout(30_000) });
for await (const event of s) if (event.type === 'delta') process.stdout.write(event.data.content);
const streamed = await s.result;
console.log(`\n${streamed.status}`, streamed.output); // completed { total: 5 }
