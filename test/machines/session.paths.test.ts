import { askHuman, defineAgent, type RunEvent, tool } from 'troupe';
import { type ScriptedTurn, scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { type AnyStateNode, createActor, fromCallback, type InspectionEvent, SimulatedClock } from 'xstate';
import { z } from 'zod';
import { agentMachine } from '../../src/machines/agent.ts';
import { type SessionContext, type SessionEvent, sessionMachine } from '../../src/machines/session.ts';
import { groupMachine } from '../../src/machines/supervisor-group.ts';
import { createMemoryStore } from '../../src/persistence/memory-store.ts';
import type { InspectedTransition } from '../../src/run/inspect.ts';
import { createAgentSystem } from '../../src/sessions/system.ts';
import { dyingStore } from '../support/dying-store.ts';
import { allTransitions, sessionOnlyStates, transitionName } from './agent-paths.ts';
import {
  generateGroupPaths,
  generateSessionPaths,
  groupInput,
  type SessionConfig,
  type SessionSnapshot,
  sessionConfigs,
  sessionInput,
} from './session-paths.ts';

/**
 * Model-based tests of the session supervisor (REQUIREMENTS V1, M2, M4): xstate/graph enumerates shortest paths to
 * every (state, incoming transition) under small limits, with the events a running session can receive (the
 * effects actor's answers, the active agent's done/error events with handoff or final outputs, fatal-tool crashes,
 * back-off timers, user messages, stop). Each path is replayed on a real actor of the machine and must end where the
 * traversal says; the replays must cover every state and transition of the definition. The agent machine's
 * session-only transitions (handoff, resume into runningTools) are then covered on the real system runtime. The
 * configurations, events and traversals of the session and group machines are in ./session-paths.ts.
 */

function allStates(node: AnyStateNode): string[] {
  return [node.id, ...Object.values(node.states).flatMap(allStates)];
}

interface Replayed {
  snapshot: SessionSnapshot;
  covered: Set<string>;
  visited: Set<string>;
}

/** The machine with inert agent children: the path's events, not a child, decide when an agent is done. */
const replayMachine = sessionMachine.provide({
  actors: { agent: fromCallback(() => undefined) as unknown as typeof agentMachine },
});

/** Replays a path's events on a real actor of the session machine. */
function replay(config: SessionConfig, events: SessionEvent[]): Replayed {
  const covered = new Set<string>();
  const visited = new Set<string>(['session']);
  const inspect = (event: InspectionEvent) => {
    if (event.rootId !== event.actorRef.sessionId || event.type !== '@xstate.microstep') return;
    const value = (event.snapshot as unknown as { value: unknown }).value;
    if (typeof value === 'string') visited.add(`session.${value}`);
    for (const transition of event._transitions) {
      const source = transition.source as AnyStateNode;
      const list =
        transition.eventType === ''
          ? (source.always ?? [])
          : (source.transitions.get(transition.eventType) ?? []);
      covered.add(transitionName(source, transition.eventType, list.indexOf(transition)));
      visited.add(source.id);
    }
  };
  const actor = createActor(replayMachine, {
    input: sessionInput(config),
    clock: new SimulatedClock(),
    inspect,
  });
  let failed: unknown;
  actor.subscribe({ error: (error) => (failed = error) });
  actor.start();
  for (const event of events) actor.send(event);
  const snapshot = actor.getSnapshot();
  actor.stop();
  // No event of a path may fail the session actor itself.
  if (failed !== undefined)
    throw new Error(`the session failed: ${String(failed)} after ${events.map((e) => e.type).join(' > ')}`);
  return { snapshot, covered, visited };
}

describe('session supervisor statechart: generated paths replayed on the machine', () => {
  const covered = new Set<string>();
  const visited = new Set<string>();
  const endings: { config: string; value: unknown; context: SessionContext }[] = [];
  let replayed = 0;

  for (const config of sessionConfigs) {
    it(`every shortest path ends where the statechart says (${config.name})`, () => {
      const paths = generateSessionPaths(config);
      expect(paths.length).toBeGreaterThan(config.entry ? 3 : 20);
      for (const path of paths) {
        const events = path.steps.slice(1).map((step) => step.event);
        const outcome = replay(config, events);
        const description = events.map((e) => e.type).join(' > ');
        expect(outcome.snapshot.value, description).toEqual(path.state.value);
        expect(outcome.snapshot.context.lastTurn?.stopReason ?? null, description).toBe(
          path.state.context.lastTurn?.stopReason ?? null,
        );
        expect(outcome.snapshot.context.path, description).toEqual(path.state.context.path);
        for (const name of outcome.covered) covered.add(name);
        for (const id of outcome.visited) visited.add(id);
        endings.push({ config: config.name, value: path.state.value, context: path.state.context });
        replayed++;
      }
    });
  }

  it('reaches restart, back-off, stop, escalate, handoff, handoff refused and the depth limit', () => {
    const some = (predicate: (e: (typeof endings)[number]) => boolean) => endings.some(predicate);
    expect(some((e) => e.value === 'backingOff' && e.context.restarts === 1)).toBe(true);
    expect(
      some((e) => e.value === 'running' && e.context.restarts === 1 && e.context.activeId !== null),
    ).toBe(true);
    expect(some((e) => e.value === 'failed' && e.context.lastTurn?.stopReason === 'error')).toBe(true);
    expect(
      some(
        (e) => e.config === 'stop at once' && e.value === 'idle' && e.context.lastTurn?.status === 'failed',
      ),
    ).toBe(true);
    expect(some((e) => e.context.path.join('>') === 'a>b' && e.value === 'running')).toBe(true);
    expect(some((e) => e.context.refusals === 1 && e.value === 'running')).toBe(true);
    expect(
      some(
        (e) =>
          e.context.lastTurn?.stopReason === 'handoff_limit' &&
          e.context.refusals === 0 &&
          e.context.path.join('>') === 'a>b>c',
      ),
    ).toBe(true);
    expect(some((e) => e.context.lastTurn?.stopReason === 'handoff_limit' && e.context.refusals === 1)).toBe(
      true,
    );
    expect(some((e) => e.value === 'closed' && e.context.lastTurn?.stopReason === 'aborted')).toBe(true);
  });

  it('the replays visit every state and every transition of the session machine', () => {
    expect(replayed).toBeGreaterThan(100);
    expect(allTransitions(sessionMachine.root).filter((name) => !covered.has(name))).toEqual([]);
    expect(allStates(sessionMachine.root).filter((id) => !visited.has(id))).toEqual([]);
  });
});

async function untilTrue(predicate: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !predicate(); i++) await new Promise((resolve) => setTimeout(resolve, 2));
  expect(predicate()).toBe(true);
}

