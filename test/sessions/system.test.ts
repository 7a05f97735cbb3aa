import {
  agentTool,
  createAgentSystem,
  createMemoryStore,
  defineAgent,
  type Message,
  parallel,
  type RunEvent,
  run,
  SessionClosedError,
  stream,
  tool,
  validateHistory,
} from 'troupe';
import { activeRuntimeCount, scriptedModel } from 'troupe/testing';
import { describe, expect, it, vi } from 'vitest';
import { type InspectionEvent, SimulatedClock } from 'xstate';
import { z } from 'zod';
import { dyingStore } from '../support/dying-store.ts';
import { trackLiveTimers } from '../support/live-timers.ts';
import { until } from '../support/until.ts';

/**
 * Arguments carrying this key make the loop's call-signature hash throw inside a machine action: an exception from
 * our own code, which is what supervision is for. (Real arguments cannot do that: normalizeResponse turns anything
 * that is not plain JSON into a string before the machine sees it.)
 */
const crashMarker = '__crash_the_agent_actor';
vi.mock('../../src/core/json.ts', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/core/json.ts')>();
  return {
    ...actual,
    canonicalHash(value: unknown): string {
      if (typeof value === 'object' && value !== null && crashMarker in value)
        throw new RangeError('Maximum call stack size exceeded (simulated)');
      return actual.canonicalHash(value);
    },
  };
});

const handoffTo = (name: string) => ({
  toolCalls: [{ name: `transfer_to_${name}`, args: { reason: 'theirs' } }],
  stopReason: 'tool_use' as const,
});

