import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createAgentSystem,
  createMemoryStore,
  createSqliteStore,
  defineAgent,
  type RunEvent,
  SessionClosedError,
  StoreCorruptError,
  tool,
  validateHistory,
} from 'troupe';
import { type ScriptedTurn, scriptedModel } from 'troupe/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { dyingStore } from '../support/dying-store.ts';
import { until } from '../support/until.ts';

async function collect(events: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
}

/** A tool that blocks until released, recording every start with its idempotency key. */
function gate() {
  const starts: string[] = [];
  let release: (() => void) | undefined;
  let blocked = true;
  const slow = tool({
    name: 'slow',
    description: 'takes a while',
    input: z.object({ n: z.number() }),
    execute: async ({ n }, ctx) => {
      starts.push(ctx.idempotencyKey);
      if (blocked) await new Promise<void>((resolve) => (release = resolve));
      return `slow ${n}`;
    },
  });
  return {
    slow,
    starts,
    open: () => {
      blocked = false;
      release?.();
    },
  };
}

const callSlow = (n: number): ScriptedTurn => ({
  toolCalls: [{ id: `s${n}`, name: 'slow', args: { n } }],
  stopReason: 'tool_use',
});

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'troupe-durable-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('durable sessions on SQLite', () => {
  it('shutdown() suspends a turn in flight; recover() resumes it in a new system without repeating finished calls', async () => {
    const path = join(directory, 'sessions.db');
    const { slow, starts } = gate();
    const firstModel = scriptedModel([callSlow(1)]);
    const agent = (model: ReturnType<typeof scriptedModel>, tools = [slow]) =>
      defineAgent({ name: 'worker', instructions: '', model, tools });
    const first = createAgentSystem({ store: createSqliteStore(path) });
    const session = first.spawn(agent(firstModel), 'work', { sessionId: 'w-1' });
    await until(() => starts.length === 1);
    await first.shutdown(); // the default mode: suspend
    expect(await session.result).toMatchObject({ status: 'stopped', stopReason: 'suspended' });
    expect(session.status).toBe('suspended');
    await expect(session.send('more')).rejects.toBeInstanceOf(SessionClosedError);

    const done = gate();
    done.open();
    const secondModel = scriptedModel([{ text: 'finished' }]);
    const second = createAgentSystem({
      store: createSqliteStore(path),
      agents: [agent(secondModel, [done.slow])],
    });
    expect(await second.interrupted()).toMatchObject([{ sessionId: 'w-1', status: 'suspended' }]);
    const { sessions } = await second.recover();
    const result = await (sessions[0] as (typeof sessions)[number]).result;
    expect(result).toMatchObject({ status: 'completed', text: 'finished', sessionId: 'w-1' });
    // The model call that asked for the tool was not made again; the interrupted tool ran again, same key.
    expect(secondModel.calls).toBe(1);
    expect(done.starts).toEqual(starts);
    expect(starts).toEqual(['w-1:1:1:s1']);
    validateHistory(result.history);
    expect(await second.interrupted()).toEqual([]);
    await second.shutdown();
  });

  it('an idle session restored with new input runs a new turn: the finished turn is not run again', async () => {
    const path = join(directory, 'idle.db');
    const model = scriptedModel([{ text: 'first answer' }]);
    const agent = (m: ReturnType<typeof scriptedModel>) =>
      defineAgent({ name: 'chat', instructions: '', model: m });
    const dying = dyingStore(createSqliteStore(path));
    const first = createAgentSystem({ store: dying.store });
    expect((await first.spawn(agent(model), 'hello', { sessionId: 'idle' }).result).text).toBe(
      'first answer',
    );
    // The process dies while the session is idle: nothing is interrupted.
    dying.kill();
    await first.shutdown();
    const second = createAgentSystem({ store: createSqliteStore(path) });
    expect(await second.interrupted()).toEqual([]);
    const next = scriptedModel([{ text: 'second answer' }]);
    const restored = await second.restore('idle', agent(next), { input: 'second question' });
    const result = await restored.result;
    expect(result.text).toBe('second answer');
    expect(next.calls).toBe(1);
    expect(result.history.map((message) => message.content)).toEqual([
      'hello',
      'first answer',
      'second question',
      'second answer',
    ]);
    await second.shutdown();
  });

  it('input given to restore() while a turn was interrupted is queued after it, never dropped', async () => {
    const store = createMemoryStore();
    const dying = dyingStore(store);
    const { slow, starts } = gate();
    const agent = (model: ReturnType<typeof scriptedModel>) =>
      defineAgent({ name: 'worker', instructions: '', model, tools: [slow] });
    const first = createAgentSystem({ store: dying.store });
    first.spawn(agent(scriptedModel([callSlow(1)])), 'first', { sessionId: 'q' });
    await until(() => starts.length === 1);
    dying.kill();
    await first.shutdown();
    const resumed = gate();
    resumed.open();
    const model = scriptedModel((request) => ({
      text: `answer to ${String(request.messages.at(-1)?.content)}`,
    }));
    const second = createAgentSystem({ store });
    const session = await second.restore(
      'q',
      defineAgent({ name: 'worker', instructions: '', model, tools: [resumed.slow] }),
      { input: 'second' },
    );
    expect((await session.result).text).toBe('answer to slow 1');
    await until(() => session.status === 'idle' && model.calls === 2);
    const history = (await store.load('q'))?.session.transcript ?? [];
    expect(history.filter((message) => message.role === 'user').map((message) => message.content)).toEqual([
      'first',
      'second',
    ]);
    await second.shutdown();
  });

  it('events({ after }) continues across a restore: seq goes on, a reconnecting reader loses and repeats nothing', async () => {
    const path = join(directory, 'events.db');
    const { slow, starts } = gate();
    const agent = (model: ReturnType<typeof scriptedModel>, tools = [slow]) =>
      defineAgent({ name: 'worker', instructions: '', model, tools });
    const first = createAgentSystem({ store: createSqliteStore(path) });
    const session = first.spawn(agent(scriptedModel([callSlow(1)])), 'go', { sessionId: 'ev' });
    const before: RunEvent[] = [];
    void (async () => {
      for await (const event of session.events({ after: -1 })) before.push(event);
    })();
    await until(() => starts.length === 1 && before.some((event) => event.type === 'tool_call'));
    await first.shutdown();
    const lastSeen = before.at(-1)?.seq ?? -1;
    expect(before.map((event) => event.seq)).toEqual(before.map((_, index) => index));

    const done = gate();
    done.open();
    const second = createAgentSystem({
      store: createSqliteStore(path),
      agents: [agent(scriptedModel([{ text: 'done' }]), [done.slow])],
    });
    const { sessions } = await second.recover();
    const resumed = sessions[0] as (typeof sessions)[number];
    const reader = collect(resumed.events({ after: lastSeen }));
    await resumed.result;
    await resumed.stop();
    const after = await reader;
    // Continuous numbering, no gap and no repeat, across the two processes.
    expect(after[0]?.seq).toBe(lastSeen + 1);
    expect(after.map((event) => event.seq)).toEqual(after.map((_, index) => lastSeen + 1 + index));
    expect(after[0]?.type).toBe('resumed');
    expect(after.some((event) => event.type === 'run_end')).toBe(true);
    // A reader from the start gets the whole log, read back from the store.
    const third = createAgentSystem({ store: createSqliteStore(path) });
    const all = await createSqliteStore(path).readEvents('ev', -1);
    expect(all.map((event) => event.seq)).toEqual(all.map((_, index) => index));
    expect(all.length).toBe(before.length + after.length);
    await second.shutdown();
    await third.shutdown();
  });

  it('a damaged store gives a typed error naming the session; other sessions still recover', async () => {
    const path = join(directory, 'damaged.db');
    const store = createSqliteStore(path);
    const dying = dyingStore(store);
    const { slow, starts } = gate();
    const agent = defineAgent({
      name: 'worker',
      instructions: '',
      model: scriptedModel(() => callSlow(1)),
      tools: [slow],
    });
    const first = createAgentSystem({ store: dying.store });
    first.spawn(agent, 'a', { sessionId: 'good' });
    first.spawn(agent, 'b', { sessionId: 'bad' });
    await until(() => starts.length === 2);
    dying.kill();
    await first.shutdown();
    store.close();
    // Damage one session's row on disk.
    const { DatabaseSync } = await import('node:sqlite');
    const raw = new DatabaseSync(path);
    raw.prepare("UPDATE sessions SET doc = '{\"transcript\": 42' WHERE id = 'bad'").run();
    raw.close();
    const done = gate();
    done.open();
    const second = createAgentSystem({
      store: createSqliteStore(path),
      agents: [
        defineAgent({
          name: 'worker',
          instructions: '',
          model: scriptedModel([{ text: 'ok' }]),
          tools: [done.slow],
        }),
      ],
    });
    const { sessions, failures } = await second.recover();
    expect(sessions.map((session) => session.sessionId)).toEqual(['good']);
    expect(failures).toHaveLength(1);
    expect(failures[0]?.sessionId).toBe('bad');
    expect(failures[0]?.error).toBeInstanceOf(StoreCorruptError);
    expect(failures[0]?.error.message).toContain('"bad"');
    expect((await (sessions[0] as (typeof sessions)[number]).result).text).toBe('ok');
    await second.shutdown();
    // A file that is not a database at all.
    const garbage = join(directory, 'garbage.db');
    await writeFile(garbage, 'this is not sqlite');
    expect(() => createSqliteStore(garbage)).toThrow(StoreCorruptError);
  });
});

