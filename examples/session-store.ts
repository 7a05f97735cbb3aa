import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAgentSystem, createSqliteStore, defineAgent } from 'troupe';
import { scriptedModel } from 'troupe/testing';

const dir = mkdtempSync(join(tmpdir(), 'troupe-store-'));
const store = createSqliteStore(join(dir, 'sessions.db'));
const agent = defineAgent({
  name: 'support',
  instructions: 'Answer briefly.',
  model: scriptedModel([{ text: 'Hello!' }, { text: 'You are welcome.' }]),
});

const system = createAgentSystem({ store, agents: [agent] });
const session = system.spawn(agent, 'Hi', { sessionId: 'user-42' });
await session.result;
await session.send('Thanks');
await system.shutdown();

// What the store keeps, read without a running system: sessions, conversations and event logs.
console.log(await store.list()); // [{ sessionId: 'user-42', status: 'idle', turns: 2, pendingApprovals: 0, ... }]
const state = await store.load('user-42');
console.log(state?.session.transcript.map((message) => `${message.role}: ${message.content}`));
const events = await store.readEvents('user-42', -1); // every event with seq > -1, in order
console.log(events.length === (state?.lastSeq ?? 0) + 1, events.at(-1)?.type); // true run_end
await store.close();
rmSync(dir, { recursive: true });
