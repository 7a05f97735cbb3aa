import { afterEach, describe, expect, it, vi } from 'vitest';
import { type AnyStateMachine, assign, createActor, createMachine, type EventObject, emit } from 'xstate';
import { CompiledActor, type OwnActorLogic } from '../../src/engine/compiled-actor.ts';
import { compileMachine } from '../../src/engine/compiled-machine.ts';
import { type AgentEvent, agentMachine } from '../../src/machines/agent.ts';
import { controlEvents, modelEvents, pathConfigs, toolEvents } from '../machines/agent-paths.ts';
import { agentReplays, sessionOnlyAgentReplays } from './troupe-paths.ts';

/**
 * The engine's own actor (CompiledActor) against XState's Actor, both running the same compiled machine: every
 * generated path of the agent machine, random event sequences, and hand-written machines for the actor's own
 * semantics (the mailbox, deferred actions, emits, throwing actions, stop). After the start and after every event,
 * what an owner sees must be equal: the snapshot (status, value, context, output, error, whether it is the same
 * object as before), and the observer calls and emitted events since, in their order.
 */

type Act = EventObject | { act: (actor: Driven) => void; label: string };

interface Driven {
  send(event: EventObject): void;
  stop(): unknown;
  start(): unknown;
  getSnapshot(): unknown;
  subscribe(observer: object): { unsubscribe(): void };
  on(type: string, handler: (event: EventObject) => void): { unsubscribe(): void };
}

/** Comparable data: functions and actors by kind, errors by name and message, everything else as it is. */
function plain(value: unknown, depth = 0): unknown {
  if (depth > 30) return '<deep>';
  if (typeof value === 'function') return '<fn>';
  if (value instanceof Error) return { '@error': value.name, message: value.message };
  if (value instanceof Set) return [...value].map((item) => plain(item, depth + 1));
  if (Array.isArray(value)) return value.map((item) => plain(item, depth + 1));
  if (value !== null && typeof value === 'object') {
    if ('machine' in value && '_nodes' in value) return { '@snapshot': plain(snapshotOf(value), depth + 1) };
    const result: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) result[key] = plain(inner, depth + 1);
    return result;
  }
  return value;
}

function snapshotOf(snapshot: object): unknown {
  const s = snapshot as Record<string, unknown>;
  return { status: s.status, value: s.value, context: s.context, output: s.output, error: s.error };
}

class LoggingObserver {
  readonly #log: unknown[];
  constructor(log: unknown[]) {
    this.#log = log;
  }
  next(snapshot: object): void {
    this.#log.push(['next', plain(snapshotOf(snapshot))]);
  }
  error(error: unknown): void {
    this.#log.push(['error', plain(error)]);
  }
  complete(): void {
    this.#log.push(['complete']);
  }
}

interface Trace {
  steps: unknown[];
  unhandled: unknown[];
}

/** Runs `acts` on an actor and records what its owner sees after the start and after each act. */
function traceOf(make: () => Driven, acts: readonly Act[], subscribeEarly = true): Trace {
  const log: unknown[] = [];
  const unhandled: unknown[] = [];
  const timers = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: () => void) => {
    try {
      fn();
    } catch (error) {
      unhandled.push(plain(error));
    }
    return 0;
  }) as never);
  // XState's development build warns (an event sent to a stopped actor): actor ids differ between the two.
  const warn = vi
    .spyOn(console, 'warn')
    .mockImplementation((text: unknown) => log.push(['warn', String(text).replace(/\b[xo]:\d+/g, '#id')]));
  const steps: unknown[] = [];
  try {
    const actor = make();
    // An observer of methods that read `this`, as run()'s is: the actor calls them on the observer.
    const observe = () => actor.subscribe(new LoggingObserver(log));
    if (subscribeEarly) observe();
    actor.on('*', (event) => log.push(['emit', plain(event)]));
    let previous = actor.getSnapshot();
    const checkpoint = (label: string) => {
      const snapshot = actor.getSnapshot() as object;
      steps.push({
        label,
        snapshot: plain(snapshotOf(snapshot)),
        same: snapshot === previous,
        seen: log.splice(0),
        unhandled: unhandled.length,
      });
      previous = snapshot;
    };
    actor.start();
    checkpoint('start');
    for (const act of acts) {
      if ('act' in act) act.act(actor);
      else actor.send(act);
      checkpoint('act' in act ? act.label : act.type);
    }
    if (!subscribeEarly) {
      observe();
      checkpoint('late subscribe');
    }
    actor.stop();
    checkpoint('stop');
    actor.send({ type: 'after.stop' });
    checkpoint('after stop');
  } finally {
    timers.mockRestore();
    warn.mockRestore();
  }
  return { steps, unhandled };
}