describe('session lifecycle', () => {
  it('shutdown({ mode: "drain" }) lets running and queued turns finish, then closes; new messages are refused', async () => {
    const { slow, starts, open } = gate();
    const model = scriptedModel((request, index) =>
      index === 0 ? callSlow(1) : { text: `reply to ${String(request.messages.at(-1)?.content)}` },
    );
    const system = createAgentSystem();
    const session = system.spawn(defineAgent({ name: 'w', instructions: '', model, tools: [slow] }), 'go');
    const queued = session.send('after');
    await until(() => starts.length === 1);
    const draining = system.shutdown({ mode: 'drain' });
    await expect(session.send('too late')).rejects.toBeInstanceOf(SessionClosedError);
    open();
    await draining;
    expect((await session.result).text).toBe('reply to after');
    expect((await queued).text).toBe('reply to after');
    expect(session.status).toBe('closed');
  });

  it('a suspend ends a queued turn that never started with nothing said or spent', async () => {
    const { slow, starts } = gate();
    const system = createAgentSystem();
    const session = system.spawn(
      defineAgent({
        name: 'w',
        instructions: '',
        model: scriptedModel(() => ({ ...callSlow(1), usage: { input: 5, output: 5 } })),
        tools: [slow],
      }),
      'go',
    );
    const queued = session.send('later');
    await until(() => starts.length === 1);
    await system.shutdown();
    expect(await session.result).toMatchObject({ stopReason: 'suspended', usage: { input: 5, output: 5 } });
    expect(await queued).toMatchObject({
      stopReason: 'suspended',
      historyDelta: [],
      modelCalls: 0,
      usage: { input: 0, output: 0 },
    });
  });

  it('shutdown({ mode: "abort" }) ends turns in flight as aborted', async () => {
    const { slow, starts } = gate();
    const system = createAgentSystem();
    const session = system.spawn(
      defineAgent({ name: 'w', instructions: '', model: scriptedModel([callSlow(1)]), tools: [slow] }),
      'go',
    );
    await until(() => starts.length === 1);
    await system.shutdown({ mode: 'abort' });
    expect(await session.result).toMatchObject({ status: 'stopped', stopReason: 'aborted' });
    validateHistory((await session.result).history);
  });

  it("send() then events() in the same tick gives the new turn's events; a turn's own signal and timeout end only that turn", async () => {
    const model = scriptedModel((request) =>
      String(request.messages.at(-1)?.content) === 'slow'
        ? { text: 'late', delayMs: 10_000 }
        : { text: 'quick' },
    );
    const system = createAgentSystem();
    const session = system.spawn(defineAgent({ name: 'w', instructions: '', model }), 'hi');
    await session.result;
    const next = session.send('again');
    const events = await collect(session.events());
    expect(events[0]).toMatchObject({ type: 'run_start', data: { input: 'again' } });
    expect(events.at(-1)?.type).toBe('run_end');
    await next;

    const controller = new AbortController();
    const aborted = session.send('slow', { signal: controller.signal });
    await until(() => model.calls === 3);
    controller.abort();
    expect(await aborted).toMatchObject({ stopReason: 'aborted' });
    expect(await session.send('slow', { timeoutMs: 20 })).toMatchObject({ stopReason: 'timed_out' });
    expect((await session.send('hello')).text).toBe('quick');
    await system.shutdown();
  });

  it('tools see the session id as given and where their agent runs; keys are stable', async () => {
    const seen: { sessionId: string; route: string; key: string }[] = [];
    const probe = tool({
      name: 'probe',
      description: 'records its context',
      input: z.object({}),
      execute: (_args, ctx) => {
        seen.push({ sessionId: ctx.sessionId, route: ctx.route, key: ctx.idempotencyKey });
        return 'ok';
      },
    });
    const target = defineAgent({
      name: 'target',
      instructions: '',
      model: scriptedModel([
        { toolCalls: [{ id: 't1', name: 'probe', args: {} }], stopReason: 'tool_use' },
        { text: 'target done' },
      ]),
      tools: [probe],
    });
    const entry = defineAgent({
      name: 'entry',
      instructions: '',
      model: scriptedModel([
        { toolCalls: [{ id: 'e1', name: 'probe', args: {} }], stopReason: 'tool_use' },
        { toolCalls: [{ id: 'h1', name: 'transfer_to_target', args: {} }], stopReason: 'tool_use' },
      ]),
      tools: [probe],
      handoffs: [target],
    });
    const system = createAgentSystem();
    await system.spawn(entry, 'go', { sessionId: 'user-42' }).result;
    expect(seen).toEqual([
      { sessionId: 'user-42', route: 'entry', key: 'user-42:1:1:e1' },
      { sessionId: 'user-42', route: 'target', key: 'user-42:1:1:t1' },
    ]);
    await system.shutdown();
  });
});

