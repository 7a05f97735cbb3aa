import { describe, expect, it } from 'vitest';
import {
  type AnyActorRef,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  assign,
  createActor,
  createMachine,
  emit,
  initialTransition,
  raise,
  setup,
} from 'xstate';
import { compileMachine, isCompiledMachine } from '../../src/engine/compiled-machine.ts';
import { expectSameBehaviour, record } from './differential.ts';

/**
 * The parts of XState's public machine API the compiled interpreter must keep besides running actors: a machine's
 * `microstep(snapshot, event, scope)`, what a machine whose `initial` names no state does, and an emitted event
 * going through the actor scope's `emit` as it is when the action runs (an agent's effects receive its commands so).
 */

type AnyEvent = { type: string; [key: string]: unknown };

/** An actor's scope, as XState hands it to its logic (the third argument of `transition` and `microstep`). */
function scopeOf(actor: AnyActorRef): unknown {
  return (actor as unknown as { _actorScope: unknown })._actorScope;
}

/** What a microstep's snapshot shows: comparable between the two interpreters. */
function shown(snapshot: AnyMachineSnapshot) {
  return {
    value: snapshot.value,
    status: snapshot.status,
    context: snapshot.context,
    output: snapshot.output,
    tags: [...snapshot.tags],
    children: Object.keys(snapshot.children),
  };
}

/** The microsteps of `event` in the actor's current snapshot, on a machine as it runs. */
function microstepsOf(machine: AnyStateMachine, events: AnyEvent[], event: AnyEvent) {
  const actor = createActor(machine).start();
  for (const earlier of events) actor.send(earlier);
  const steps = (
    machine.microstep as (snapshot: unknown, event: AnyEvent, scope: unknown) => AnyMachineSnapshot[]
  )(actor.getSnapshot(), event, scopeOf(actor));
  actor.stop();
  return steps.map(shown);
}

describe('machine.microstep(snapshot, event, scope)', () => {
  const counting = setup({ types: { events: {} as AnyEvent, context: {} as { n: number; log: string[] } } });
  const machines: [string, AnyStateMachine, AnyEvent[], AnyEvent][] = [
    [
      'eventless transitions after the event',
      counting.createMachine({
        id: 'eventless',
        context: { n: 0, log: [] },
        initial: 'idle',
        states: {
          idle: { on: { GO: { target: 'a', actions: assign({ n: ({ context }) => context.n + 1 }) } } },
          a: { tags: ['a'], always: { target: 'b', actions: assign({ log: () => ['a'] }) } },
          b: { always: [{ guard: ({ context }) => context.n > 1, target: 'idle' }, { target: 'c' }] },
          c: { on: { GO: 'idle' } },
        },
      }),
      [],
      { type: 'GO' },
    ],
    [
      'raised events, each its own microstep',
      counting.createMachine({
        id: 'raised',
        context: { n: 0, log: [] },
        initial: 'a',
        states: {
          a: { on: { GO: { target: 'b', actions: [raise({ type: 'NEXT' }), raise({ type: 'LAST' })] } } },
          b: { on: { NEXT: { target: 'c', actions: assign({ n: 2 }) } } },
          c: { on: { LAST: 'd' } },
          d: {},
        },
      }),
      [],
      { type: 'GO' },
    ],
    [
      'a final state with output',
      counting.createMachine({
        id: 'done',
        context: { n: 3, log: [] },
        initial: 'a',
        states: { a: { on: { END: 'end' } }, end: { type: 'final' } },
        output: ({ context }) => context.n * 2,
      }),
      [],
      { type: 'END' },
    ],
    [
      'an event no transition takes',
      counting.createMachine({ id: 'ignored', context: { n: 0, log: [] }, on: { OTHER: {} } }),
      [],
      { type: 'NOTHING' },
    ],
    [
      'after earlier events',
      counting.createMachine({
        id: 'later',
        context: { n: 0, log: [] },
        initial: 'a',
        on: { INC: { actions: assign({ n: ({ context }) => context.n + 1 }) } },
        states: { a: { on: { GO: 'b' } }, b: { always: 'a' } },
      }),
      [{ type: 'INC' }, { type: 'INC' }],
      { type: 'GO' },
    ],
  ];

  it.each(machines)('returns the snapshots XState returns: %s', (_, machine, before, event) => {
    const compiled = compileMachine(machine);
    expect(isCompiledMachine(compiled)).toBe(true);
    const expected = microstepsOf(machine, before, event);
    expect(microstepsOf(compiled, before, event)).toEqual(expected);
  });

  it('returns one snapshot per microstep, the last the snapshot transition returns', () => {
    const [, machine] = machines[0] as [string, AnyStateMachine, AnyEvent[], AnyEvent];
    const steps = microstepsOf(compileMachine(machine), [], { type: 'GO' });
    expect(steps.map((step) => step.value)).toEqual(['a', 'b', 'c']);
    const actor = createActor(compileMachine(machine)).start();
    actor.send({ type: 'GO' });
    expect(shown(actor.getSnapshot())).toEqual(steps.at(-1));
    actor.stop();
  });
});

