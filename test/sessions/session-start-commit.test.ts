import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type CommitBatch,
  createAgentSystem,
  createMemoryStore,
  createSqliteStore,
  defineAgent,
  guardrail,
  type ModelProvider,
  type SessionStore,
  StoreIoError,
  tool,
} from 'troupe';
import { type ScriptedTurn, scriptedModel } from 'troupe/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

/** A store that records the batches it is asked to commit, and fails the first `failures` of them with `fail.error()` (thrown, or a rejection when `later`), writing nothing. */
function watchedStore(inner: SessionStore, fail?: { failures: number; error: () => Error; later?: boolean }) {
  const batches: CommitBatch[] = [];
  let failures = fail?.failures ?? 0;
  const store: SessionStore = Object.create(inner) as SessionStore;
  store.commit = (sessionId: string, batch: CommitBatch) => {
    batches.push(batch);
    if (fail === undefined || failures === 0) return inner.commit(sessionId, batch);
    failures--;
    const error = fail.error();
    if (fail.later) return Promise.reject(error);
    throw error;
  };
  return { store, batches };
}

/** A SQLite store whose first commit fails with a full disk: thrown, or with group commit a rejection (`later`). */
function diskFullOnce(file: string, later: boolean) {
  const inner = later ? createSqliteStore(file, { groupCommit: true }) : createSqliteStore(file);
  return watchedStore(inner, {
    failures: 1,
    error: () => new StoreIoError(file, 'disk full', { busy: false }),
    later,
  });
}

const echo = tool({
  name: 'echo',
  description: 'echoes',
  input: z.object({ n: z.number() }),
  execute: async ({ n }) => `echo ${n}`,
});

/** A scripted model that counts its calls. */
function countedModel(...more: ScriptedTurn[]): { model: ModelProvider; calls: () => number } {
  const scripted = scriptedModel([
    { toolCalls: [{ id: 'e1', name: 'echo', args: { n: 1 } }], stopReason: 'tool_use' },
    { text: 'done' },
    ...more,
  ]);
  let calls = 0;
  return {
    model: {
      provider: scripted.provider,
      model: scripted.model,
      generate: (request) => {
        calls++;
        return scripted.generate(request);
      },
    },
    calls: () => calls,
  };
}

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'troupe-start-commit-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

const stores: { name: string; open: (file: string) => SessionStore }[] = [
  { name: 'the memory store', open: () => createMemoryStore() },
  { name: 'SQLite, one transaction per commit', open: (file) => createSqliteStore(file) },
  { name: 'SQLite, group commit', open: (file) => createSqliteStore(file, { groupCommit: true }) },
  {
    name: "SQLite, group commit on the store's thread",
    open: (file) => createSqliteStore(file, { groupCommit: { writer: 'thread' } }),
  },
];

describe.each(stores)("a session's first commit ($name)", ({ open }) => {
  it("holds the turn's start and the agent's checkpoint before its first model call, in one commit", async () => {
    const { store, batches } = watchedStore(open(join(directory, 'one.db')));
    const { model } = countedModel();
    const agent = defineAgent({ name: 'worker', instructions: '', model, tools: [echo] });
    const system = createAgentSystem({ store });
    const session = system.spawn(agent, 'go', { sessionId: 'one' });
    expect((await session.result).text).toBe('done');
    await system.shutdown();
    const first = batches[0];
    expect(first?.events?.map((event) => event.type)).toContain('run_start');
    expect(first?.session?.status).toBe('running');
    expect(first?.session?.turn?.agent?.name).toBe('worker');
    expect(first?.session?.turn?.agent?.checkpoint.modelCalls).toBe(0);
    // No commit of the turn's start alone (its row without the agent's checkpoint) reached the store.
    expect(batches.filter((batch) => batch.session?.turn?.agent === null)).toEqual([]);
    // The start, the checkpoint before the tools, the one before the second model call, the end.
    expect(batches.length).toBe(4);
  });
});

describe('a store that fails the first commit of a session', () => {
  it('a synchronous one: spawn() throws its error, no model is called and nothing is left behind', async () => {
    const { store, batches } = diskFullOnce(join(directory, 'sync.db'), false);
    const { model, calls } = countedModel();
    const agent = defineAgent({ name: 'worker', instructions: '', model, tools: [echo] });
    const system = createAgentSystem({ store });
    const events: string[] = [];
    const stop = (async () => {
      for await (const event of system.events()) events.push(event.type);
    })();
    expect(() => system.spawn(agent, 'go', { sessionId: 'sync' })).toThrowError(StoreIoError);
    expect(batches).toHaveLength(1);
    // The id is free again, and the same session runs once the store takes its commits.
    const session = system.spawn(agent, 'go', { sessionId: 'sync' });
    expect((await session.result).text).toBe('done');
    expect(calls()).toBe(2);
    await system.shutdown();
    await stop;
    // Only the second session's events reached readers: nothing of the refused start was delivered.
    expect(events.filter((type) => type === 'run_start')).toHaveLength(1);
  });

  it('one that answers later: the error is an event and the turn ends with it before any model call', async () => {
    const file = join(directory, 'async.db');
    const { store } = diskFullOnce(file, true);
    const { model, calls } = countedModel();
    const agent = defineAgent({ name: 'worker', instructions: '', model, tools: [echo] });
    const system = createAgentSystem({ store });
    const session = system.spawn(agent, 'go', { sessionId: 'async' });
    const errors: string[] = [];
    const reading = (async () => {
      for await (const event of session.events({ after: -1 }))
        if (event.type === 'error') errors.push(String((event.data as { code?: string }).code));
    })();
    const result = await session.result;
    expect(result.status).not.toBe('completed');
    expect(result.error?.code).toBe('store_failed');
    expect(calls()).toBe(0);
    await system.shutdown();
    await reading;
    expect(errors).toContain('store_failed');
  });
});