async function collect(events: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const seen: RunEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

describe('createAgentSystem: sessions', () => {
  it('spawns addressable sessions, lists them, takes follow-ups on the same history, stops and shuts down', async () => {
    const model = scriptedModel([{ text: 'hello' }, { text: 'again' }, { text: 'other' }]);
    const agent = defineAgent({ name: 'greeter', instructions: 'greet', model });
    const system = createAgentSystem();
    const all: RunEvent[] = [];
    const allEvents = (async () => {
      for await (const event of system.events()) all.push(event);
    })();
    const a = system.spawn(agent, 'hi', { sessionId: 'a' });
    expect(system.get('a')).toBe(a);
    expect(() => system.spawn(agent, 'hi', { sessionId: 'a' })).toThrow(/already running/);
    const first = await a.result;
    expect(first).toMatchObject({ status: 'completed', text: 'hello', agent: 'greeter', sessionId: 'a' });
    expect(a.status).toBe('idle');
    const firstEvents = await collect(a.events());
    expect(firstEvents[0]?.type).toBe('run_start');
    expect(firstEvents.at(-1)?.type).toBe('run_end');

    const second = await a.send('and now?');
    expect(second.text).toBe('again');
    // The follow-up continued the same conversation.
    expect(second.history.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(second.historyDelta.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(model.requests[1]?.messages.filter((m) => m.role !== 'system')).toHaveLength(3);
    validateHistory(second.history);

    const b = system.spawn(agent, 'hi', { sessionId: 'b' });
    expect(
      system
        .list()
        .map((s) => s.sessionId)
        .sort(),
    ).toEqual(['a', 'b']);
    await b.result;
    await a.stop();
    expect(a.status).toBe('closed');
    await expect(a.send('more')).rejects.toBeInstanceOf(SessionClosedError);
    expect(system.get('a')).toBeUndefined();
    await system.shutdown();
    await allEvents;
    expect(system.list()).toEqual([]);
    expect(activeRuntimeCount()).toBe(0);
    expect(new Set(all.map((e) => e.sessionId))).toEqual(new Set(['a', 'b']));
    expect(all.every((e) => e.agent === 'greeter')).toBe(true);
  });

  it('stop() during a turn aborts the in-flight model call and ends the turn aborted', async () => {
    let aborted = false;
    const model = scriptedModel(async (request) => {
      await new Promise<void>((resolve) => request.signal.addEventListener('abort', () => resolve()));
      aborted = true;
      return { text: 'late' };
    });
    const system = createAgentSystem();
    const session = system.spawn(defineAgent({ name: 'slow', instructions: '', model }), 'go');
    await until(() => model.calls === 1);
    await session.stop('enough');
    const result = await session.result;
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'aborted' });
    expect(aborted).toBe(true);
    await system.shutdown();
  });

  it('shutdown leaves no timer behind (agent timeouts, back-off, sub-agent timeouts on the real clock)', async () => {
    // Only this test's timers: a count of the process's would move when an earlier test's timer fires meanwhile.
    const timers = trackLiveTimers();
    try {
      const slow = scriptedModel(() => ({ delayMs: 60_000, text: 'late' }));
      const sub = defineAgent({
        name: 'sub',
        instructions: '',
        description: 'slow',
        model: slow,
        limits: { timeoutMs: 60_000 },
      });
      const caller = defineAgent({
        name: 'caller',
        instructions: '',
        model: scriptedModel([
          { toolCalls: [{ name: 'sub', args: { input: 'x' } }], stopReason: 'tool_use' },
        ]),
        tools: [agentTool(sub)],
        limits: { timeoutMs: 60_000 },
      });
      const crashing = tool({
        name: 'crash',
        description: 'x',
        input: z.object({}),
        fatal: true,
        execute: () => {
          throw new Error('x');
        },
      });
      const backingOff = defineAgent({
        name: 'b',
        instructions: '',
        model: scriptedModel([{ toolCalls: [{ name: 'crash', args: {} }], stopReason: 'tool_use' }]),
        tools: [crashing],
      });
      const system = createAgentSystem({ supervision: { backoffMs: 60_000 } });
      system.spawn(caller, 'go');
      const restarting = system.spawn(backingOff, 'go');
      const restartSeen: RunEvent[] = [];
      void (async () => {
        for await (const event of restarting.events()) restartSeen.push(event);
      })();
      await until(() => slow.calls === 1 && restartSeen.some((e) => e.type === 'supervisor'));
      expect(timers.pending).toBeGreaterThan(0);
      await system.shutdown();
      expect(timers.pending).toBe(0);
    } finally {
      timers.restore();
    }
  });

  it('queues a follow-up sent while a turn runs; refuses bad input and work after shutdown', async () => {
    const model = scriptedModel([{ text: 'one', delayMs: 5 }, { text: 'two' }]);
    const system = createAgentSystem();
    const session = system.spawn(defineAgent({ name: 'q', instructions: '', model }), 'first');
    const second = session.send('second'); // sent while the first turn is still running
    expect((await session.result).text).toBe('one');
    expect((await second).text).toBe('two');
    await expect(session.send(42 as unknown as string)).rejects.toThrow(/input must be a string/);
    await expect(
      system.restore('nobody', defineAgent({ name: 'q', instructions: '', model })),
    ).rejects.toThrow(/holds nothing/);
    await system.shutdown();
    expect(() => system.spawn(defineAgent({ name: 'q', instructions: '', model }), 'late')).toThrow(
      /shutting down/,
    );
  });

  it('stream() of an agent with handoffs streams the whole conversation, every agent attributed', async () => {
    const b = defineAgent({
      name: 'b',
      instructions: '',
      model: scriptedModel([{ text: 'from b', deltas: ['from ', 'b'] }]),
    });
    const a = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([handoffTo('b')]),
      handoffs: [b],
    });
    const s = stream(a, 'go');
    const events = await collect(s);
    expect(
      events
        .filter((e) => e.type === 'delta')
        .map((e) => `${e.agent}:${e.type === 'delta' ? e.data.content : ''}`),
    ).toEqual(['b:from ', 'b:b']);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    expect((await s.result).agent).toBe('b');
  });

  it("the caller's AbortSignal stops the session", async () => {
    const model = scriptedModel([{ delayMs: 1e9 }]);
    const controller = new AbortController();
    const system = createAgentSystem();
    const session = system.spawn(defineAgent({ name: 'slow', instructions: '', model }), 'go', {
      signal: controller.signal,
    });
    controller.abort();
    expect((await session.result).stopReason).toBe('aborted');
    await session.closed;
    await system.shutdown();
  });
});