describe('a machine whose initial state does not exist', () => {
  const broken = createMachine({ id: 'broken', initial: 'nowhere', states: { a: {} } });

  it('compiles; its actor fails at start with the error XState reports', async () => {
    const compiled = compileMachine(broken);
    expect(isCompiledMachine(compiled)).toBe(true);
    const stock = await expectSameBehaviour(broken, {}, []);
    expect(stock[0]?.status).toBe('error');
    expect(stock[0]?.observer).toEqual([
      [
        'error',
        { '@error': 'Error', message: 'Initial state node "nowhere" not found on parent state node #broken' },
      ],
    ]);
  });

  it('fails before its context factory runs, as in XState (the snapshot holds only the error)', async () => {
    const withContext = createMachine({
      id: 'withContext',
      context: ({ input }: { input: number }) => {
        record('context factory');
        return { n: input };
      },
      initial: 'nowhere',
      states: { a: {} },
    });
    const stock = await expectSameBehaviour(withContext, { input: 7 }, []);
    expect(stock[0]?.status).toBe('error');
    expect(stock[0]?.records).toEqual([]);
    expect(stock[0]?.context).toBeUndefined();
  });

  it('fails when a nested state names a missing initial state, once it is entered', async () => {
    const nested = createMachine({
      id: 'nested',
      initial: 'a',
      states: { a: { on: { GO: 'b' } }, b: { initial: 'missing', states: { b1: {} } } },
    });
    const stock = await expectSameBehaviour(nested, {}, [{ type: 'GO' }]);
    expect(stock[0]?.status).toBe('active');
    expect(stock[1]?.status).toBe('error');
  });

  it('provide() builds it too; the pure initialTransition() throws the same error as on XState', () => {
    const provided = compileMachine(broken).provide({});
    expect(isCompiledMachine(provided)).toBe(true);
    const message = 'Initial state node "nowhere" not found on parent state node #broken';
    expect(() => initialTransition(broken)).toThrow(message);
    expect(() => initialTransition(compileMachine(broken))).toThrow(message);
    expect(() => initialTransition(provided)).toThrow(message);
  });

  it('an unstarted actor already holds the error snapshot', () => {
    const stock = createActor(broken).getSnapshot();
    const compiled = createActor(compileMachine(broken)).getSnapshot();
    expect(compiled.status).toBe('error');
    expect(String(compiled.error)).toBe(String(stock.error));
    expect(compiled.value).toEqual(stock.value);
  });
});

describe("an emitted event goes through the scope's emit as it is when the action runs", () => {
  const machine = setup({ types: { events: {} as AnyEvent } }).createMachine({
    id: 'emitting',
    initial: 'a',
    states: { a: { on: { GO: { target: 'b', actions: emit({ type: 'command' }) } } }, b: {} },
  });

  /** The machine as logic whose start puts its own function in the scope's emit, handing each event on after it. */
  function intercepted(logic: AnyStateMachine, seen: string[]): AnyStateMachine {
    const wrapped = Object.create(logic) as {
      start?: (snapshot: unknown, scope: { emit: (event: AnyEvent) => void }) => void;
    };
    wrapped.start = function start(snapshot, scope) {
      (logic as unknown as typeof wrapped).start?.call(this, snapshot, scope);
      const toListeners = scope.emit;
      scope.emit = (event) => {
        seen.push(`scope:${event.type}`);
        toListeners(event);
      };
    };
    return wrapped as unknown as AnyStateMachine;
  }

  it.each([
    ['XState', machine],
    ['compiled', compileMachine(machine)],
  ])('on %s: the replaced emit receives it, then the actor listeners', (_, logic) => {
    const seen: string[] = [];
    const actor = createActor(intercepted(logic, seen));
    actor.on('command', (event) => seen.push(`listener:${event.type}`));
    actor.start();
    actor.send({ type: 'GO' });
    expect(seen).toEqual(['scope:command', 'listener:command']);
    actor.stop();
  });
});