/** An agent whose one input guardrail runs `look` and allows. */
function withInputCheck(model: ModelProvider, look: () => void | Promise<void>) {
  return defineAgent({
    name: 'worker',
    instructions: '',
    model,
    tools: [echo],
    guardrails: {
      input: [
        guardrail({
          name: 'look',
          check: async () => {
            await look();
            return { decision: 'allow' };
          },
        }),
      ],
    },
  });
}

describe('an input guardrail checked before the first model call', () => {
  it.each(stores)('starts once the turn it checks is committed ($name)', async ({ open }) => {
    const store = open(join(directory, 'guarded.db'));
    const seen: (string | undefined)[] = [];
    const { model } = countedModel();
    const agent = withInputCheck(model, async () => {
      const stored = await store.load('guarded');
      seen.push(stored?.session.status);
    });
    const system = createAgentSystem({ store });
    const session = system.spawn(agent, 'go', { sessionId: 'guarded' });
    expect((await session.result).text).toBe('done');
    await system.shutdown();
    expect(seen).toEqual(['running']);
  });
});

describe("an agent with an input guardrail, on a store that fails the turn's start", () => {
  const guarded = (model: ModelProvider, checks: { count: number }) =>
    withInputCheck(model, () => {
      checks.count++;
    });

  it('a synchronous one: spawn() throws, and neither the guardrail nor the model ran', async () => {
    const file = join(directory, 'guard-sync.db');
    const { store } = diskFullOnce(file, false);
    const { model, calls } = countedModel();
    const checks = { count: 0 };
    const system = createAgentSystem({ store });
    expect(() => system.spawn(guarded(model, checks), 'go', { sessionId: 'g' })).toThrowError(StoreIoError);
    await new Promise((resolve) => setImmediate(resolve));
    expect([checks.count, calls()]).toEqual([0, 0]);
    expect(store.load('g')).toBeUndefined();
    await system.shutdown();
  });

  it('one that answers later: the turn ends with store_failed, and neither the guardrail nor the model ran', async () => {
    const file = join(directory, 'guard-later.db');
    const { store } = diskFullOnce(file, true);
    const { model, calls } = countedModel();
    const checks = { count: 0 };
    const system = createAgentSystem({ store });
    const result = await system.spawn(guarded(model, checks), 'go', { sessionId: 'g' }).result;
    expect(result.error?.code).toBe('store_failed');
    expect([checks.count, calls()]).toEqual([0, 0]);
    await system.shutdown();
  });
});

describe('a turn sent to an idle session', () => {
  it.each(stores)("commits its start with the agent's first checkpoint ($name)", async ({ open }) => {
    const { store, batches } = watchedStore(open(join(directory, 'sent.db')));
    const scripted = scriptedModel([{ text: 'one' }, { text: 'two' }]);
    const agent = defineAgent({ name: 'worker', instructions: '', model: scripted });
    const system = createAgentSystem({ store });
    const session = system.spawn(agent, 'first', { sessionId: 'sent' });
    expect((await session.result).text).toBe('one');
    const before = batches.length;
    expect((await session.send('second')).text).toBe('two');
    await system.shutdown();
    const first = batches[before];
    expect(first?.events?.map((event) => event.type)).toContain('run_start');
    expect(first?.session?.turn?.input).toBe('second');
    expect(first?.session?.turn?.agent?.name).toBe('worker');
    // The start with the checkpoint, then the turn's end.
    expect(batches.length - before).toBe(2);
  });

  it('a store that fails its first commit: send() rejects with the error and the turn ends with it', async () => {
    for (const later of [false, true]) {
      const file = join(directory, `sent-fail-${later}.db`);
      const inner = createSqliteStore(file, { groupCommit: later });
      let failNext = false;
      const store: SessionStore = Object.create(inner) as SessionStore;
      store.commit = (sessionId: string, batch: CommitBatch) => {
        if (!failNext) return inner.commit(sessionId, batch);
        failNext = false;
        const error = new StoreIoError(file, 'disk full', { busy: false });
        if (later) return Promise.reject(error);
        throw error;
      };
      const { model, calls } = countedModel({ text: 'again' });
      const agent = defineAgent({ name: 'worker', instructions: '', model, tools: [echo] });
      const system = createAgentSystem({ store });
      const session = system.spawn(agent, 'first', { sessionId: 'sent' });
      expect((await session.result).text).toBe('done');
      failNext = true;
      await expect(session.send('second'), `later: ${later}`).rejects.toThrowError(StoreIoError);
      const ended = await session.result;
      expect(ended.error?.code, `later: ${later}`).toBe('store_failed');
      expect(calls(), `later: ${later}: no model call for the refused turn`).toBe(2);
      // The session takes the next message.
      expect((await session.send('third')).text, `later: ${later}`).toBe('again');
      await system.shutdown();
    }
  });
});