function expectSameOnBoth(
  machine: AnyStateMachine,
  input: unknown,
  acts: readonly Act[],
  subscribeEarly = true,
): Trace {
  const expected = traceOf(() => createActor(machine, { input }) as unknown as Driven, acts, subscribeEarly);
  const actual = traceOf(
    () => new CompiledActor(machine as unknown as OwnActorLogic, { input }) as unknown as Driven,
    acts,
    subscribeEarly,
  );
  expect(actual).toEqual(expected);
  return expected;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('CompiledActor and XState’s Actor: the agent machine', () => {
  const compiled = compileMachine(agentMachine);

  for (const config of pathConfigs) {
    it(`every generated path: ${config.name}`, () => {
      const replays = agentReplays(config);
      expect(replays.length).toBeGreaterThan(10);
      for (const replay of replays) expectSameOnBoth(compiled, replay.input, replay.events);
    });
  }

  it('every generated path of the session-only inputs (handoffs, resumes from checkpoints)', () => {
    const replays = sessionOnlyAgentReplays();
    expect(replays.length).toBeGreaterThan(10);
    for (const replay of replays) expectSameOnBoth(compiled, replay.input, replay.events);
  });

  it('random event sequences, sent from outside and from observers during a step', () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (const config of pathConfigs) {
      const replays = agentReplays(config);
      const alphabet: AgentEvent[] = [
        ...modelEvents(config.schema),
        ...toolEvents,
        ...controlEvents,
        { type: 'unknown.event' } as unknown as AgentEvent,
      ];
      const pick = () => alphabet[Math.floor(random() * alphabet.length)] as AgentEvent;
      for (let round = 0; round < 25; round++) {
        const input = replays[Math.floor(random() * replays.length)]?.input;
        const acts: Act[] = [];
        for (let index = 0; index < 14; index++) {
          if (random() < 0.2) {
            // Two events at once from inside an observer: queued behind the step in progress, in order.
            const [first, second] = [pick(), pick()];
            acts.push({
              label: `nested ${first.type}, ${second.type}`,
              act: (actor) => {
                const subscription = actor.subscribe({
                  next: () => {
                    subscription.unsubscribe();
                    actor.send(second);
                  },
                });
                actor.send(first);
              },
            });
          } else acts.push(pick());
        }
        expectSameOnBoth(compiled, input, acts, random() < 0.8);
      }
    }
  });
});

type Counted = { context: { count: number } };

/** A small machine of every feature a childless machine's actor deals with. */
function featureMachine(fail: { at?: string } = {}): AnyStateMachine {
  const maybeThrow = (where: string) => () => {
    if (fail.at === where) throw new Error(`thrown in ${where}`);
  };
  return compileMachine(
    createMachine(
      {
        id: 'features',
        context: ({ input }: { input: { start?: number } | undefined }) => ({ count: input?.start ?? 0 }),
        initial: 'idle',
        entry: ['rootEntry', emit({ type: 'started' })],
        states: {
          idle: {
            on: {
              go: {
                target: 'busy',
                actions: [emit(({ context }: Counted) => ({ type: 'going', count: context.count }))],
              },
              fail: { actions: 'failing' },
            },
          },
          busy: {
            entry: ['busyEntry', emit({ type: 'busy' })],
            exit: 'busyExit',
            always: { guard: ({ context }: Counted) => context.count >= 3, target: 'finished' },
            on: {
              bump: { actions: [assign({ count: ({ context }: Counted) => context.count + 1 }), 'bumped'] },
              back: 'idle',
              fail: { actions: 'failing' },
              failAssign: {
                actions: assign(() => {
                  throw new Error('thrown in an assigner');
                }),
              },
            },
          },
          finished: { type: 'final', entry: emit({ type: 'finishing' }) },
        },
        output: ({ context }: Counted) => ({ total: context.count }),
      } as never,
      {
        actions: {
          rootEntry: maybeThrow('rootEntry'),
          busyEntry: maybeThrow('busyEntry'),
          busyExit: maybeThrow('busyExit'),
          bumped: maybeThrow('bumped'),
          failing: () => {
            throw new Error('thrown by an action');
          },
        },
      } as never,
    ),
  );
}