describe('handoffs', () => {
  it('moves the conversation to the target: events attributed to it, result says who answered and the path', async () => {
    const billingModel = scriptedModel([{ text: 'refund issued' }]);
    const billing = defineAgent({
      name: 'billing',
      instructions: 'billing',
      description: 'Refunds',
      model: billingModel,
    });
    const support = defineAgent({ name: 'support', instructions: 'support', model: scriptedModel([]) });
    const triageModel = scriptedModel([handoffTo('billing')]);
    const triage = defineAgent({
      name: 'triage',
      instructions: 'route',
      model: triageModel,
      handoffs: [billing, support],
    });
    const system = createAgentSystem();
    const session = system.spawn(triage, 'refund please');
    const events = await collect(session.events());
    const result = await session.result;
    expect(result).toMatchObject({ status: 'completed', agent: 'billing', text: 'refund issued' });
    expect(result.path).toEqual(['triage', 'billing']);
    expect(triageModel.requests[0]?.tools.map((t) => t.name)).toEqual([
      'transfer_to_billing',
      'transfer_to_support',
    ]);
    const handoff = events.find((e) => e.type === 'handoff');
    expect(handoff).toMatchObject({
      agent: 'triage',
      data: { from: 'triage', to: 'billing', outcome: 'accepted' },
    });
    expect(events.filter((e) => e.type === 'model_response').map((e) => e.agent)).toEqual([
      'triage',
      'billing',
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'run_end', agent: 'billing' });
    // The target saw the conversation with the handoff answered.
    const seen = billingModel.requests[0]?.messages ?? [];
    expect(seen.at(-1)).toMatchObject({ role: 'tool', content: 'Transferred to billing.' });
    validateHistory(result.history);
    await system.shutdown();
  });

  it('applies the handoff input filter to what the target sees', async () => {
    const targetModel = scriptedModel([{ text: 'ok' }]);
    const target = defineAgent({ name: 'target', instructions: '', model: targetModel });
    const source = defineAgent({
      name: 'source',
      instructions: '',
      model: scriptedModel([handoffTo('target')]),
      handoffs: [target],
      handoffInputFilter: ({ history }) => history.filter((m) => m.role === 'user'),
    });
    const result = await run(source, 'only this');
    expect(targetModel.requests[0]?.messages).toEqual([{ role: 'user', content: 'only this' }]);
    expect(result.agent).toBe('target');
    expect(activeRuntimeCount()).toBe(0);
  });

  it('refuses a handoff back to an agent on the path beyond maxHandoffRevisits, then ends with handoff_limit on a repeat', async () => {
    const aModel = scriptedModel([handoffTo('b')]);
    const bModel = scriptedModel([handoffTo('a'), handoffTo('a')]);
    const b = defineAgent({ name: 'b', instructions: '', model: bModel, handoffs: ['a'] });
    const a = defineAgent({
      name: 'a',
      instructions: '',
      model: aModel,
      handoffs: [b],
      maxHandoffRevisits: 0,
    });
    const system = createAgentSystem({ agents: [a, b] });
    const session = system.spawn(a, 'go');
    const events = await collect(session.events());
    const result = await session.result;
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'handoff_limit', agent: 'b' });
    expect(
      events.filter((e) => e.type === 'handoff').map((e) => (e.type === 'handoff' ? e.data.outcome : '')),
    ).toEqual(['accepted', 'refused', 'limit']);
    // The model was told why, as an error tool result, before it tried again.
    const refusal = bModel.requests[1]?.messages.at(-1) as Message;
    expect(refusal).toMatchObject({ role: 'tool', isError: true });
    expect(refusal.content).toMatch(/refused: a is already on the handoff path/);
    validateHistory(result.history);
    await system.shutdown();
  });

  it('ends with handoff_limit when maxHandoffDepth is reached', async () => {
    const c = defineAgent({ name: 'c', instructions: '', model: scriptedModel([{ text: 'never' }]) });
    const b = defineAgent({
      name: 'b',
      instructions: '',
      model: scriptedModel([handoffTo('c')]),
      handoffs: [c],
    });
    const a = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([handoffTo('b')]),
      handoffs: [b],
      maxHandoffDepth: 1,
    });
    const result = await run(a, 'go');
    expect(result).toMatchObject({ stopReason: 'handoff_limit', agent: 'b', path: ['a', 'b'] });
    expect(result.error?.message).toMatch(/maxHandoffDepth 1/);
    validateHistory(result.history);
  });

  it('rejects a handoff to an unknown agent name before anything runs', () => {
    const a = defineAgent({ name: 'a', instructions: '', model: scriptedModel([]), handoffs: ['ghost'] });
    expect(() => createAgentSystem().spawn(a, 'go')).toThrow(/ghost/);
  });
});

