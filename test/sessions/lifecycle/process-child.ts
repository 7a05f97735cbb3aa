/**
 * The child process of process-lifetime.test.ts: a plain script, as a user writes one, that does one thing with a
 * system and prints what it saw. Whether the process stays alive (and how it exits) is what the test checks.
 *   node --import tsx test/sessions/lifecycle/process-child.ts <mode> [sqlite file]
 *
 * - `spawn-await`: spawns a session whose call waits for approval and awaits its result (the decision comes from
 *   another process sharing the store).
 * - `recover-await`: recovers the sessions of the store and awaits the first one's result (decided the same way).
 * - `shutdown`: spawns a session whose call waits for approval, then shuts the system down.
 * - `idle`: spawns a session, awaits its answer and does nothing more: nothing holds the process.
 * - `events-after`: spawns a session, awaits its answer, then reads `events({ after: -1, signal })` until the signal
 *   (a timeout) ends it.
 */

import { z } from 'zod';
import { createAgentSystem, createSqliteStore, defineAgent, tool } from '../../../src/index.ts';
import { scriptedModel } from '../../../src/testing/index.ts';

const [mode, file] = process.argv.slice(2);

const refund = tool({
  name: 'refund',
  description: 'refunds an order',
  input: z.object({ order: z.string() }),
  needsApproval: true,
  execute: ({ order }) => `refunded ${order}`,
});
// It asks for the refund, and answers once the refund's result is in (in this process or the one before).
const model = scriptedModel((request) =>
  request.messages.at(-1)?.role === 'tool'
    ? { text: 'refund done' }
    : { toolCalls: [{ id: 'call-1', name: 'refund', args: { order: 'A-1' } }], stopReason: 'tool_use' },
);
const clerk = defineAgent({ name: 'clerk', instructions: '', model, tools: [refund] });
const greeter = defineAgent({ name: 'greeter', instructions: '', model: scriptedModel([{ text: 'hello' }]) });

const system = createAgentSystem({
  agents: [clerk],
  ...(file ? { store: createSqliteStore(file) } : {}),
});

if (mode === 'spawn-await') {
  const session = system.spawn(clerk, 'refund A-1', { sessionId: 'desk-1' });
  const result = await session.result;
  console.log(`result ${result.status} ${result.text}`);
  await system.shutdown();
} else if (mode === 'recover-await') {
  const { sessions } = await system.recover();
  const result = await sessions[0]?.result;
  console.log(`result ${result?.status} ${result?.text}`);
  await system.shutdown();
} else if (mode === 'shutdown') {
  const session = system.spawn(clerk, 'refund A-1');
  for await (const event of session.events()) if (event.type === 'approval_requested') break;
  await system.shutdown();
  const result = await session.result;
  console.log(`result ${result.status} ${result.stopReason}`);
} else if (mode === 'idle') {
  const session = system.spawn(greeter, 'hi');
  const result = await session.result;
  console.log(`result ${result.status} ${result.text}`);
} else if (mode === 'events-after') {
  const session = system.spawn(greeter, 'hi');
  await session.result;
  const types: string[] = [];
  for await (const event of session.events({ after: -1, signal: AbortSignal.timeout(100) }))
    types.push(event.type);
  console.log(`read ${types[0]}..${types.at(-1)}`);
}
