import { defineAgent, type RunEvent, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { type AnyStateNode, createActor, fromCallback, type InspectionEvent, SimulatedClock } from 'xstate';
import { z } from 'zod';
import { agentMachine } from '../../src/machines/agent.ts';
import { type SessionContext, type SessionEvent, sessionMachine } from '../../src/machines/session.ts';
import { groupMachine } from '../../src/machines/supervisor-group.ts';
import { checkpointKey, type SnapshotStore } from '../../src/persistence/snapshot-store.ts';
import { createMemoryStore } from '../../src/persistence/store-memory.ts';
import { createAgentSystem } from '../../src/system/system.ts';
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

describe("the agent machine's session-only transitions, on the real system runtime", () => {
  it('a handoff ends the agent in handingOff, a restart resumes it in runningTools or at the step limit', async () => {
    const covered = new Set<string>();
    const visited = new Set<string>();
    const inspect = (event: InspectionEvent) => {
      if (event.type !== '@xstate.microstep') return;
      for (const transition of event._transitions) {
        const source = transition.source as AnyStateNode;
        if (source.machine !== agentMachine.root.machine && source.machine.id !== 'agent') continue;
        const list =
          transition.eventType === ''
            ? (source.always ?? [])
            : (source.transitions.get(transition.eventType) ?? []);
        covered.add(transitionName(source, transition.eventType, list.indexOf(transition)));
      }
      const value = (event.snapshot as unknown as { value: unknown }).value;
      if (value === 'handingOff') visited.add('agent.handingOff');
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
    for (let i = 0; i < 100 && !seen.some((e) => e.type === 'supervisor'); i++)
      await new Promise((resolve) => setImmediate(resolve));
    clock.increment(100);
    expect((await session.result).text).toBe('done');
    await system.shutdown();

    // A restore at the step limit: the last step's answer did not decode, the process stopped during the final-output
    // call (checkpoint step = maxSteps); the resumed agent stops with max_steps, or asks for the forced last answer.
    const atLimit = async (finalAnswerOnMaxSteps: boolean) => {
      const store = createMemoryStore();
      let dead = false;
      // Nothing the first process does after it "dies" reaches the store.
      const dying: SnapshotStore = {
        get: (key) => store.get(key),
        keys: (prefix) => store.keys(prefix),
        set: (key, value) => (dead ? undefined : store.set(key, value)),
        delete: (key) => (dead ? undefined : store.delete(key)),
      };
      const agent = (model: ReturnType<typeof scriptedModel>) =>
        defineAgent({
          name: 'l',
          instructions: '',
          model,
          tools: [tool({ name: 't', description: 'x', input: z.object({}), execute: () => 'ok' })],
          output: z.object({ x: z.number() }),
          limits: { maxSteps: 1, finalAnswerOnMaxSteps },
        });
      const first = createAgentSystem({ inspect, clock, store: dying });
      first.spawn(agent(scriptedModel([{ text: 'not json' }, { delayMs: 1e9 }])), 'go', { id: 'limit' });
      for (let i = 0; i < 100; i++) {
        const stored = (await store.get(checkpointKey('limit'))) as
          | { checkpoint?: { step: number } }
          | undefined;
        if (stored?.checkpoint?.step === 1) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
      dead = true;
      await first.shutdown();
      const second = createAgentSystem({ inspect, clock, store });
      const restored = await second.restore('limit', agent(scriptedModel([{ text: '{"x":1}' }])));
      const result = await restored.result;
      await second.shutdown();
      return result;
    };
    expect(await atLimit(false)).toMatchObject({ status: 'stopped', stopReason: 'max_steps' });
    expect(await atLimit(true)).toMatchObject({ output: { x: 1 }, stopReason: 'max_steps' });

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