describe('agentTool', () => {
  it("runs the sub-agent and returns its answer as the tool result; its events join the caller's stream", async () => {
    const researcher = defineAgent({
      name: 'researcher',
      instructions: 'research',
      description: 'Finds facts',
      model: scriptedModel([{ text: 'Paris is the capital' }]),
    });
    const callerModel = scriptedModel([
      { toolCalls: [{ name: 'researcher', args: { input: 'capital of France?' } }], stopReason: 'tool_use' },
      { text: 'Paris' },
    ]);
    const caller = defineAgent({
      name: 'writer',
      instructions: '',
      model: callerModel,
      tools: [agentTool(researcher)],
    });
    const system = createAgentSystem();
    const session = system.spawn(caller, 'write');
    const events = await collect(session.events());
    const result = await session.result;
    expect(result).toMatchObject({ status: 'completed', text: 'Paris' });
    expect(result.steps[0]?.toolCalls[0]?.result).toBe('Paris is the capital');
    expect(events.some((e) => e.agent === 'researcher' && e.type === 'model_response')).toBe(true);
    await system.shutdown();
  });

  it('inside a session, the sub-agent is a child actor of the session with an explicit id, stopped when done', async () => {
    const actors = new Map<string, { parent: string | undefined; ended: boolean }>();
    const inspect = (event: InspectionEvent) => {
      const ref = event.actorRef as unknown as { id: string; _parent?: { id: string } };
      if (event.type === '@xstate.actor') actors.set(ref.id, { parent: ref._parent?.id, ended: false });
      if (event.type === '@xstate.snapshot' && event.snapshot.status !== 'active') {
        const entry = actors.get(ref.id);
        if (entry) entry.ended = true;
      }
    };
    const researcher = defineAgent({
      name: 'researcher',
      instructions: '',
      description: 'Finds facts',
      model: scriptedModel([{ text: 'fact' }]),
    });
    const caller = defineAgent({
      name: 'writer',
      instructions: '',
      model: scriptedModel([
        { toolCalls: [{ name: 'researcher', args: { input: 'q' } }], stopReason: 'tool_use' },
        { text: 'done' },
      ]),
      tools: [agentTool(researcher)],
    });
    const system = createAgentSystem({ inspect });
    const session = system.spawn(caller, 'go', { sessionId: 'tree' });
    expect((await session.result).text).toBe('done');
    expect(actors.get('sub-1')).toEqual({ parent: 'tree', ended: true });
    expect(actors.get('writer-1')?.parent).toBe('tree');
    await system.shutdown();
  });

  it("limits the sub-run to the caller's remaining steps; its failure is a tool error for the model", async () => {
    const loop = tool({
      name: 'again',
      description: 'x',
      input: z.object({ n: z.number() }),
      execute: ({ n }) => n,
    });
    const subModel = scriptedModel((_request, index) => ({
      toolCalls: [{ name: 'again', args: { n: index } }],
      stopReason: 'tool_use',
    }));
    const sub = defineAgent({
      name: 'sub',
      instructions: '',
      description: 'loops',
      model: subModel,
      tools: [loop],
    });
    const callerModel = scriptedModel([
      { toolCalls: [{ name: 'sub', args: { input: 'go' } }], stopReason: 'tool_use' },
      { text: 'gave up' },
    ]);
    const caller = defineAgent({
      name: 'caller',
      instructions: '',
      model: callerModel,
      tools: [agentTool(sub)],
      limits: { maxSteps: 3 },
    });
    const result = await run(caller, 'go');
    // Step 1 of 3 asked for the sub-agent: it may use the 2 steps left, not its own default of 10.
    expect(subModel.calls).toBe(2);
    const call = result.steps[0]?.toolCalls[0];
    expect(call?.isError).toBe(true);
    expect(call?.result).toMatch(/agent "sub" stopped \(max_steps\)/);
    // Those 2 steps counted against the caller too: its own limit of 3 is used up, so it stops there.
    expect(result.stopReason).toBe('max_steps');
    expect(callerModel.calls).toBe(1);
  });

  it("counts the sub-run's model calls against the caller's step limit", async () => {
    const subModel = scriptedModel(() => ({ text: 'fact' }));
    const sub = defineAgent({ name: 'sub', instructions: '', description: 'facts', model: subModel });
    const callerModel = scriptedModel(() => ({
      toolCalls: [{ name: 'sub', args: { input: 'more' } }],
      stopReason: 'tool_use',
    }));
    const caller = defineAgent({
      name: 'caller',
      instructions: '',
      model: callerModel,
      tools: [agentTool(sub)],
      limits: { maxSteps: 4, maxDuplicateToolCalls: 10, maxToolCallsPerTool: null },
    });
    const result = await run(caller, 'go');
    // Caller step 1, sub 1 (= step 2), caller step 3, sub 1 (= step 4): the limit is reached after two caller calls.
    expect(result.stopReason).toBe('max_steps');
    expect(callerModel.calls).toBe(2);
    expect(subModel.calls).toBe(2);
  });

  it("aborting the caller aborts the sub-run's model call", async () => {
    let subAborted = false;
    const subModel = scriptedModel(async (request) => {
      await new Promise<void>((resolve) => request.signal.addEventListener('abort', () => resolve()));
      subAborted = true;
      return { text: 'late' };
    });
    const sub = defineAgent({ name: 'sub', instructions: '', description: 'slow', model: subModel });
    const caller = defineAgent({
      name: 'caller',
      instructions: '',
      model: scriptedModel([{ toolCalls: [{ name: 'sub', args: { input: 'go' } }], stopReason: 'tool_use' }]),
      tools: [agentTool(sub)],
    });
    const controller = new AbortController();
    const pending = run(caller, 'go', { signal: controller.signal });
    await until(() => subModel.calls === 1);
    controller.abort();
    expect((await pending).stopReason).toBe('aborted');
    await until(() => subAborted);
  });

  it("passes the caller's remaining time down as the sub-run's timeout", async () => {
    const clock = new SimulatedClock();
    const subModel = scriptedModel([{ delayMs: 1e9 }]);
    const sub = defineAgent({ name: 'sub', instructions: '', description: 'slow', model: subModel });
    const caller = defineAgent({
      name: 'caller',
      instructions: '',
      model: scriptedModel([
        { toolCalls: [{ name: 'sub', args: { input: 'go' } }], stopReason: 'tool_use' },
        { text: 'done anyway' },
      ]),
      tools: [agentTool(sub)],
      limits: { timeoutMs: 1000 },
    });
    const pending = run(caller, 'go', { clock });
    await until(() => subModel.calls === 1);
    clock.increment(400);
    // 600 ms are left; the sub-run's own timer fires first only if it got the caller's remaining time.
    clock.increment(600);
    const result = await pending;
    expect(result.stopReason).toBe('timed_out');
  });
});

