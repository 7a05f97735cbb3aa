import { defineAgent, run, tool } from 'troupe';
import { expectRun, scriptedModel } from 'troupe/testing';
import { describe, it } from 'vitest';
import { z } from 'zod';

const lookupOrder = tool({
  name: 'lookup_order',
  description: 'Finds an order by its id',
  input: z.object({ orderId: z.string() }),
  execute: ({ orderId }) => ({ orderId, status: 'shipped' }),
});

const support = defineAgent({
  name: 'support',
  instructions: 'Answer questions about orders. Look the order up first.',
  model: scriptedModel([
    { toolCalls: [{ name: 'lookup_order', args: { orderId: 'A-42' } }], stopReason: 'tool_use' },
    { text: '{"answer": "Order A-42 has shipped."}', stopReason: 'end_turn' },
  ]),
  tools: [lookupOrder],
  output: z.object({ answer: z.string() }),
});

describe('support agent', () => {
  it('looks the order up, then answers', async () => {
    const result = await run(support, 'Where is my order A-42?');
    expectRun(result)
      .toEndWith('completed')
      .toHaveCalledTool('lookup_order', { orderId: 'A-42' })
      .toHaveValidHistory()
      .toUseAtMostModelCalls(2)
      .toHaveOutput({ answer: 'Order A-42 has shipped.' });
  });
});
