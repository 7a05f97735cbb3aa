import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { contextType, createAgentSystem, createSqliteStore, defineAgent, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * The run context is never stored: after a restart, every turn a recovered session runs, the interrupted one and the
 * turns queued behind it, runs with the context `recover()` gives (as README says), including a queued turn whose
 * `send()` gave one of its own.
 */

interface AppContext {
  user: string;
}

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('a queued turn after a restart', () => {
  it('runs with the context recover() gives', async () => {
    dir = await mkdtemp(join(tmpdir(), 'troupe-queued-'));
    const path = join(dir, 'sessions.db');
    const seen: string[] = [];
    let holding = true;
    let started: () => void = () => undefined;
    const toolStarted = new Promise<void>((resolve) => {
      started = resolve;
    });
    const who = tool({
      name: 'who',
      description: 'Records who it works for.',
      input: z.object({}),
      contextType: contextType<AppContext>(),
      execute: async (_args, ctx) => {
        seen.push(ctx.context.user);
        started();
        // Holds the first turn until the system shuts down; after the restart it answers at once.
        if (holding) await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
        return 'done';
      },
    });
    const agent = (model: ReturnType<typeof scriptedModel>) =>
      defineAgent({
        name: 'worker',
        contextType: contextType<AppContext>(),
        instructions: '',
        model,
        tools: [who],
      });
    const first = createAgentSystem({ store: createSqliteStore(path) });
    const session = first.spawn(
      agent(scriptedModel([{ toolCalls: [{ id: 'w1', name: 'who', args: {} }], stopReason: 'tool_use' }])),
      'first',
      { sessionId: 'q-1', context: { user: 'session' } },
    );
    await toolStarted;
    const queued = session.send('second', { context: { user: 'queued turn' } });
    // Queued behind the running turn, and stored, before the system goes down.
    await new Promise((resolve) => setImmediate(resolve));
    await first.shutdown();
    await Promise.allSettled([session.result, queued]);

    seen.length = 0;
    holding = false;
    const second = createAgentSystem({
      store: createSqliteStore(path),
      agents: [
        agent(
          scriptedModel(
            (request) =>
              request.messages.at(-1)?.role === 'tool'
                ? { text: 'answered' }
                : { toolCalls: [{ name: 'who', args: {} }], stopReason: 'tool_use' },
            { loop: true },
          ),
        ),
      ],
    });
    const { sessions } = await second.recover({ contextFor: () => ({ user: 'recovered' }) });
    const recovered = sessions[0];
    expect(recovered).toBeDefined();
    // The events of the session's last turn (the queued one) end with its run_end.
    const types: string[] = [];
    for await (const event of recovered?.events() ?? []) types.push(event.type);
    expect(types.at(-1)).toBe('run_end');
    // The interrupted call ran again, and the queued turn called the tool too.
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(new Set(seen)).toEqual(new Set(['recovered']));
    await second.shutdown();
  });
});