describe('supervision', () => {
  function crashingOnce() {
    let runs = 0;
    const flaky = tool({
      name: 'flaky',
      description: 'crashes the actor the first time',
      input: z.object({}),
      fatal: true,
      execute: () => {
        runs++;
        if (runs === 1) throw new Error('disk on fire');
        return 'written';
      },
    });
    return { flaky, runs: () => runs };
  }

  it('restarts after a fatal tool from the last checkpoint: the tool runs again, completed model calls are not repeated', async () => {
    const clock = new SimulatedClock();
    const { flaky, runs } = crashingOnce();
    const model = scriptedModel([
      { text: 'first', toolCalls: [{ name: 'flaky', args: {} }], stopReason: 'tool_use' },
      { text: 'saved it' },
    ]);
    const agent = defineAgent({ name: 'writer', instructions: '', model, tools: [flaky] });
    const system = createAgentSystem({ clock });
    const seen: RunEvent[] = [];
    const session = system.spawn(agent, 'save');
    const events = (async () => {
      for await (const event of session.events()) seen.push(event);
    })();
    await until(() => seen.some((e) => e.type === 'supervisor'));
    expect(seen.find((e) => e.type === 'supervisor')).toMatchObject({
      data: { decision: 'restart', restarts: 1, delayMs: 100, error: { code: 'tool_fatal' } },
    });
    clock.increment(99);
    expect(runs()).toBe(1);
    clock.increment(1);
    const result = await session.result;
    await events;
    expect(result).toMatchObject({ status: 'completed', text: 'saved it' });
    expect(runs()).toBe(2);
    expect(model.calls).toBe(2);
    expect(result.modelCalls).toBe(2);
    validateHistory(result.history);
    expect(result.history.filter((m) => m.role === 'tool')).toHaveLength(1);
    await system.shutdown();
  });

  it('restarts twice with exponential back-off, then escalates: the session fails with the error', async () => {
    const clock = new SimulatedClock();
    const broken = tool({
      name: 'broken',
      description: 'always crashes',
      input: z.object({}),
      fatal: true,
      execute: () => {
        throw new Error('still broken');
      },
    });
    const model = scriptedModel(() => ({
      toolCalls: [{ name: 'broken', args: {} }],
      stopReason: 'tool_use',
    }));
    const system = createAgentSystem({ clock });
    const session = system.spawn(defineAgent({ name: 'w', instructions: '', model, tools: [broken] }), 'go');
    const seen: RunEvent[] = [];
    const events = (async () => {
      for await (const event of session.events()) seen.push(event);
    })();
    await until(() => seen.filter((e) => e.type === 'supervisor').length === 1);
    clock.increment(100);
    await until(() => seen.filter((e) => e.type === 'supervisor').length === 2);
    clock.increment(200);
    const result = await session.result;
    await events;
    const decisions = seen.flatMap((e) =>
      e.type === 'supervisor' ? [[e.data.decision, e.data.delayMs]] : [],
    );
    expect(decisions).toEqual([
      ['restart', 100],
      ['restart', 200],
      ['escalate', undefined],
    ]);
    expect(result).toMatchObject({ status: 'failed', stopReason: 'error', error: { code: 'tool_fatal' } });
    // Only the model call that asked for the tool was made; every restart resumed at the tool call.
    expect(model.calls).toBe(1);
    await session.closed;
    expect(session.status).toBe('failed');
    await system.shutdown();
  });

  it('supervises an exception thrown inside the agent actor too: restart from the checkpoint, no orphan left', async () => {
    // The marked arguments make the loop's duplicate detection throw inside a machine action: the agent actor
    // errors (an exception from our code, not a model or tool error the loop handles).
    const crashing = { n: 1, [crashMarker]: true };
    const t = tool({ name: 't', description: 'x', input: z.object({}), execute: () => 'ok' });
    const model = scriptedModel([
      { toolCalls: [{ name: 't', args: crashing as never }], stopReason: 'tool_use' },
      { text: 'recovered' },
    ]);
    const started = new Map<unknown, string>();
    const ended = new Set<unknown>();
    const inspect = (event: InspectionEvent) => {
      if (event.type === '@xstate.actor')
        started.set(event.actorRef, (event.actorRef as unknown as { id: string }).id);
      if (event.type === '@xstate.snapshot' && event.snapshot.status !== 'active') ended.add(event.actorRef);
    };
    const clock = new SimulatedClock();
    const system = createAgentSystem({ inspect, clock });
    const session = system.spawn(defineAgent({ name: 'w', instructions: '', model, tools: [t] }), 'go');
    const seen: RunEvent[] = [];
    const events = (async () => {
      for await (const event of session.events()) seen.push(event);
    })();
    await until(() => seen.some((e) => e.type === 'supervisor'));
    expect(seen.find((e) => e.type === 'supervisor')).toMatchObject({
      data: { decision: 'restart', error: { name: 'RangeError', code: 'agent_crashed' } },
    });
    clock.increment(100);
    expect(await session.result).toMatchObject({ status: 'completed', text: 'recovered' });
    await events;
    await system.shutdown();
    // Every actor stopped, except the agent that errored (XState reports no snapshot for it): its effects did.
    expect([...started].filter(([ref]) => !ended.has(ref)).map(([, id]) => id)).toEqual(['w-1']);
  });

  it('a plain run() whose agent actor errors ends failed and leaves no effects actor running', async () => {
    const crashing = { [crashMarker]: true };
    const t = tool({ name: 't', description: 'x', input: z.object({}), execute: () => 'ok' });
    const model = scriptedModel([
      { toolCalls: [{ name: 't', args: crashing as never }], stopReason: 'tool_use' },
    ]);
    const started = new Map<unknown, string>();
    const ended = new Set<unknown>();
    const inspect = (event: InspectionEvent) => {
      if (event.type === '@xstate.actor')
        started.set(event.actorRef, (event.actorRef as unknown as { id: string }).id);
      if (event.type === '@xstate.snapshot' && event.snapshot.status !== 'active') ended.add(event.actorRef);
    };
    const result = await run(defineAgent({ name: 'p', instructions: '', model, tools: [t] }), 'go', {
      inspect,
    });
    expect(result).toMatchObject({ status: 'failed', stopReason: 'error', error: { code: 'internal' } });
    expect([...started].filter(([ref]) => !ended.has(ref)).map(([, id]) => id)).toHaveLength(1); // the root itself
    expect([...started].filter(([ref]) => !ended.has(ref)).map(([, id]) => id)).not.toContain('effects');
  });

  it("strategy 'stop' ends the turn failed but keeps the session for the next message", async () => {
    const { flaky } = crashingOnce();
    const model = scriptedModel([
      { toolCalls: [{ name: 'flaky', args: {} }], stopReason: 'tool_use' },
      { text: 'next turn' },
    ]);
    const system = createAgentSystem({ supervision: { strategy: 'stop' } });
    const session = system.spawn(defineAgent({ name: 'w', instructions: '', model, tools: [flaky] }), 'go');
    const first = await session.result;
    expect(first).toMatchObject({ status: 'failed', error: { code: 'tool_fatal' } });
    expect(session.status).toBe('idle');
    expect((await session.send('again')).text).toBe('next turn');
    await system.shutdown();
  });

  it('writes checkpoints to the store it is given, and nothing of a finished turn stays to resume', async () => {
    const clock = new SimulatedClock();
    const { flaky, runs } = crashingOnce();
    const model = scriptedModel([
      { toolCalls: [{ name: 'flaky', args: {} }], stopReason: 'tool_use' },
      { text: 'ok' },
    ]);
    const store = createMemoryStore();
    const system = createAgentSystem({ clock, store });
    const session = system.spawn(defineAgent({ name: 'w', instructions: '', model, tools: [flaky] }), 'go', {
      sessionId: 's1',
    });
    await until(() => runs() === 1);
    // The restart resumes from the last committed checkpoint after the back-off.
    for (let i = 0; i < 50 && runs() === 1; i++) {
      clock.increment(100);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const result = await session.result;
    expect(result.text).toBe('ok');
    expect(model.calls).toBe(2);
    await system.shutdown();
    const stored = await store.load('s1');
    expect(stored?.session).toMatchObject({ status: 'idle', turn: null, turns: 1 });
    expect(stored?.runs.size).toBe(0);
    expect(stored?.journal.size).toBe(0);
    expect(await system.interrupted()).toEqual([]);
  });
});

describe('restore from the store (another process)', () => {
  it('resumes a turn that was interrupted mid-way from its checkpoint, without repeating the model call', async () => {
    let toolRuns = 0;
    const save = (finish: boolean) =>
      tool({
        name: 'save',
        description: 'saves',
        input: z.object({ doc: z.string() }),
        execute: ({ doc }) => {
          toolRuns++;
          // In the first process the tool never returns: the process "dies" while it runs.
          return finish ? `saved ${doc}` : new Promise<string>(() => undefined);
        },
      });
    const firstModel = scriptedModel([
      { toolCalls: [{ name: 'save', args: { doc: 'a' } }], stopReason: 'tool_use' },
    ]);
    // The first process's store stops writing when the process "dies" (nothing it does afterwards is stored).
    const disk = createMemoryStore();
    const dying = dyingStore(disk);
    const first = createAgentSystem({ store: dying.store });
    first.spawn(
      defineAgent({ name: 'w', instructions: '', model: firstModel, tools: [save(false)] }),
      'save a',
      {
        sessionId: 'durable',
      },
    );
    await until(() => toolRuns === 1);
    const stored = await disk.load('durable');
    expect(stored?.session.turn?.agent?.checkpoint.openCalls).toHaveLength(1);
    dying.kill();
    await first.shutdown();

    // A new process: a new system on the same directory, the same agent definition with a fresh model.
    const secondModel = scriptedModel([{ text: 'saved it' }]);
    const second = createAgentSystem({ store: disk });
    const agent = defineAgent({ name: 'w', instructions: '', model: secondModel, tools: [save(true)] });
    const session = await second.restore('durable', agent);
    const result = await session.result;
    expect(result).toMatchObject({ status: 'completed', text: 'saved it', sessionId: 'durable' });
    expect(toolRuns).toBe(2); // the interrupted tool call ran again
    expect(secondModel.calls).toBe(1); // the model call made before the crash was not repeated
    expect(result.historyDelta.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    validateHistory(result.history);

    // The next turn continues from the stored record after the session closed.
    await second.shutdown();
    const third = createAgentSystem({ store: disk });
    const thirdModel = scriptedModel([{ text: 'and again' }]);
    const next = await third.restore(
      'durable',
      defineAgent({ name: 'w', instructions: '', model: thirdModel, tools: [save(true)] }),
      { input: 'once more' },
    );
    const again = await next.result;
    expect(again.text).toBe('and again');
    expect(again.history).toHaveLength(6);
    await third.shutdown();
  });
});

describe('resources', () => {
  it("a session's budget covers all its agents and turns; a delegated sub-run draws on the caller's budget", async () => {
    const costly = { input: 60, output: 40 };
    const researcher = defineAgent({
      name: 'researcher',
      instructions: '',
      description: 'looks things up',
      model: scriptedModel(() => ({ text: 'found it', usage: costly })),
    });
    const model = scriptedModel(() => ({
      toolCalls: [{ name: 'researcher', args: { input: 'look' } }],
      stopReason: 'tool_use',
      usage: costly,
    }));
    const caller = defineAgent({
      name: 'caller',
      instructions: '',
      model,
      tools: [agentTool(researcher)],
      limits: { maxSteps: 10, maxDuplicateToolCalls: 10, maxToolCallsPerTool: null },
    });
    const system = createAgentSystem({ resources: {} });
    const session = system.spawn(caller, 'go', { budget: { tokens: 350 } });
    const result = await session.result;
    // 100 tokens per call: caller, researcher, caller, researcher = 400 > 350; the caller stops before step 3.
    expect(result.stopReason).toBe('budget_exhausted');
    expect(model.calls).toBe(2);
    await system.shutdown();
  });
});

describe('parallel', () => {
  const answering = (name: string, text: string) =>
    defineAgent({ name, instructions: '', model: scriptedModel([{ text }]) });

  it('vote: the majority answer wins; a failed agent does not count', async () => {
    const failing = defineAgent({ name: 'f', instructions: '', model: scriptedModel([{ error: 'down' }]) });
    const group = parallel(
      [answering('a', 'Blue'), answering('b', 'red'), answering('c', 'blue '), failing],
      {
        merge: 'vote',
      },
    );
    const result = await group.run('colour?');
    expect(result).toMatchObject({ status: 'completed', text: 'Blue', votes: { blue: 2, red: 1 } });
    expect(result.results.map((r) => r.status)).toEqual(['completed', 'completed', 'completed', 'failed']);
  });

  it('concat: every answer in order', async () => {
    const result = await parallel([answering('a', 'one'), answering('b', 'two')], { merge: 'concat' }).run(
      'x',
    );
    expect(result.text).toBe('[a]\none\n\n[b]\ntwo');
    expect(result.output).toEqual(['one', 'two']);
  });

  it('runs the agents as children of one group actor; abort and timeouts reach each of them', async () => {
    const parents = new Map<string, string | undefined>();
    const inspect = (event: InspectionEvent) => {
      const ref = event.actorRef as unknown as { id: string; _parent?: { id: string } };
      if (event.type === '@xstate.actor') parents.set(ref.id, ref._parent?.id);
    };
    const clock = new SimulatedClock();
    const hanging = scriptedModel([{ delayMs: 1e9 }]);
    const patient = defineAgent({ name: 'patient', instructions: '', model: hanging });
    const quick = defineAgent({
      name: 'quick',
      instructions: '',
      model: scriptedModel([{ delayMs: 1e9 }]),
      limits: { timeoutMs: 50 },
    });
    const controller = new AbortController();
    const events: RunEvent[] = [];
    const pending = parallel([answering('a', 'yes'), patient, quick], { merge: 'concat' }).run('x', {
      inspect,
      clock,
      signal: controller.signal,
      onEvent: (event) => events.push(event),
    });
    await until(
      () => hanging.calls === 1 && events.some((e) => e.agent === 'a' && e.type === 'model_response'),
    );
    clock.increment(50); // quick times out on its own limit
    controller.abort(); // patient is aborted with the caller
    const result = await pending;
    expect(result.results.map((r) => [r.agent, r.stopReason])).toEqual([
      ['a', 'completed'],
      ['patient', 'aborted'],
      ['quick', 'timed_out'],
    ]);
    expect(result.text).toBe('[a]\nyes');
    const root = [...parents].find(([, parent]) => parent === undefined)?.[0];
    expect(root).toMatch(/^parallel-/);
    expect(['a-1', 'patient-2', 'quick-3'].map((id) => parents.get(id))).toEqual([root, root, root]);
    expect(events.some((e) => e.agent === 'a' && e.type === 'model_response')).toBe(true);
    expect(activeRuntimeCount()).toBe(0);
  });

  it('an agent that can hand off takes part through its own session', async () => {
    const b = defineAgent({ name: 'b', instructions: '', model: scriptedModel([{ text: 'blue' }]) });
    const a = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([handoffTo('b')]),
      handoffs: [b],
    });
    const result = await parallel([a, answering('c', 'blue')], { merge: 'vote' }).run('colour?');
    expect(result.votes).toEqual({ blue: 2 });
    expect(result.results[0]).toMatchObject({ agent: 'b', path: ['a', 'b'] });
  });

  it('synthesizer: an agent merges the answers it is given', async () => {
    const synthModel = scriptedModel([{ text: 'one and two' }]);
    const synth = defineAgent({ name: 'synth', instructions: '', model: synthModel });
    const result = await parallel([answering('a', 'one'), answering('b', 'two')], { merge: synth }).run('x');
    expect(result).toMatchObject({ status: 'completed', text: 'one and two' });
    const prompt = synthModel.requests[0]?.messages.at(-1)?.content as string;
    expect(prompt).toContain('[a]\none');
    expect(prompt).toContain('[b]\ntwo');
  });
});