describe("the agent machine's session-only transitions, on the real system runtime", () => {
  it('handoffs, restarts and recoveries (open calls, final output, step limit, waiting for people), approvals, failed commits', async () => {
    const covered = new Set<string>();
    const visited = new Set<string>();
    const inspect = (event: InspectionEvent) => {
      if (event.type !== '@xstate.microstep') return;
      // The system's inspector hands transitions on as their states' ids and their index, never the nodes.
      for (const { source, eventType, index } of event._transitions as unknown as InspectedTransition[]) {
        if (source.id !== 'agent' && !source.id.startsWith('agent.')) continue;
        covered.add(transitionName(source, eventType, index));
      }
      const value = (event.snapshot as unknown as { value: unknown }).value;
      if (value === 'handingOff') visited.add('agent.handingOff');
      if (JSON.stringify(value) === '{"running":{"toolUse":"awaitingApproval"}}')
        visited.add('agent.running.toolUse.awaitingApproval');
    };
    const clock = new SimulatedClock();
    const system = createAgentSystem({ inspect, clock });
    // A handoff.
    const b = defineAgent({ name: 'b', instructions: '', model: scriptedModel([{ text: 'b here' }]) });
    const a = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ toolCalls: [{ name: 'transfer_to_b', args: {} }], stopReason: 'tool_use' }]),
      handoffs: [b],
    });
    expect((await system.spawn(a, 'go').result).agent).toBe('b');
    // A restart from a checkpoint taken in runningTools.
    let runs = 0;
    const flaky = tool({
      name: 'flaky',
      description: 'x',
      input: z.object({}),
      fatal: true,
      execute: () => {
        runs++;
        if (runs === 1) throw new Error('crash');
        return 'ok';
      },
    });
    const w = defineAgent({
      name: 'w',
      instructions: '',
      model: scriptedModel([
        { toolCalls: [{ name: 'flaky', args: {} }], stopReason: 'tool_use' },
        { text: 'done' },
      ]),
      tools: [flaky],
    });
    const session = system.spawn(w, 'go');
    const seen: RunEvent[] = [];
    void (async () => {
      for await (const event of session.events()) seen.push(event);
    })();
    await untilTrue(() => seen.some((e) => e.type === 'supervisor'));
    clock.increment(100);
    expect((await session.result).text).toBe('done');
    await system.shutdown();

    // A restore at the step limit: the last step's answer did not decode, the process stopped during the final-output
    // call (checkpoint step = maxSteps, phase finalOutput).
    const atLimit = async (finalAnswerOnMaxSteps: boolean) => {
      const store = createMemoryStore();
      // Nothing the first process does after it "dies" reaches the store.
      const dying = dyingStore(store);
      const agent = (model: ReturnType<typeof scriptedModel>) =>
        defineAgent({
          name: 'l',
          instructions: '',
          model,
          tools: [tool({ name: 't', description: 'x', input: z.object({}), execute: () => 'ok' })],
          output: z.object({ x: z.number() }),
          limits: { maxSteps: 1, finalAnswerOnMaxSteps },
        });
      const first = createAgentSystem({ inspect, clock, store: dying.store });
      first.spawn(agent(scriptedModel([{ text: 'not json' }, { delayMs: 1e9 }])), 'go', {
        sessionId: 'limit',
      });
      for (let i = 0; i < 1000; i++) {
        const stored = await store.load('limit');
        if (stored?.session.turn?.agent?.checkpoint.step === 1) break;
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      dying.kill();
      await first.shutdown();
      const second = createAgentSystem({ inspect, clock, store });
      const restored = await second.restore('limit', agent(scriptedModel([{ text: '{"x":1}' }])));
      const result = await restored.result;
      await second.shutdown();
      return result;
    };
    // The checkpoint says the agent was in its final-output phase: the resumed agent makes exactly the call the
    // interrupted one was making (not a step-limit stop, which the uninterrupted run would not have hit either).
    expect(await atLimit(false)).toMatchObject({ output: { x: 1 }, stopReason: 'completed' });
    expect(await atLimit(true)).toMatchObject({ output: { x: 1 }, stopReason: 'completed' });

    // A refused handoff at the step limit: the agent resumes at its limit and stops there (max_steps), or gives
    // the forced last answer.
    const refusedAtLimit = async (finalAnswerOnMaxSteps: boolean) => {
      const back = defineAgent({
        name: 'back',
        instructions: '',
        model: scriptedModel([
          { toolCalls: [{ name: 'transfer_to_front', args: {} }], stopReason: 'tool_use' },
          { text: 'last word' },
        ]),
        handoffs: ['front'],
        limits: { maxSteps: 1, finalAnswerOnMaxSteps },
      });
      const front = defineAgent({
        name: 'front',
        instructions: '',
        model: scriptedModel([
          { toolCalls: [{ name: 'transfer_to_back', args: {} }], stopReason: 'tool_use' },
        ]),
        handoffs: [back],
        maxHandoffRevisits: 0,
      });
      const system3 = createAgentSystem({ inspect, clock, agents: [front] });
      const result = await system3.spawn(front, 'go').result;
      await system3.shutdown();
      return result;
    };
    expect(await refusedAtLimit(false)).toMatchObject({ agent: 'back', stopReason: 'max_steps' });
    expect(await refusedAtLimit(true)).toMatchObject({
      agent: 'back',
      text: 'last word',
      stopReason: 'max_steps',
    });

    // Calls that wait for people: an approval and a question in one batch, decided one after the other; then the
    // same pause interrupted (the process "dies") and resumed from the store in a new system.
    const pay = tool({
      name: 'pay',
      description: 'pays',
      input: z.object({ cents: z.number() }),
      needsApproval: true,
      execute: ({ cents }) => `paid ${cents}`,
    });
    const asking = (model: ReturnType<typeof scriptedModel>) =>
      defineAgent({ name: 'clerk', instructions: '', model, tools: [pay, askHuman()] });
    const batch: ScriptedTurn = {
      toolCalls: [
        { id: 'p1', name: 'pay', args: { cents: 5 } },
        { id: 'q1', name: 'ask_human', args: { question: 'which card?' } },
      ],
      stopReason: 'tool_use',
    };
    const store = createMemoryStore();
    const live = createAgentSystem({ inspect, clock, store });
    const clerk = live.spawn(asking(scriptedModel([batch, { text: 'paid' }])), 'pay 5', {
      sessionId: 'clerk-1',
    });
    await untilTrue(() => clerk.pendingApprovals().length === 2);
    await clerk.approve('p1');
    await clerk.answer('q1', 'the blue one');
    expect(await clerk.result).toMatchObject({ status: 'completed', text: 'paid' });
    await live.shutdown();

    const dying = dyingStore(store);
    const first = createAgentSystem({ inspect, clock, store: dying.store });
    const waiting = first.spawn(asking(scriptedModel([batch])), 'pay 5', { sessionId: 'clerk-2' });
    await untilTrue(() => waiting.pendingApprovals().length === 2);
    dying.kill();
    await first.shutdown();
    const second = createAgentSystem({
      inspect,
      clock,
      store,
      agents: [asking(scriptedModel([{ text: 'done' }]))],
    });
    const recovered = await second.recover();
    expect(recovered.sessions.map((session) => session.sessionId)).toEqual(['clerk-2']);
    const resumed = recovered.sessions[0] as (typeof recovered.sessions)[number];
    await untilTrue(() => resumed.pendingApprovals().length === 2);
    await resumed.reject('p1', 'too much');
    await resumed.reject('q1', 'no idea');
    expect(await resumed.result).toMatchObject({ status: 'completed', text: 'done' });
    await second.shutdown();

    // A write-ahead commit that fails once the turn has started (its start and the first checkpoint are one commit,
    // which a store that throws fails in spawn() itself): the tool never starts and the run fails with the store's
    // error.
    const failing = createMemoryStore();
    let checkpoints = 0;
    const broken = {
      ...failing,
      commit: (id: string, change: Parameters<typeof failing.commit>[1]) => {
        if (change.session?.turn?.agent && ++checkpoints > 1)
          throw new Error(`disk full (commit ${checkpoints})`);
        return failing.commit(id, change);
      },
    };
    const third = createAgentSystem({ inspect, clock, store: broken });
    const model = scriptedModel([
      { toolCalls: [{ name: 'never_run', args: {} }], stopReason: 'tool_use' },
      { text: 'never' },
    ]);
    let toolRuns = 0;
    const neverRun = tool({
      name: 'never_run',
      description: 'x',
      input: z.object({}),
      execute: () => {
        toolRuns += 1;
        return 'ran';
      },
    });
    const failed = await third.spawn(
      defineAgent({ name: 'f', instructions: '', model, tools: [neverRun] }),
      'go',
    ).result;
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'store_failed' } });
    expect(model.calls).toBe(1);
    expect(toolRuns).toBe(0);
    await third.shutdown();

    expect(allTransitions(agentMachine.root, 'session').filter((name) => !covered.has(name))).toEqual([]);
    expect(sessionOnlyStates.filter((id) => !visited.has(id))).toEqual([]);
  });
});