describe('CompiledActor and XState’s Actor: the actor’s own semantics', () => {
  const go = { type: 'go' };
  const bump = { type: 'bump' };

  it('a run to its final state: emits, an eventless transition, output, done, then events ignored', () => {
    const trace = expectSameOnBoth(featureMachine(), { start: 1 }, [go, bump, bump, bump]);
    expect(JSON.stringify(trace.steps)).toContain('"status":"done"');
  });

  it('an action that throws: an error snapshot, observers’ error; with no observer, thrown asynchronously', () => {
    for (const at of ['busyEntry', 'busyExit', 'bumped']) {
      expectSameOnBoth(featureMachine({ at }), undefined, [go, bump, { type: 'back' }, go]);
      expectSameOnBoth(featureMachine({ at }), undefined, [go, bump, { type: 'back' }, go], false);
    }
    expectSameOnBoth(featureMachine(), undefined, [{ type: 'fail' }]);
    expectSameOnBoth(featureMachine(), undefined, [go, { type: 'failAssign' }], false);
  });

  it('a machine that fails at its start (an entry action of the initial state)', () => {
    const trace = expectSameOnBoth(featureMachine({ at: 'rootEntry' }), undefined, [go]);
    expect(JSON.stringify(trace.steps[0])).toContain('thrown in rootEntry');
    expectSameOnBoth(featureMachine({ at: 'rootEntry' }), undefined, [go], false);
  });

  it('events sent before the start are processed at the start, in order; stop before the start drops them', () => {
    const machine = featureMachine();
    for (const stopFirst of [false, true]) {
      const traces = [
        createActor(machine) as unknown as Driven,
        new CompiledActor(machine as unknown as OwnActorLogic) as unknown as Driven,
      ].map((actor) => {
        const seen: unknown[] = [];
        actor.subscribe({
          next: (snapshot: object) => seen.push(plain(snapshotOf(snapshot))),
          complete: () => seen.push('complete'),
        });
        actor.send(go);
        actor.send(bump);
        if (stopFirst) actor.stop();
        actor.start();
        seen.push(plain(snapshotOf(actor.getSnapshot() as object)));
        return seen;
      });
      expect(traces[1]).toEqual(traces[0]);
    }
  });

  it('stop from an observer and from an emit listener during a step: the queued events are dropped', () => {
    const stopInside = (where: 'observer' | 'listener'): Act => ({
      label: `stop from ${where}`,
      act: (actor) => {
        if (where === 'observer') {
          const subscription = actor.subscribe({
            next: () => {
              subscription.unsubscribe();
              actor.send(bump);
              actor.stop();
              actor.send(bump);
            },
          });
        } else {
          const subscription = actor.on('going', () => {
            subscription.unsubscribe();
            actor.send(bump);
            actor.stop();
          });
        }
        actor.send(go);
      },
    });
    expectSameOnBoth(featureMachine(), undefined, [stopInside('observer')]);
    expectSameOnBoth(featureMachine(), undefined, [stopInside('listener')]);
  });

  it('a listener or an observer that throws is reported asynchronously; the step goes on', () => {
    const throwing = (where: 'observer' | 'listener'): Act => ({
      label: `throwing ${where}`,
      act: (actor) => {
        if (where === 'observer')
          actor.subscribe({
            next: () => {
              throw new Error('observer threw');
            },
          });
        else
          actor.on('going', () => {
            throw new Error('listener threw');
          });
        actor.send(go);
      },
    });
    const traces = [
      expectSameOnBoth(featureMachine(), undefined, [throwing('observer'), bump]),
      expectSameOnBoth(featureMachine(), undefined, [throwing('listener'), bump]),
    ];
    for (const trace of traces) expect(trace.unhandled.length).toBeGreaterThan(0);
  });

  it('observers are told in the order they subscribed, through unsubscribing and subscribing again, inside a step too', () => {
    for (const ending of [bump, { type: 'fail' }]) {
      const traces = [
        createActor(featureMachine()) as unknown as Driven,
        new CompiledActor(featureMachine() as unknown as OwnActorLogic) as unknown as Driven,
      ].map((actor) => {
        const seen: string[] = [];
        const observer = (name: string) => ({
          next: () => seen.push(`${name} next`),
          error: () => seen.push(`${name} error`),
          complete: () => seen.push(`${name} complete`),
        });
        const [a, b, c] = [observer('a'), observer('b'), observer('c')];
        const first = actor.subscribe(a);
        actor.subscribe(a);
        actor.subscribe(b);
        actor.start();
        seen.push('-- a again, after b');
        first.unsubscribe();
        actor.subscribe(a);
        actor.send(go);
        seen.push('-- the first observer subscribes c and itself again during its step');
        first.unsubscribe();
        actor.subscribe(b);
        let once = true;
        const d = {
          next: () => {
            seen.push('d next');
            if (!once) return;
            once = false;
            ownSubscription.unsubscribe();
            actor.subscribe(c);
            actor.subscribe(d);
          },
          error: () => seen.push('d error'),
          complete: () => seen.push('d complete'),
        };
        const ownSubscription = actor.subscribe(d);
        actor.send(bump);
        seen.push('-- the end');
        actor.send(ending);
        actor.send(bump);
        return seen;
      });
      expect(traces[1]).toEqual(traces[0]);
      expect(traces[0]).toContain(ending === bump ? 'd complete' : 'd error');
    }
  });

  it('the first observer to subscribe is told first, and again after it subscribes again during its own call', () => {
    const traces = [
      createActor(featureMachine()) as unknown as Driven,
      new CompiledActor(featureMachine() as unknown as OwnActorLogic) as unknown as Driven,
    ].map((actor) => {
      const seen: string[] = [];
      let calls = 0;
      const first = {
        next: () => {
          seen.push('first next');
          if (++calls !== 2) return;
          subscription.unsubscribe();
          actor.subscribe({ next: () => seen.push('late next') });
          actor.subscribe(first);
        },
      };
      const subscription = actor.subscribe(first);
      actor.subscribe({ next: () => seen.push('second next') });
      actor.start();
      actor.send(go);
      actor.send(bump);
      return seen;
    });
    expect(traces[1]).toEqual(traces[0]);
    expect(traces[0]?.filter((line) => line === 'first next').length).toBeGreaterThan(3);
  });

  it('subscribing after the end: complete for a done actor, error for a failed one', () => {
    expectSameOnBoth(featureMachine(), { start: 3 }, [go], false);
    expectSameOnBoth(featureMachine(), undefined, [{ type: 'fail' }], false);
  });
});

