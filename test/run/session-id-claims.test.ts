import { ConfigError, createAgentSystem, defineAgent, run, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/** One session id, one run: two runs under the same id would share budgets, stored records and idempotency keys. */

function waitingAgent(release: Promise<void>) {
  const wait = tool({
    name: 'wait',
    description: 'Waits',
    input: z.object({}),
    execute: async () => release.then(() => 'ok'),
  });
  return defineAgent({
    name: 'w',
    instructions: '',
    model: scriptedModel([{ toolCalls: [{ name: 'wait', args: {} }] }, { text: 'done' }]),
    tools: [wait],
  });
}

describe('a running session id is claimed', () => {
  it('a second run() under a running id is a ConfigError; the first keeps its budget and completes', async () => {
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = run(waitingAgent(released), 'go', { sessionId: 'same', budget: { tokens: 1_000_000 } });
    await expect(
      run(waitingAgent(released), 'go', { sessionId: 'same', budget: { tokens: 1 } }),
    ).rejects.toThrow(ConfigError);
    release();
    expect((await first).status).toBe('completed');
    // Once it ended, the id can run again.
    expect((await run(waitingAgent(Promise.resolve()), 'go', { sessionId: 'same' })).status).toBe(
      'completed',
    );
  });

  it('a session and a run cannot share a running id either', async () => {
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const system = createAgentSystem();
    const session = system.spawn(waitingAgent(released), 'go', { sessionId: 'shared' });
    await expect(run(waitingAgent(released), 'go', { sessionId: 'shared' })).rejects.toThrow(
      /already running/,
    );
    release();
    await session.result;
    await system.shutdown();
  });

  it('parentScope names a scope of a resource manager: without one it is a ConfigError, not a silent no-op', async () => {
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel([{ text: 'hi' }]) });
    await expect(run(agent, 'go', { parentScope: 'somebody' })).rejects.toThrow(/parentScope/);
  });
});