describe('session context size', () => {
  it('stays within 19 top-level keys (every assign copies it; V8 is ~70x slower from 20 keys on)', () => {
    const actor = createActor(replayMachine, { input: sessionInput(sessionConfigs[0] as SessionConfig) });
    actor.start();
    expect(Object.keys(actor.getSnapshot().context).length).toBeLessThanOrEqual(19);
    actor.stop();
  });
});

describe('group supervisor statechart (parallel): generated paths replayed on the machine', () => {
  const inertGroup = groupMachine.provide({
    actors: { agent: fromCallback(() => undefined) as unknown as typeof agentMachine },
  });

  it('every path ends where the traversal says, covering every state and transition', () => {
    const paths = generateGroupPaths();
    expect(paths.length).toBeGreaterThan(10);
    const covered = new Set<string>();
    const visited = new Set<string>(['group']);
    for (const path of paths) {
      const inspect = (event: InspectionEvent) => {
        if (event.rootId !== event.actorRef.sessionId || event.type !== '@xstate.microstep') return;
        const value = (event.snapshot as unknown as { value: unknown }).value;
        if (typeof value === 'string') visited.add(`group.${value}`);
        for (const transition of event._transitions) {
          const source = transition.source as AnyStateNode;
          const list =
            transition.eventType === ''
              ? (source.always ?? [])
              : (source.transitions.get(transition.eventType) ?? []);
          covered.add(transitionName(source, transition.eventType, list.indexOf(transition)));
        }
      };
      const actor = createActor(inertGroup, { input: groupInput, inspect });
      let failed: unknown;
      actor.subscribe({ error: (error) => (failed = error) });
      actor.start();
      for (const step of path.steps.slice(1)) actor.send(step.event);
      const snapshot = actor.getSnapshot();
      expect(failed).toBeUndefined();
      expect(snapshot.value).toEqual(path.state.value);
      expect(snapshot.context.remaining).toBe(path.state.context.remaining);
      if (snapshot.status === 'done') {
        expect(
          Object.keys(snapshot.context.outputs).length + Object.keys(snapshot.context.failures).length,
        ).toBe(2);
      }
      actor.stop();
    }
    expect(allTransitions(groupMachine.root).filter((name) => !covered.has(name))).toEqual([]);
    expect(allStates(groupMachine.root).filter((id) => !visited.has(id))).toEqual([]);
  });
});