describe('what a CompiledActor holds between steps', () => {
  it('with one observer: no observer set, no list of deferred actions, no input; a scope of its actor only', () => {
    const actor = new CompiledActor(featureMachine() as unknown as OwnActorLogic, { input: { start: 1 } });
    actor.subscribe({ next: () => undefined });
    actor.start();
    actor.send({ type: 'go' });
    const fields = actor as unknown as Record<string, unknown>;
    // Every run in flight holds what its actor holds while it waits: each of these was made per actor.
    expect(fields.observers).toBeUndefined();
    expect(fields._deferred).toBeUndefined();
    expect(Object.keys(actor)).not.toContain('input');
    expect(Object.keys(actor)).not.toContain('system');
    expect(Object.keys(actor._actorScope)).toEqual(['self']);
    expect((actor.getSnapshot() as { value?: unknown }).value).toBe('busy');
  });
});

describe('CompiledActor’s scope', () => {
  it('has the members of XState’s actor scope, no fewer (the runtime check requires XState’s to be these)', () => {
    const machine = featureMachine();
    const own = new CompiledActor(machine as unknown as OwnActorLogic)._actorScope;
    const members = new Set([...Object.keys(own), ...Object.getOwnPropertyNames(Object.getPrototypeOf(own))]);
    members.delete('constructor');
    const xstates = (createActor(machine) as unknown as { _actorScope: object })._actorScope;
    expect([...members].sort()).toEqual(Object.keys(xstates).sort());
  });
});