describe('a turn with a budget of its own', () => {
  it('ends budget_exhausted when the turn has spent its budget; the next turn starts fresh', async () => {
    const model = scriptedModel(() => ({
      toolCalls: [{ name: 'echo', args: {} }],
      stopReason: 'tool_use',
      usage: { input: 60, output: 40 },
    }));
    const echo = tool({ name: 'echo', description: 'echo', input: z.object({}), execute: () => 'again' });
    const system = createAgentSystem();
    const session = system.spawn(
      defineAgent({
        name: 'w',
        instructions: '',
        model,
        tools: [echo],
        limits: { maxSteps: 6, maxDuplicateToolCalls: 1000, maxToolCallsPerTool: null },
      }),
      'first',
    );
    // Without a turn budget the first turn runs to its step limit.
    expect((await session.result).stopReason).toBe('max_steps');
    const before = model.calls;
    const limited = await session.send('second', { budget: { tokens: 250 } });
    expect(limited.stopReason).toBe('budget_exhausted');
    // Each call's output is capped at what the turn's budget leaves after its prompt's estimate (which is above
    // the 60 input tokens the model reports here), so the turn stays within its 250 tokens: 2 calls of 100.
    expect(model.calls - before).toBe(2);
    await expect(session.send('third', { budget: { token: 5 } as never })).rejects.toThrow(
      /did you mean "tokens"/,
    );
    await system.shutdown();
  });
});
