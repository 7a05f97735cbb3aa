import { defineAgent, ModelError, type ModelProvider, run, tool } from 'troupe';
import { withRetries } from 'troupe/providers';
import { breakerState, scriptedModel } from 'troupe/testing';
import { z } from 'zod';

// A provider that is down (with a real one: openai('gpt-5-mini', { breaker: {...}, fallback: ... })).
const down: ModelProvider = {
  provider: 'acme',
  model: 'big',
  generate: async () => {
    throw new ModelError('server', 'acme big: 503 Service Unavailable', { status: 503, retryable: true });
  },
};
const model = withRetries(down, {
  maxRetries: 0,
  breaker: { threshold: 2, halfOpenAfterMs: 30_000 }, // 2 failures in a row open it; a probe after 30 s
  fallback: scriptedModel([{ text: 'answered by the fallback' }], { loop: true }),
});
const agent = defineAgent({ name: 'support', instructions: 'Answer.', model });

for (const question of ['one', 'two', 'three']) {
  const result = await run(agent, question);
  console.log(question, '→', result.text);
}
console.log('breaker acme:big is', breakerState('model', 'acme:big')); // open: 'three' never reached acme

// A tool breaker: after 2 failures the tool is not run; the model reads an error result at once.
const inventory = tool({
  name: 'inventory',
  description: 'Stock levels',
  input: z.object({ sku: z.string() }),
  maxRetries: 0,
  breaker: { threshold: 2, halfOpenAfterMs: 10_000 },
  execute: () => {
    throw new Error('inventory service unreachable');
  },
});
const clerk = defineAgent({
  name: 'clerk',
  instructions: 'Check stock.',
  model: scriptedModel([{ toolCalls: [{ name: 'inventory', args: { sku: 'A1' } }] }, { text: 'sorry' }], {
    loop: true,
  }),
  tools: [inventory],
});
for (const attempt of [1, 2, 3]) {
  const result = await run(clerk, 'Is A1 in stock?');
  const answer = result.history.find((message) => message.role === 'tool');
  console.log(`call ${attempt}:`, answer?.content);
}
