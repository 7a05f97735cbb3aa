import { contextType, createAgentSystem, defineAgent, run, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { z } from 'zod';

interface AppContext {
  userId: string;
  role: 'admin' | 'user';
  db: { orders(userId: string): string[] };
}

const orders = tool({
  name: 'orders',
  description: "Lists the user's orders.",
  input: z.object({}),
  contextType: contextType<AppContext>(),
  execute: (_args, ctx) => ctx.context.db.orders(ctx.context.userId),
});

const support = defineAgent({
  name: 'support',
  contextType: contextType<AppContext>(),
  instructions: ({ context }) => `You help user ${context.userId}.`, // may be async
  model: scriptedModel([{ toolCalls: [{ name: 'orders', args: {} }] }, { text: 'You have one order.' }]),
  tools: [orders],
});

const context: AppContext = { userId: 'u-1', role: 'user', db: { orders: () => ['#1'] } };
const result = await run(support, 'What did I order?', { context });
console.log(result.text); // You have one order.
// run(support, 'What did I order?')             // compile error: the agent needs a context
// run(support, 'hi', { context: { userId: 1 } }) // compile error: wrong context type

const system = createAgentSystem();
const session = system.spawn(support, 'Hello', { context });
await session.result;
await session.send('And now?', { context: { ...context, role: 'admin' } }); // replaces it from this turn on
await system.shutdown();
