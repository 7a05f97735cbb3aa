import {
  agentTool,
  createAgentSystem,
  defineAgent,
  type ModelProvider,
  type RunEvent,
  type ToolContext,
  tool,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { z } from 'zod';

/**
 * A session's events and turns: decode retries, the events of the turn just sent, nested agents' route and depth,
 * per-turn abort and timeout, an abortable events() iteration, nothing streamed after a turn's end, and where a tool
 * runs (ctx.sessionId, ctx.route).
 */

async function collect(events: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const seen: RunEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

/** Waits (a few event-loop turns at most) until `predicate` holds. */
async function until(predicate: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !predicate(); i++) await new Promise((resolve) => setTimeout(resolve, 2));
  expect(predicate()).toBe(true);
}

const systems: { shutdown(): Promise<void> }[] = [];
afterEach(async () => {
  for (const system of systems.splice(0)) await system.shutdown();
});

function newSystem(options: Parameters<typeof createAgentSystem>[0] = {}) {
  const system = createAgentSystem(options);
  systems.push(system);
  return system;
}

/** A model that answers `text`, except for inputs containing "wait": those wait until their call is aborted. */
function waitingModel(): ModelProvider & { calls: number } {
  const model = {
    provider: 'custom',
    model: 'waiting',
    calls: 0,
    async generate(request: Parameters<ModelProvider['generate']>[0]) {
      model.calls += 1;
      const last = request.messages.at(-1);
      if (typeof last?.content === 'string' && last.content.includes('wait'))
        await new Promise<void>((resolve) => request.signal.addEventListener('abort', () => resolve()));
      return {
        text: `answer to ${String(last?.content)}`,
        toolCalls: [],
        stopReason: 'end_turn' as const,
        usage: { input: 1, output: 1, cached: 0, reasoning: 0 },
      };
    },
  };
  return model;
}

describe('decode_retry in a session', () => {
  it('a final answer that does not decode is a decode_retry event of the turn, with the count and the error', async () => {
    const agent = defineAgent({
      name: 'typed',
      instructions: 'x',
      model: scriptedModel([
        { text: 'not json' },
        { text: '{"n": 1}' },
        { text: 'nope' },
        { text: '{"n": 2}' },
      ]),
      output: z.object({ n: z.number() }),
    });
    const session = newSystem().spawn(agent, 'first', { sessionId: 'decode' });
    const first = await collect(session.events());
    expect((await session.result).output).toEqual({ n: 1 });
    expect(first.filter((e) => e.type === 'decode_retry').map((e) => e.data)).toEqual([
      { retryCount: 1, error: expect.stringMatching(/not valid JSON/) },
    ]);
    // The next turn counts its own retries from 1.
    const sent = session.send('second');
    const second = await collect(session.events());
    expect((await sent).output).toEqual({ n: 2 });
    expect(second.filter((e) => e.type === 'decode_retry').map((e) => e.data)).toEqual([
      { retryCount: 1, error: expect.stringMatching(/not valid JSON/) },
    ]);
  });
});

describe('session.events() right after send()', () => {
  it("yields the new turn's events when called in the same tick as send(), whether the session was idle or busy", async () => {
    const model = waitingModel();
    const agent = defineAgent({ name: 'echo', instructions: '', model });
    const session = newSystem().spawn(agent, 'one', { sessionId: 'same-tick' });
    await session.result;

    const sent = session.send('two');
    const events = await collect(session.events());
    expect(events[0]).toMatchObject({ type: 'run_start', data: { input: 'two' } });
    expect(events.at(-1)).toMatchObject({ type: 'run_end', data: { status: 'completed' } });
    expect((await sent).text).toBe('answer to two');

    // Busy: a turn is running; the message sent now is queued, and events() gives that queued turn's events.
    const running = session.send('three, wait');
    await until(() => model.calls === 3);
    const queued = session.send('four');
    const queuedEvents = collect(session.events());
    await session.stop();
    await running;
    await queued;
    const seen = await queuedEvents;
    for (const event of seen) expect(event.type === 'run_start' ? event.data.input : 'four').toBe('four');
  });
});

describe('nested agents in a session', () => {
  it('carry route caller>callId/name and depth 1, with their own run_start and run_end', async () => {
    const lookup = tool({
      name: 'lookup',
      description: 'looks up',
      input: z.object({}),
      execute: () => 'fact',
    });
    const researcher = defineAgent({
      name: 'researcher',
      description: 'finds facts',
      instructions: 'x',
      model: scriptedModel([
        { toolCalls: [{ id: 'r1', name: 'lookup', args: {} }], stopReason: 'tool_use' },
        { text: 'the fact' },
      ]),
      tools: [lookup],
    });
    const caller = defineAgent({
      name: 'caller',
      instructions: 'x',
      model: scriptedModel([
        {
          toolCalls: [{ id: 'call_1', name: 'researcher', args: { input: 'find' } }],
          stopReason: 'tool_use',
        },
        { text: 'done' },
      ]),
      tools: [agentTool(researcher)],
    });
    const session = newSystem().spawn(caller, 'go', { sessionId: 'nested-events' });
    const events = await collect(session.events());
    expect((await session.result).text).toBe('done');
    const nested = events.filter((e) => e.agent === 'researcher');
    for (const event of nested) expect(event).toMatchObject({ route: 'caller>call_1/researcher', depth: 1 });
    expect(nested[0]?.type).toBe('run_start');
    expect(nested.at(-1)).toMatchObject({ type: 'run_end', data: { status: 'completed' } });
    expect(nested.map((e) => e.type)).toEqual(expect.arrayContaining(['tool_call', 'tool_response']));
    // The turn's events go on past the nested run_end, to the caller's own.
    expect(events.at(-1)).toMatchObject({ type: 'run_end', agent: 'caller', depth: 0, route: 'caller' });
  });
});

describe('per-turn abort and timeout', () => {
  it('send(input, { signal }): aborting ends that turn aborted, and the session takes the next message', async () => {
    const model = waitingModel();
    const agent = defineAgent({ name: 'echo', instructions: '', model });
    const session = newSystem().spawn(agent, 'hello', { sessionId: 'turn-abort' });
    await session.result;
    const controller = new AbortController();
    const aborted = session.send('please wait', { signal: controller.signal });
    await until(() => model.calls === 2);
    controller.abort();
    expect(await aborted).toMatchObject({ status: 'stopped', stopReason: 'aborted' });
    expect(session.status).toBe('idle');
    const next = await session.send('next');
    expect(next).toMatchObject({ status: 'completed', text: 'answer to next' });
    // The aborted turn's user message stays in the history, answered by nothing it did not do.
    expect(next.history.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'user', 'assistant']);
  });

  it('send(input, { timeoutMs }): the turn ends timed_out, the next one runs', async () => {
    const clock = new SimulatedClock();
    const model = waitingModel();
    const agent = defineAgent({ name: 'echo', instructions: '', model });
    const session = newSystem({ clock }).spawn(agent, 'hello', { sessionId: 'turn-timeout' });
    await session.result;
    const slow = session.send('please wait', { timeoutMs: 500 });
    await until(() => model.calls === 2);
    clock.increment(499);
    await new Promise((resolve) => setImmediate(resolve));
    expect(session.status).toBe('running');
    clock.increment(1);
    expect(await slow).toMatchObject({ status: 'stopped', stopReason: 'timed_out' });
    // The timeout was this turn's only: a later turn is not cut at 500 ms.
    const later = session.send('wait again');
    await until(() => model.calls === 3);
    clock.increment(10_000);
    await new Promise((resolve) => setImmediate(resolve));
    expect(session.status).toBe('running');
    await session.stop();
    expect(await later).toMatchObject({ stopReason: 'aborted' });
  });

  it('events({ signal }) ends the iteration when aborted, while the session lives on', async () => {
    const model = waitingModel();
    const agent = defineAgent({ name: 'echo', instructions: '', model });
    const session = newSystem().spawn(agent, 'hello', { sessionId: 'events-abort' });
    await session.result;
    const controller = new AbortController();
    const seen: RunEvent[] = [];
    const reading = (async () => {
      for await (const event of session.events({ after: -1, signal: controller.signal })) seen.push(event);
    })();
    await until(() => seen.some((e) => e.type === 'run_end'));
    controller.abort();
    await reading;
    expect(session.status).toBe('idle');
    // And one on the latest turn (without `after`) stops too, in the middle of a turn.
    const turn = session.send('please wait');
    const second = new AbortController();
    const partial: RunEvent[] = [];
    const readingTurn = (async () => {
      for await (const event of session.events({ signal: second.signal })) partial.push(event);
    })();
    await until(() => partial.length > 0 && model.calls === 2);
    second.abort();
    await readingTurn;
    expect(partial.some((e) => e.type === 'run_end')).toBe(false);
    await session.stop();
    await turn;
  });

  it("no delta follows a turn's run_end in system.events(), even from a model that keeps streaming after a timeout", async () => {
    let finishedStreaming = false;
    let calls = 0;
    const model: ModelProvider = {
      provider: 'custom',
      model: 'chatty',
      async generate(request) {
        calls += 1;
        if (calls === 1) {
          request.onDelta?.({ type: 'text', text: 'first piece ' });
          await new Promise<void>((resolve) => request.signal.addEventListener('abort', () => resolve()));
          // A provider that does not stop streaming when its call is aborted.
          for (let i = 0; i < 10; i++) {
            request.onDelta?.({ type: 'text', text: `late piece ${i} ` });
            await new Promise((resolve) => setImmediate(resolve));
          }
          finishedStreaming = true;
        }
        return {
          text: `answer ${calls}`,
          toolCalls: [],
          stopReason: 'end_turn',
          usage: { input: 1, output: 1, cached: 0, reasoning: 0 },
        };
      },
    };
    const clock = new SimulatedClock();
    const system = newSystem({ clock });
    const all: RunEvent[] = [];
    const reading = (async () => {
      for await (const event of system.events()) all.push(event);
    })();
    const agent = defineAgent({ name: 'chatty', instructions: '', model, limits: { timeoutMs: 1_000 } });
    const session = system.spawn(agent, 'talk', { sessionId: 'chatty' });
    await until(() => all.some((e) => e.type === 'delta'));
    clock.increment(1_000);
    expect(await session.result).toMatchObject({ stopReason: 'timed_out' });
    await until(() => finishedStreaming);
    await system.shutdown();
    await reading;
    const end = all.findIndex((e) => e.type === 'run_end');
    expect(all.slice(0, end).filter((e) => e.type === 'delta')).toHaveLength(1);
    expect(all.slice(end + 1).filter((e) => e.type === 'delta')).toEqual([]);
  });

  it('a turn aborted by send(input, { signal }) streams nothing after its run_end, into the next turn', async () => {
    let finishedStreaming = false;
    let calls = 0;
    const model: ModelProvider = {
      provider: 'custom',
      model: 'chatty',
      async generate(request) {
        calls += 1;
        if (calls === 2) {
          request.onDelta?.({ type: 'text', text: 'first piece ' });
          await new Promise<void>((resolve) => request.signal.addEventListener('abort', () => resolve()));
          for (let i = 0; i < 10; i++) {
            request.onDelta?.({ type: 'text', text: `late piece ${i} ` });
            await new Promise((resolve) => setImmediate(resolve));
          }
          finishedStreaming = true;
        }
        return {
          text: `answer ${calls}`,
          toolCalls: [],
          stopReason: 'end_turn',
          usage: { input: 1, output: 1, cached: 0, reasoning: 0 },
        };
      },
    };
    const system = newSystem();
    const all: RunEvent[] = [];
    const reading = (async () => {
      for await (const event of system.events()) all.push(event);
    })();
    const session = system.spawn(defineAgent({ name: 'chatty', instructions: '', model }), 'one', {
      sessionId: 'chatty-turns',
    });
    await session.result;
    const controller = new AbortController();
    const aborted = session.send('two', { signal: controller.signal });
    await until(() => calls === 2 && all.some((e) => e.type === 'delta'));
    controller.abort();
    expect(await aborted).toMatchObject({ stopReason: 'aborted' });
    const third = session.send('three');
    await until(() => finishedStreaming);
    expect((await third).text).toBe('answer 3');
    await system.shutdown();
    await reading;
    const ends = all.flatMap((e, i) => (e.type === 'run_end' ? [i] : []));
    expect(ends).toHaveLength(3);
    expect(all.slice((ends[1] as number) + 1).filter((e) => e.type === 'delta')).toEqual([]);
  });
});

