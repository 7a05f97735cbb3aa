import { describe, expect, it } from 'vitest';
import type { AnyStateMachine } from 'xstate';
import * as xstate from 'xstate';
import { compileMachine } from '../../src/engine/compiled-machine.ts';
import { assessRuntime, type XStateRuntime } from '../../src/engine/runtime-gate.ts';

/**
 * The runtime check (runtime-gate.ts) on the loaded xstate and on stand-ins of another shape: a missing or renamed
 * private member, or a compiled interpreter whose canary runs differently, makes it refuse, saying what it found.
 */

const loaded = xstate as unknown as XStateRuntime;
const compiled = (machine: AnyStateMachine) => compileMachine(machine);

/** The loaded xstate with every actor it creates changed by `change`. */
function withActors(change: (actor: Record<string, unknown>) => void): XStateRuntime {
  return {
    ...loaded,
    createActor: ((...args: Parameters<typeof xstate.createActor>) => {
      const actor = xstate.createActor(...args);
      change(actor as unknown as Record<string, unknown>);
      return actor;
    }) as unknown as XStateRuntime['createActor'],
  };
}

describe('assessRuntime(xstate, compile)', () => {
  it('accepts the installed xstate with the compiled interpreter', () => {
    const verdict = assessRuntime(loaded, compiled);
    expect(verdict).toMatchObject({ accepted: true, problems: [] });
    expect(verdict.costMicros).toBeGreaterThan(0);
  });

  it('refuses an actor system without _relay, and an actor with _stop renamed', () => {
    const noRelay = withActors((actor) => {
      Object.defineProperty(actor.system, '_relay', { value: undefined });
    });
    expect(assessRuntime(noRelay, compiled)).toMatchObject({
      accepted: false,
      problems: ['xstate no longer has system._relay (a function)'],
    });
    const renamed = withActors((actor) => {
      actor._halt = actor._stop;
      actor._stop = undefined;
    });
    expect(assessRuntime(renamed, compiled).problems).toEqual([
      'xstate no longer has an actor’s _stop (a function)',
    ]);
  });

  it('refuses each other member the engine reads when it is gone', () => {
    const cases: [XStateRuntime, string][] = [
      [{ ...loaded, Actor: { prototype: {} } }, 'Actor.prototype._send'],
      [
        withActors((actor) => Object.defineProperty(actor.system, '_sendInspectionEvent', { value: 1 })),
        '_sendInspectionEvent',
      ],
      [
        withActors((actor) =>
          Object.defineProperty(actor, '_processingStatus', { get: () => 'running', set: () => {} }),
        ),
        '_processingStatus',
      ],
      [
        withActors((actor) => Object.defineProperty(actor, '_parent', { value: {} })),
        'a root actor’s _parent',
      ],
      [
        {
          ...loaded,
          // A sendTo whose delay is kept under another name: read as absent, a delayed send would go at once.
          sendTo: ((to: never, event: never, options?: never) => {
            const action = loaded.sendTo(to, event, options) as Record<string, unknown>;
            const renamed = Object.assign(
              (...call: unknown[]) => (action as unknown as (...a: unknown[]) => unknown)(...call),
              action,
            );
            renamed.after = renamed.delay;
            renamed.delay = undefined;
            return renamed;
          }) as unknown as XStateRuntime['sendTo'],
        },
        "a sendTo action's to, event, id and delay",
      ],
      [
        {
          ...loaded,
          // An emit whose event is kept under another name: read as absent, the command would be lost.
          emit: ((event: never) => {
            const action = loaded.emit(event) as Record<string, unknown>;
            const renamed = Object.assign(
              (...call: unknown[]) => (action as unknown as (...a: unknown[]) => unknown)(...call),
              action,
            );
            renamed.emitted = renamed.event;
            renamed.event = undefined;
            return renamed;
          }) as unknown as XStateRuntime['emit'],
        },
        "an emit action's type and event",
      ],
      [
        {
          ...loaded,
          // An `and` whose guards are kept under another name: read as absent, the guard would be misread.
          and: ((guards: never) => {
            const guard = loaded.and(guards) as Record<string, unknown>;
            const renamed = Object.assign(
              (...call: unknown[]) => (guard as unknown as (...a: unknown[]) => unknown)(...call),
              guard,
            );
            renamed.all = renamed.guards;
            renamed.guards = undefined;
            return renamed;
          }) as unknown as XStateRuntime['and'],
        },
        "an and, or or not guard's guards and check",
      ],
    ];
    // A system that hands observers the event it was given: the interpreter's reused events would change under them.
    const sharing = withActors((actor) => {
      const system = actor.system as { inspect(observer: unknown): unknown; _sendInspectionEvent: unknown };
      const observers: ((event: unknown) => void)[] = [];
      system.inspect = (observer: (event: unknown) => void) => {
        observers.push(observer);
        return { unsubscribe: () => observers.splice(observers.indexOf(observer), 1) };
      };
      system._sendInspectionEvent = (event: unknown) => {
        for (const observer of observers) observer(event);
      };
    });
    cases.push([sharing, 'system._sendInspectionEvent that gives observers a copy of the event']);
    // An actor scope with a member the engine's own actor does not give: XState's logic might use it.
    const widerScope = withActors((actor) => {
      (actor as unknown as { _actorScope: Record<string, unknown> })._actorScope.schedule = () => {};
    });
    cases.push([
      widerScope,
      'an actor’s _actorScope of members actionExecutor, defer, emit, id, logger, self, sessionId, stopChild, system',
    ]);
    for (const [runtime, member] of cases) {
      const verdict = assessRuntime(runtime, compiled);
      expect(verdict.accepted, member).toBe(false);
      expect(verdict.problems.join(' '), member).toContain(member);
    }
  });

  it('names exactly the member that is missing, while XState itself still runs (the check reads it, nothing else)', () => {
    /** The loaded xstate, whose actors show the check `hidden` members of the actor, its system and its snapshots. */
    const hiding = (hidden: { actor?: string; system?: string; snapshot?: string; child?: string }) =>
      ({
        ...loaded,
        createActor: ((...args: Parameters<typeof xstate.createActor>) => {
          const actor = xstate.createActor(...args);
          const veil = <T extends object>(target: T, name: string | undefined): T =>
            new Proxy(target, {
              get: (object, key) => {
                if (key === name) return undefined;
                const value = Reflect.get(object, key);
                return typeof value === 'function' ? value.bind(object) : value;
              },
              has: (object, key) => key !== name && Reflect.has(object, key),
            });
          return new Proxy(actor, {
            get: (object, key) => {
              if (key === hidden.actor) return undefined;
              if (key === 'system') return veil(object.system, hidden.system);
              if (key === 'getSnapshot')
                return () => {
                  const snapshot = object.getSnapshot() as { children: Record<string, object> };
                  const children = Object.fromEntries(
                    Object.entries(snapshot.children).map(([id, child]) => [id, veil(child, hidden.child)]),
                  );
                  return veil({ ...snapshot, children }, hidden.snapshot);
                };
              const value = Reflect.get(object, key);
              return typeof value === 'function' ? value.bind(object) : value;
            },
            has: (object, key) => key !== hidden.actor && Reflect.has(object, key),
          });
        }) as unknown as XStateRuntime['createActor'],
      }) as XStateRuntime;
    const cases: [Parameters<typeof hiding>[0], string][] = [
      [{ system: '_relay' }, 'system._relay (a function)'],
      [{ system: '_sendInspectionEvent' }, 'system._sendInspectionEvent (a function)'],
      [{ actor: '_stop' }, 'an actor’s _stop (a function)'],
      [{ actor: '_processingStatus' }, 'an actor’s _processingStatus (a number, 1 when running)'],
      [{ actor: '_actorScope' }, 'an actor’s _actorScope (an object)'],
      [{ actor: '_parent' }, 'a root actor’s _parent (undefined)'],
      [{ snapshot: '_nodes' }, 'a snapshot’s _nodes (an array)'],
      [{ child: '_parent' }, 'a child actor’s _parent (its parent)'],
    ];
    for (const [hidden, member] of cases)
      expect(assessRuntime(hiding(hidden), compiled).problems, member).toEqual([
        `xstate no longer has ${member}`,
      ]);
  });

  it('reports how long it took, measured around the check', () => {
    const before = performance.now();
    const verdict = assessRuntime(loaded, compiled);
    const elapsedMicros = (performance.now() - before) * 1000;
    expect(verdict.costMicros).toBeGreaterThan(0);
    expect(verdict.costMicros).toBeLessThanOrEqual(Math.ceil(elapsedMicros) + 1);
  });

  it('refuses a compiled interpreter whose canary runs other actions, and says after which event', () => {
    const skipsAnAction = (machine: AnyStateMachine) =>
      compileMachine(machine.provide({ actions: { bumpLast: () => {} } }) as AnyStateMachine);
    const verdict = assessRuntime(loaded, skipsAnAction);
    expect(verdict.accepted).toBe(false);
    expect(verdict.problems[0]).toContain('the canary ran actions');
    expect(verdict.problems[1]).toContain("after 'bump'");
  });

  it('refuses a compiled interpreter that takes another transition, or that throws', () => {
    const otherTarget = (machine: AnyStateMachine) =>
      compileMachine(
        xstate.createMachine({ ...machine.config, initial: 'done' }, machine.implementations as never),
      );
    expect(assessRuntime(loaded, otherTarget).problems.join(' ')).toContain('at start');
    const throws = () => {
      throw new Error('no such member');
    };
    expect(assessRuntime(loaded, throws).problems).toEqual([
      'the canary machine failed on the compiled interpreter: Error: no such member',
    ]);
  });

  it('refuses a compiled interpreter whose snapshots differ only in their tags, children, fields or error', () => {
    /** The compiled interpreter, with each snapshot it computes after an event changed by `change`. */
    const altered =
      (change: (snapshot: Record<string, unknown>) => Record<string, unknown>) =>
      (machine: AnyStateMachine) => {
        const logic = compileMachine(machine) as unknown as {
          transition: (...args: unknown[]) => Record<string, unknown>;
        };
        const transition = logic.transition.bind(logic);
        logic.transition = (...args) => {
          const next = transition(...args);
          return next.status === 'active' ? change(next) : next;
        };
        return logic as unknown as AnyStateMachine;
      };
    const cases: [string, (snapshot: Record<string, unknown>) => Record<string, unknown>][] = [
      ['"tags":["extra"', (snapshot) => ({ ...snapshot, tags: new Set(['extra']) })],
      ['"children":[]', (snapshot) => ({ ...snapshot, children: {} })],
      ['"extra"', (snapshot) => ({ ...snapshot, extra: true })],
      ['"error":"Error: late"', (snapshot) => ({ ...snapshot, error: new Error('late') })],
    ];
    for (const [shown, change] of cases) {
      const verdict = assessRuntime(loaded, altered(change));
      expect(verdict.accepted, shown).toBe(false);
      expect(verdict.problems.join(' '), shown).toContain(shown);
    }
  });

  it('refuses a runtime whose actors cannot even be created, instead of throwing', () => {
    const broken = {
      ...loaded,
      createActor: () => {
        throw new Error('boom');
      },
    } as unknown as XStateRuntime;
    expect(assessRuntime(broken, compiled).problems).toEqual([
      "checking xstate's members failed: Error: boom",
    ]);
  });
});
