import { describe, expect, it } from 'vitest';
import { type AnyActorRef, createActor, createMachine, fromCallback, sendTo, setup } from 'xstate';
import { parentOf, relay, stopOrphans } from '../../src/engine/actor-links.ts';
import { compileMachine } from '../../src/engine/compiled-machine.ts';

/**
 * The XState members outside its public types that Troupe relies on (src/engine/actor-links.ts), checked on the
 * installed xstate, on both interpreters: an XState upgrade that drops one fails here, not in a run.
 */

type Ev = { type: 'ping' } | { type: 'pong' };

function machineWithChild(onStop: () => void, seen: { self?: AnyActorRef; system?: unknown }) {
  const child = fromCallback<Ev>(({ self, system }) => {
    seen.self = self;
    seen.system = system;
    return onStop;
  });
  return setup({ types: { events: {} as Ev }, actors: { child } }).createMachine({
    id: 'parent',
    initial: 'waiting',
    invoke: { id: 'kid', src: 'child' },
    states: {
      waiting: { on: { pong: 'answered', ping: { actions: sendTo('kid', { type: 'ping' }) } } },
      answered: {},
    },
  });
}

for (const [name, build] of [
  ['xstate', (machine: ReturnType<typeof machineWithChild>) => machine],
  ['compiled', (machine: ReturnType<typeof machineWithChild>) => compileMachine(machine)],
] as const) {
  describe(`the actor internals Troupe uses (${name} interpreter)`, () => {
    it('parentOf gives a child its parent and a root actor none; relay delivers to the parent', () => {
      const seen: { self?: AnyActorRef; system?: unknown } = {};
      const actor = createActor(build(machineWithChild(() => undefined, seen))).start();
      expect(parentOf(actor)).toBeUndefined();
      const child = seen.self as AnyActorRef;
      expect(parentOf(child)).toBe(actor);
      relay(seen.system, child, actor, { type: 'pong' });
      expect(actor.getSnapshot().value).toBe('answered');
      actor.stop();
    });

    it('stopOrphans runs the stop procedure of the children a snapshot holds', () => {
      let stopped = 0;
      const seen: { self?: AnyActorRef; system?: unknown } = {};
      const actor = createActor(build(machineWithChild(() => (stopped += 1), seen))).start();
      stopOrphans(actor);
      expect(stopped).toBe(1);
      actor.stop();
    });
  });
}

it('a machine without children has nothing to stop', () => {
  const actor = createActor(createMachine({})).start();
  expect(() => stopOrphans(actor)).not.toThrow();
});

describe('on an xstate without these members', () => {
  it('relay sends the event itself, parentOf finds no parent and stopOrphans leaves the child, none of them throws', () => {
    const received: string[] = [];
    const target = { send: (event: { type: string }) => received.push(event.type) } as unknown as AnyActorRef;
    relay({}, target, target, { type: 'pong' });
    expect(received).toEqual(['pong']);
    expect(parentOf({ _parent: 'renamed' } as unknown as AnyActorRef)).toBeUndefined();
    const orphan = { _stop: 'not a function' };
    expect(() => stopOrphans({ getSnapshot: () => ({ children: { orphan } }) })).not.toThrow();
  });
});