describe('where a tool runs', () => {
  it('ctx.sessionId is the id the user gave and ctx.route names the agent: entry, handoff target, nested agent', async () => {
    const seen: Pick<ToolContext, 'sessionId' | 'route' | 'agent' | 'turn'>[] = [];
    const where = tool({
      name: 'where',
      description: 'records its context',
      input: z.object({}),
      execute: (_args, ctx) => {
        seen.push({ sessionId: ctx.sessionId, route: ctx.route, agent: ctx.agent, turn: ctx.turn });
        return 'ok';
      },
    });
    const researcher = defineAgent({
      name: 'researcher',
      description: 'nested',
      instructions: 'x',
      model: scriptedModel(
        [{ toolCalls: [{ id: 'r1', name: 'where', args: {} }], stopReason: 'tool_use' }, { text: 'found' }],
        { loop: true },
      ),
      tools: [where],
    });
    const support = defineAgent({
      name: 'support',
      description: 'helps',
      instructions: 'x',
      model: scriptedModel(
        [
          {
            toolCalls: [
              { id: 's1', name: 'where', args: {} },
              { id: 's2', name: 'researcher', args: { input: 'look' } },
            ],
            stopReason: 'tool_use',
          },
          { text: 'helped' },
        ],
        { loop: true },
      ),
      tools: [where, agentTool(researcher)],
    });
    const triage = defineAgent({
      name: 'triage',
      instructions: 'x',
      model: scriptedModel([
        { toolCalls: [{ id: 't1', name: 'where', args: {} }], stopReason: 'tool_use' },
        { toolCalls: [{ id: 't2', name: 'transfer_to_support', args: {} }], stopReason: 'tool_use' },
      ]),
      tools: [where],
      handoffs: [support],
    });
    const session = newSystem().spawn(triage, 'help', { sessionId: 'user-42' });
    expect(await session.result).toMatchObject({ status: 'completed', agent: 'support', text: 'helped' });
    await session.send('more');
    expect(seen).toEqual([
      { sessionId: 'user-42', route: 'triage', agent: 'triage', turn: 1 },
      { sessionId: 'user-42', route: 'support', agent: 'support', turn: 1 },
      { sessionId: 'user-42', route: 'support>s2/researcher', agent: 'researcher', turn: 1 },
      { sessionId: 'user-42', route: 'support', agent: 'support', turn: 2 },
      // The second turn's calls reuse the first turn's ids: they are renamed (unique in the session's history).
      { sessionId: 'user-42', route: 'support>s2_2/researcher', agent: 'researcher', turn: 2 },
    ]);
  });
});
