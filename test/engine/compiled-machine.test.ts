import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type AnyActorRef,
  type AnyStateMachine,
  and,
  assign,
  cancel,
  createActor,
  createMachine,
  emit,
  enqueueActions,
  fromCallback,
  fromPromise,
  initialTransition,
  log,
  not,
  or,
  raise,
  sendParent,
  sendTo,
  setup,
  spawnChild,
  stateIn,
  stopChild,
  transition,
} from 'xstate';
import type { ResolvedLimits } from '../../src/core/limits.ts';
import type { ReasoningBlock } from '../../src/core/messages.ts';
import { modelStopReasons } from '../../src/core/model.ts';
import { compileMachine, isCompiledMachine } from '../../src/engine/compiled-machine.ts';
import {
  type AgentCheckpoint,
  type AgentEvent,
  type AgentMachineInput,
  agentMachine,
  type DecodeOutcome,
} from '../../src/machines/agent.ts';
import { agentCheckpoint } from '../machines/agent-paths.ts';
import { expectSameBehaviour, machines, type Observation, record, type Step } from './differential.ts';

/**
 * The compiled interpreter (src/engine) against XState's own, on small hand-written machines: every feature the
 * engine re-implements (transition selection, exit/entry order, eventless transitions, raised events, done states,
 * children, context, persistence) is run on both with the differential harness (./differential.ts), which
 * compares snapshots, persisted snapshots, inspection events and everything the machines' actions record; then
 * two properties: the agent machine under random events and limits, and random statecharts under random events.
 * Troupe's own machines replay their generated paths in compiled-machine.agent-paths.test.ts and
 * compiled-machine.session-paths.test.ts.
 */

type AnyEvent = { type: string; [key: string]: unknown };

const rec = (_: unknown, params: { n: string }) => record(params.n);
const r = (n: string) => ({ type: 'rec', params: { n } }) as const;
const traced = (name: string) => ({ entry: r(`entry:${name}`), exit: r(`exit:${name}`) });
const events = (...types: string[]): AnyEvent[] => types.map((type) => ({ type }));
const send = (...types: string[]): Step[] => events(...types);
const flush: Step = { flush: true };

/** The records XState's run made after each step (what the machine was meant to do). */
const recordsOf = (observations: Observation[]) => observations.map((o) => [o.step, o.records]);

describe('action order: exit, transition, entry', () => {
  const orderMachine = setup({ types: { events: {} as AnyEvent }, actions: { rec } }).createMachine({
    id: 'order',
    ...traced('root'),
    initial: 'a',
    on: {
      TO_DEEP: { target: '#order.b.b2.b22', actions: r('t:TO_DEEP@root') },
      ROOT_SELF: { target: '#order', actions: r('t:ROOT_SELF') },
      ROOT_REENTER: { target: '#order', reenter: true, actions: r('t:ROOT_REENTER') },
      TARGETLESS: { actions: r('t:TARGETLESS@root') },
      SHADOWED: { target: '.b', actions: r('t:SHADOWED@root') },
    },
    states: {
      a: {
        ...traced('a'),
        initial: 'a1',
        on: {
          TO_B: { target: 'b', actions: r('t:TO_B') },
          CHILD: { target: '.a2', actions: r('t:CHILD') },
          CHILD_REENTER: { target: '.a2', reenter: true, actions: r('t:CHILD_REENTER') },
          SELF: { target: 'a', actions: r('t:SELF@a') },
          SELF_REENTER: { target: 'a', reenter: true, actions: r('t:SELF_REENTER@a') },
          SHADOWED: { target: '.a1', actions: r('t:SHADOWED@a') },
        },
        states: {
          a1: {
            ...traced('a1'),
            on: {
              SIBLING: { target: 'a2', actions: r('t:SIBLING') },
              UP: { target: '#order.a', actions: r('t:UP') },
              UP_REENTER: { target: '#order.a', reenter: true, actions: r('t:UP_REENTER') },
              LEAF_SELF: { target: 'a1', actions: r('t:LEAF_SELF') },
              LEAF_REENTER: { target: 'a1', reenter: true, actions: r('t:LEAF_REENTER') },
              TARGETLESS: { actions: r('t:TARGETLESS@a1') },
              SHADOWED: { target: 'a2', actions: r('t:SHADOWED@a1') },
              MULTI: { actions: [r('m1'), r('m2'), r('m3')] },
            },
          },
          a2: { ...traced('a2'), on: { BACK: 'a1' } },
        },
      },
      b: {
        ...traced('b'),
        initial: 'b1',
        on: { HOME: { target: '#order.a.a2', actions: r('t:HOME') } },
        states: {
          b1: { ...traced('b1'), on: { DEEPER: 'b2' } },
          b2: {
            ...traced('b2'),
            initial: 'b21',
            states: {
              b21: { ...traced('b21'), on: { NEXT: 'b22' } },
              b22: { ...traced('b22'), on: { UP_TO_B: { target: '#order.b', actions: r('t:UP_TO_B') } } },
            },
          },
        },
      },
    },
  });

  it('between siblings, into and out of nested states', async () => {
    const stock = await expectSameBehaviour(
      orderMachine,
      {},
      send('SIBLING', 'BACK', 'TO_B', 'DEEPER', 'NEXT', 'UP_TO_B', 'HOME'),
    );
    expect(recordsOf(stock).slice(0, 4)).toEqual([
      ['start', ['entry:root', 'entry:a', 'entry:a1']],
      ['send SIBLING', ['exit:a1', 't:SIBLING', 'entry:a2']],
      ['send BACK', ['exit:a2', 'entry:a1']],
      ['send TO_B', ['exit:a1', 'exit:a', 't:TO_B', 'entry:b', 'entry:b1']],
    ]);
  });

  it("the initial transitions' own actions: the root's at start, a compound state's each time it is entered", async () => {
    const initialActions = createMachine({
      id: 'initials',
      initial: { target: 'a', actions: () => record('initial:root') },
      entry: () => record('entry:root'),
      states: {
        a: {
          entry: () => record('entry:a'),
          initial: { target: 'a1', actions: () => record('initial:a') },
          states: { a1: { entry: () => record('entry:a1') } },
          on: { AGAIN: { target: 'a', reenter: true } },
        },
      },
    } as never);
    const stock = await expectSameBehaviour(initialActions, {}, send('AGAIN'));
    expect(recordsOf(stock)).toEqual([
      ['start', ['entry:root', 'initial:root', 'entry:a', 'initial:a', 'entry:a1']],
      ['send AGAIN', ['entry:a', 'initial:a', 'entry:a1']],
      ['stop', []],
    ]);
  });

  it('to a deeply nested target, back to an ancestor, and to the root with and without reenter', async () => {
    const stock = await expectSameBehaviour(
      orderMachine,
      {},
      send('TO_DEEP', 'UP_TO_B', 'TO_DEEP', 'ROOT_SELF', 'TO_DEEP', 'ROOT_REENTER'),
    );
    expect(recordsOf(stock)[1]).toEqual([
      'send TO_DEEP',
      ['exit:a1', 'exit:a', 't:TO_DEEP@root', 'entry:b', 'entry:b2', 'entry:b22'],
    ]);
    expect(recordsOf(stock)[6]?.[1]).toEqual([
      'exit:b22',
      'exit:b2',
      'exit:b',
      'exit:root',
      't:ROOT_REENTER',
      'entry:root',
      'entry:a',
      'entry:a1',
    ]);
  });

  it('self-transitions with and without reenter, on a leaf and on a compound state, and to an ancestor', async () => {
    await expectSameBehaviour(
      orderMachine,
      {},
      send(
        'UP',
        'UP_REENTER',
        'LEAF_SELF',
        'LEAF_REENTER',
        'SELF',
        'SELF_REENTER',
        'CHILD',
        'BACK',
        'CHILD_REENTER',
        'BACK',
      ),
    );
  });

  it('targetless transitions, several actions, the deepest node wins, unknown events', async () => {
    const stock = await expectSameBehaviour(
      orderMachine,
      {},
      send('TARGETLESS', 'MULTI', 'SHADOWED', 'SHADOWED', 'TO_B', 'SHADOWED', 'TARGETLESS', 'UNKNOWN'),
    );
    expect(stock[1]?.records).toEqual(['t:TARGETLESS@a1']);
    expect(stock[1]?.sameSnapshot).toBe(true);
    expect(stock[3]?.records).toEqual(['exit:a1', 't:SHADOWED@a1', 'entry:a2']);
    expect(stock[4]?.records).toEqual(['exit:a2', 't:SHADOWED@a', 'entry:a1']);
  });

  const guarded = setup({
    types: { context: {} as { n: number }, events: {} as AnyEvent },
    actions: { rec },
    guards: {
      smallEven: ({ context }) => context.n % 2 === 0 && context.n < 4,
      atLeast: ({ context }, params: { min: number }) => context.n >= params.min,
    },
  }).createMachine({
    id: 'guarded',
    context: { n: 0 },
    initial: 'outer',
    on: {
      INC: { actions: assign({ n: ({ context }) => context.n + 1 }) },
      PICK: { actions: r('pick:root') },
    },
    states: {
      outer: {
        initial: 'inner',
        on: {
          PICK: [
            { guard: ({ context }) => context.n === 3, actions: r('pick:outer') },
            { guard: ({ context }) => context.n === 4, target: '.other', actions: r('pick:outer->other') },
          ],
        },
        states: {
          inner: {
            on: {
              PICK: [
                { guard: ({ event }) => event.n === 1, actions: r('pick:inline') },
                { guard: 'smallEven', actions: r('pick:named') },
                { guard: { type: 'atLeast', params: { min: 5 } }, actions: r('pick:params') },
                {
                  guard: { type: 'atLeast', params: ({ event }) => ({ min: Number(event.min ?? 99) }) },
                  actions: r('pick:params-fn'),
                },
              ],
            },
          },
          other: { on: { PICK: { target: 'inner', actions: r('pick:other') } } },
        },
      },
    },
  });

  it('guarded candidate lists: the first passing wins, none passing falls through to the parent', async () => {
    const steps: Step[] = [
      { type: 'PICK', n: 1 },
      { type: 'PICK' },
      { type: 'INC' },
      { type: 'PICK', min: 1 },
      { type: 'PICK', n: 1 },
      { type: 'PICK' },
      { type: 'INC' },
      { type: 'PICK' },
      { type: 'INC' },
      { type: 'PICK' },
      { type: 'PICK' },
      { type: 'INC' },
      { type: 'PICK' },
      { type: 'PICK' },
      { type: 'INC' },
      { type: 'PICK' },
    ];
    const stock = await expectSameBehaviour(guarded, { probes: [{ type: 'PICK' }] }, steps);
    expect(stock.flatMap((o) => o.records)).toEqual([
      'pick:inline',
      'pick:named',
      'pick:params-fn',
      'pick:inline',
      'pick:root',
      'pick:named',
      'pick:outer',
      'pick:outer',
      'pick:outer->other',
      'pick:other',
      'pick:params',
    ]);
  });

  const wildcards = setup({ types: { events: {} as AnyEvent }, actions: { rec } }).createMachine({
    id: 'wild',
    initial: 'a',
    on: { '*': { actions: r('root:*') }, 'foo.*': { actions: r('root:foo.*') } },
    states: {
      a: {
        initial: 'leaf',
        on: {
          'foo.*': [{ guard: ({ event }) => event.ok === true, actions: r('a:foo.*') }],
          'foo.bar.*': { actions: r('a:foo.bar.*') },
          'foo.bar': [
            { guard: ({ event }) => event.skip !== true, actions: r('a:foo.bar') },
            { guard: ({ event }) => event.ok === true, actions: r('a:foo.bar(ok)') },
          ],
          'xstate.*': { actions: r('a:xstate.*') },
        },
        states: {
          leaf: { on: { 'foo.baz': { target: 'leaf', reenter: true, actions: r('leaf:foo.baz') } } },
        },
      },
    },
  });

  it('wildcard descriptors: exact first, then the longest wildcard, then the parent', async () => {
    const steps: Step[] = [
      { type: 'foo.bar' },
      { type: 'foo.bar', skip: true },
      { type: 'foo.bar', skip: true, ok: true },
      { type: 'foo.bar.qux' },
      { type: 'foo.baz' },
      { type: 'foo.quux' },
      { type: 'foo.quux', ok: true },
      { type: 'foo' },
      { type: 'other' },
      { type: 'xstate.custom' },
    ];
    const stock = await expectSameBehaviour(wildcards, {}, steps);
    expect(stock.slice(1, -1).map((o) => o.records)).toEqual([
      ['a:foo.bar'],
      ['a:foo.bar.*'],
      ['a:foo.bar(ok)'],
      ['a:foo.bar.*'],
      ['leaf:foo.baz'],
      ['root:foo.*'],
      ['a:foo.*'],
      ['root:foo.*'],
      ['root:*'],
      ['a:xstate.*'],
    ]);
  });

  it('a machine whose root is atomic, and transitions with inline and unimplemented actions', async () => {
    const atomic = createMachine({
      id: 'flat',
      context: { n: 0 },
      on: {
        INC: { actions: assign({ n: ({ context }) => context.n + 1 }) },
        INLINE: {
          actions: function inlineAction() {
            record('inline');
          },
        },
        ANON: { actions: [() => record('anonymous')] },
        MISSING: { actions: 'notImplemented' },
      },
    });
    await expectSameBehaviour(atomic, {}, send('INC', 'INLINE', 'ANON', 'MISSING', 'INC'));
  });
});

describe('guards', () => {
  const guardMachine = setup({
    types: { context: {} as { n: number; flag: boolean }, events: {} as AnyEvent },
    actions: { rec },
    guards: {
      isEven: ({ context }) => context.n % 2 === 0,
      flag: ({ context }) => context.flag,
      atLeast: ({ context }, params: { min: number }) => context.n >= params.min,
      boom: () => {
        throw new Error('boom');
      },
    },
  }).createMachine({
    id: 'guards',
    context: { n: 0, flag: false },
    initial: 'idle',
    on: {
      INC: { actions: assign({ n: ({ context }) => context.n + 1 }) },
      FLIP: { actions: assign({ flag: ({ context }) => !context.flag }) },
      TOGGLE: { target: '.idle.y' },
    },
    states: {
      idle: {
        initial: 'x',
        states: {
          x: {
            on: {
              BOOM: { guard: 'boom', target: 'y' },
              BOOM_PARAMS: { guard: { type: 'boom', params: { why: 1 } } as never, target: 'y' },
              BOOM_INLINE: {
                guard: () => {
                  throw new Error('inline boom');
                },
                target: 'y',
              },
              BOOM_AND: { guard: and(['flag', 'boom']), target: 'y' },
              MISSING: { guard: 'missing' as never, target: 'y' },
              BOOM_ALWAYS: 'alwaysBoom',
            },
          },
          y: { on: { BACK: 'x' } },
          alwaysBoom: { always: { guard: 'boom', target: 'x' } },
        },
        on: {
          TEST: [
            { guard: and(['flag', not('isEven')]), actions: r('flag and odd') },
            {
              guard: or([and(['flag', 'isEven']), { type: 'atLeast', params: { min: 3 } }]),
              actions: r('or'),
            },
            { guard: and([stateIn('#guards.idle.y'), not('flag')]), actions: r('in y, no flag') },
            { guard: stateIn({ idle: 'x' }), actions: r('in x') },
            { guard: not(stateIn('#guards.idle')), actions: r('never') },
            { actions: r('fallback') },
          ],
        },
      },
    },
  });

  it('named, inline, parameterised, and/or/not and stateIn guards', async () => {
    const stock = await expectSameBehaviour(
      guardMachine,
      { probes: [{ type: 'TEST' }, { type: 'BACK' }] },
      send(
        'TEST',
        'FLIP',
        'TEST',
        'INC',
        'TEST',
        'FLIP',
        'TOGGLE',
        'TEST',
        'INC',
        'INC',
        'TEST',
        'BACK',
        'TEST',
      ),
    );
    expect(stock.flatMap((o) => o.records)).toEqual([
      'in x',
      'or',
      'flag and odd',
      'in y, no flag',
      'or',
      'or',
    ]);
  });

  for (const event of ['BOOM', 'BOOM_PARAMS', 'BOOM_INLINE', 'BOOM_AND', 'MISSING', 'BOOM_ALWAYS']) {
    it(`a guard that throws makes the actor fail with XState's message (${event})`, async () => {
      const stock = await expectSameBehaviour(guardMachine, {}, send('FLIP', event, 'INC'));
      expect(stock[2]?.status).toBe('error');
      const expected = {
        BOOM: "Unable to evaluate guard 'boom' in transition for event 'BOOM' in state node 'guards.idle.x':\nboom",
        BOOM_PARAMS:
          "Unable to evaluate guard 'boom' in transition for event 'BOOM_PARAMS' in state node 'guards.idle.x':\nboom",
        BOOM_INLINE:
          "Unable to evaluate guard in transition for event 'BOOM_INLINE' in state node 'guards.idle.x':\ninline boom",
        BOOM_AND:
          "Unable to evaluate guard in transition for event 'BOOM_AND' in state node 'guards.idle.x':\nboom",
        MISSING:
          "Unable to evaluate guard 'missing' in transition for event 'MISSING' in state node 'guards.idle.x':\nGuard 'missing' is not implemented.'.",
        BOOM_ALWAYS: 'boom',
      }[event];
      expect(stock[2]?.error).toEqual({ '@error': 'Error', message: expected });
    });
  }

  it('guards resolved once: a name for a built-in, a name for a name, short-circuits past a missing guard, params evaluated each time', async () => {
    const resolvedOnce = setup({
      types: { context: {} as { n: number; armed: boolean }, events: {} as AnyEvent },
      actions: { rec },
      guards: {
        armed: ({ context }) => context.armed,
        positive: ({ context }) => context.n > 0,
        // A named built-in, and a name whose implementation is a name and one that is `{ type, params }`.
        bothPositiveAndEven: and(['positive', ({ context }) => context.n % 2 === 0]),
        alias: 'positive' as never,
        aliasWithParams: { type: 'above', params: { min: 2 } } as never,
        above: ({ context }, params: { min: number }) => {
          record(`above ${params.min}`);
          return context.n > params.min;
        },
      },
    }).createMachine({
      id: 'resolvedOnce',
      context: { n: 0, armed: false },
      on: {
        INC: { actions: assign({ n: ({ context }) => context.n + 1 }) },
        ARM: { actions: assign({ armed: true }) },
        TEST: [
          // The missing guard is not evaluated while the one before it fails (and) or passes (or).
          { guard: and(['armed', 'missing' as never, 'alias']), actions: r('never') },
          { guard: 'bothPositiveAndEven', actions: r('positive and even') },
          { guard: 'aliasWithParams', actions: r('named params passed') },
          {
            guard: { type: 'above', params: ({ context }) => ({ min: context.n * 2 - 1 }) },
            actions: r('params function passed'),
          },
          { guard: 'alias', actions: r('positive') },
        ],
        TEST_OR: { guard: or([not('armed'), 'missing' as never]), actions: r('unarmed') },
      },
    });
    const stock = await expectSameBehaviour(
      resolvedOnce,
      { probes: [{ type: 'TEST' }] },
      send('TEST', 'INC', 'TEST', 'INC', 'TEST', 'INC', 'TEST', 'TEST_OR', 'ARM', 'TEST'),
    );
    // The guard named 'above' records each evaluation (probes included): only the actions' records are compared.
    expect(stock.flatMap((o) => o.records).filter((entry) => !String(entry).startsWith('above '))).toEqual([
      'params function passed',
      'positive',
      'positive and even',
      'named params passed',
      'unarmed',
    ]);
    expect(stock[9]?.status).toBe('active');
    expect(stock[10]?.status).toBe('error');
    expect(stock[10]?.error).toMatchObject({
      message: expect.stringContaining("Guard 'missing' is not implemented"),
    });
  });

  it('a guard that throws while the machine starts', async () => {
    const failing = setup({
      guards: {
        boom: () => {
          throw new Error('boom at start');
        },
      },
    }).createMachine({
      id: 'startBoom',
      initial: 'a',
      states: { a: { always: { guard: 'boom', target: 'b' } }, b: {} },
    });
    const stock = await expectSameBehaviour(failing, {}, send('ANY'));
    expect(stock[0]?.status).toBe('error');
  });
});

describe('eventless transitions', () => {
  const alwaysMachine = setup({
    types: { context: {} as { count: number; hops: number }, events: {} as AnyEvent },
    actions: { rec },
  }).createMachine({
    id: 'always',
    context: { count: 0, hops: 0 },
    initial: 'idle',
    states: {
      idle: {
        on: {
          GO: 'h1',
          BUMP: { actions: assign({ count: ({ context }) => context.count + 1 }) },
          COUNT: 'counting',
          NOOP: 'noop',
          NESTED: 'parent',
        },
      },
      h1: { ...traced('h1'), always: { target: 'h2', actions: r('t:h1->h2') } },
      h2: {
        ...traced('h2'),
        always: [
          { guard: ({ context }) => context.count > 0, target: 'h3b', actions: r('t:h2->h3b') },
          { target: 'h3', actions: r('t:h2->h3') },
        ],
      },
      h3: {
        ...traced('h3'),
        always: { target: 'idle', actions: assign({ hops: ({ context }) => context.hops + 1 }) },
      },
      h3b: {
        ...traced('h3b'),
        always: { target: 'idle', actions: assign({ hops: ({ context }) => context.hops + 10 }) },
      },
      counting: {
        always: {
          guard: ({ context }) => context.count < 3,
          actions: [assign({ count: ({ context }) => context.count + 1 }), r('count')],
        },
        on: { RESET: { actions: assign({ count: 0 }) }, BACK: 'idle' },
      },
      noop: { always: { actions: r('always:noop') }, on: { PING: { actions: r('ping') }, BACK: 'idle' } },
      parent: {
        ...traced('parent'),
        initial: 'child',
        always: { guard: ({ context }) => context.count >= 5, target: 'idle', actions: r('t:parent->idle') },
        on: { BUMP: { actions: assign({ count: ({ context }) => context.count + 1 }) } },
        states: {
          child: {
            ...traced('child'),
            always: { guard: ({ context }) => context.count === 4, target: 'child2' },
          },
          child2: traced('child2'),
        },
      },
    },
  });

  it('several hops in one macrostep, guarded', async () => {
    const stock = await expectSameBehaviour(alwaysMachine, {}, send('GO', 'BUMP', 'GO'));
    expect(stock[1]?.records).toEqual([
      'entry:h1',
      'exit:h1',
      't:h1->h2',
      'entry:h2',
      'exit:h2',
      't:h2->h3',
      'entry:h3',
      'exit:h3',
    ]);
    expect(stock[3]?.context).toEqual({ count: 1, hops: 11 });
  });

  it('a targetless eventless transition with assign repeats until its guard fails; without assign it runs once', async () => {
    const stock = await expectSameBehaviour(
      alwaysMachine,
      {},
      send('COUNT', 'RESET', 'BACK', 'NOOP', 'PING', 'PING', 'BACK'),
    );
    expect(stock[1]?.records).toEqual(['count', 'count', 'count']);
    expect(stock[4]?.records).toEqual(['always:noop']);
    expect(stock[5]?.records).toEqual(['ping', 'always:noop']);
  });

  it('an eventless transition on a compound parent', async () => {
    await expectSameBehaviour(
      alwaysMachine,
      {},
      send('BUMP', 'BUMP', 'BUMP', 'NESTED', 'BUMP', 'BUMP', 'BUMP'),
    );
  });

  const cycle = (initial: 'a' | 'b') =>
    createMachine({
      id: 'cycle',
      options: { maxIterations: 5 },
      initial,
      states: {
        a: { on: { LOOP: 'b', RAISE: 'r1' } },
        b: { always: 'c' },
        c: { always: 'b' },
        r1: { entry: raise({ type: 'PING' }), on: { PING: 'r2' } },
        r2: { entry: raise({ type: 'PING' }), on: { PING: 'r1' } },
      },
    });

  it('an eventless cycle reaches maxIterations: the actor fails with the same message', async () => {
    const stock = await expectSameBehaviour(cycle('a'), {}, send('LOOP', 'LOOP'));
    expect(stock[1]?.status).toBe('error');
    expect(stock[1]?.error).toMatchObject({
      message: expect.stringMatching(
        /^Infinite loop detected: the machine has processed more than 5 microsteps/,
      ),
    });
  });

  it('a cycle of raised events reaches maxIterations', async () => {
    const stock = await expectSameBehaviour(cycle('a'), {}, send('RAISE'));
    expect(stock[1]?.status).toBe('error');
  });

  it('an eventless cycle from the initial state fails the actor at start', async () => {
    const stock = await expectSameBehaviour(cycle('b'), {}, send('LOOP'));
    expect(stock[0]?.status).toBe('error');
  });
});

describe('assign', () => {
  it("copies a context with an own __proto__ key as XState does (assignment makes it the copy's prototype)", () => {
    const machine = createMachine({
      types: {} as { context: Record<string, unknown> },
      context: { n: 0 },
      on: { INC: { actions: assign({ n: ({ context }) => (context.n as number) + 1 }) } },
    });
    // A snapshot read back from JSON: its context keeps `__proto__` as an own key.
    const persisted = JSON.parse(
      JSON.stringify(createActor(machine).getPersistedSnapshot()).replace(
        '"context":{"n":0}',
        '"context":{"n":0,"__proto__":{"inherited":true}}',
      ),
    );
    const contextAfterInc = (logic: AnyStateMachine) => {
      const actor = createActor(logic, { snapshot: persisted });
      actor.start();
      expect(Object.hasOwn(actor.getSnapshot().context, '__proto__')).toBe(true);
      actor.send({ type: 'INC' });
      const context = actor.getSnapshot().context as Record<string, unknown>;
      actor.stop();
      return { n: context.n, ownProto: Object.hasOwn(context, '__proto__'), inherited: context.inherited };
    };
    const compiled = compileMachine(machine);
    expect(isCompiledMachine(compiled)).toBe(true);
    expect(contextAfterInc(machine)).toEqual({ n: 1, ownProto: false, inherited: true });
    expect(contextAfterInc(compiled)).toEqual(contextAfterInc(machine));
  });
});

describe('raise, delays, emit, enqueueActions, log', () => {
  const raiseMachine = setup({
    types: { context: {} as { n: number; ms: number }, events: {} as AnyEvent, emitted: {} as AnyEvent },
    actions: { rec },
    guards: { isEven: ({ context }) => context.n % 2 === 0 },
    delays: { slow: ({ context }) => context.ms },
  }).createMachine({
    id: 'raise',
    context: { n: 0, ms: 200 },
    initial: 'a',
    on: {
      R1: { actions: r('R1@root') },
      R2: { actions: r('R2@root') },
      LATER: { actions: r('LATER@root') },
    },
    states: {
      a: {
        on: {
          GO: { target: 'b', actions: [raise({ type: 'R1' }), r('t:GO')] },
          TIMERS: 'timed',
          ENQUEUE: 'enqueue',
          EMIT: 'emitting',
        },
      },
      b: {
        entry: [raise({ type: 'R2' }), r('entry:b')],
        always: { target: 'c', actions: r('t:b->c') },
      },
      c: {
        entry: r('entry:c'),
        on: { R1: { target: 'd', actions: r('R1@c') }, R2: { actions: r('R2@c') } },
      },
      d: { entry: r('entry:d'), on: { BACK: 'a' } },
      timed: {
        entry: [
          raise({ type: 'LATER' }, { delay: 100, id: 'later' }),
          raise({ type: 'CANCELLED' }, { delay: 150, id: 'cancelled' }),
          raise(({ context }) => ({ type: 'SLOW', ms: context.ms }), { delay: 'slow' }),
          sendTo(({ self }) => self, { type: 'SELF_SENT' }, { delay: 120 }),
          cancel('cancelled'),
        ],
        after: { 50: { actions: r('after 50') }, 300: 'a' },
        on: {
          SLOW: { actions: r('slow') },
          SELF_SENT: { actions: r('self sent') },
          CANCELLED: { actions: r('never') },
        },
      },
      enqueue: {
        entry: enqueueActions(({ enqueue, check, context }) => {
          enqueue({ type: 'rec', params: { n: `enqueue n=${context.n}` } });
          if (check('isEven')) enqueue.assign({ n: ({ context: c }) => c.n + 1 });
          if (check('isEven')) enqueue({ type: 'rec', params: { n: 'still even' } });
          enqueue.raise({ type: 'RAISED' });
          enqueue.emit({ type: 'enqueued' });
          enqueue(() => record('inline in enqueue'));
          enqueue(log('logged in enqueue'));
        }),
        on: {
          RAISED: {
            actions: enqueueActions(({ enqueue, check }) => {
              if (check(stateIn('#raise.enqueue')))
                enqueue({ type: 'rec', params: { n: 'raised in enqueue' } });
            }),
          },
          BACK: 'a',
        },
      },
      emitting: {
        entry: [
          emit({ type: 'notify', value: 1 }),
          emit(({ context }) => ({ type: 'counted', count: context.n })),
          log('hello'),
          log(({ context }) => `n is ${context.n}`, 'label'),
        ],
        on: { BACK: 'a', AGAIN: { target: 'emitting', reenter: true } },
      },
    },
  });

  it('raised events are processed after eventless transitions, in order', async () => {
    const stock = await expectSameBehaviour(raiseMachine, {}, send('GO', 'BACK'));
    expect(stock[1]?.records).toEqual(['t:GO', 'entry:b', 't:b->c', 'entry:c', 'R1@c', 'entry:d', 'R2@root']);
  });

  it('delayed raise, delayed sendTo, cancel and after, on a simulated clock', async () => {
    const stock = await expectSameBehaviour(raiseMachine, {}, [
      ...send('TIMERS'),
      { advance: 60 },
      { advance: 50 },
      { advance: 30 },
      { advance: 100 },
      { advance: 100 },
      ...send('TIMERS'),
      { advance: 10 },
    ]);
    expect(stock.flatMap((o) => o.records)).toEqual(['after 50', 'LATER@root', 'self sent', 'slow']);
  });

  it('delayed transitions of the initial state, cancelled when it is left early', async () => {
    const timers = setup({ types: { events: {} as AnyEvent }, actions: { rec } }).createMachine({
      id: 'timers',
      initial: 'waiting',
      states: {
        waiting: {
          entry: r('entry:waiting'),
          after: { 100: { target: 'late', actions: r('after 100') } },
          on: { HURRY: 'early', AGAIN: { target: 'waiting', reenter: true } },
        },
        early: { on: { BACK: 'waiting' } },
        late: { type: 'final' },
      },
    });
    await expectSameBehaviour(timers, {}, [
      { advance: 50 },
      ...send('AGAIN'),
      { advance: 60 },
      ...send('HURRY'),
      { advance: 100 },
      ...send('BACK'),
      { advance: 100 },
    ]);
  });

  it('enqueueActions, emit and log', async () => {
    const stock = await expectSameBehaviour(
      raiseMachine,
      {},
      send('ENQUEUE', 'BACK', 'ENQUEUE', 'BACK', 'EMIT', 'AGAIN'),
    );
    expect(stock[1]?.records).toEqual([
      'enqueue n=0',
      'still even',
      'inline in enqueue',
      'raised in enqueue',
    ]);
    expect(stock[1]?.emitted).toEqual([{ type: 'enqueued' }]);
    expect(stock[5]?.emitted).toEqual([
      { type: 'notify', value: 1 },
      { type: 'counted', count: 1 },
    ]);
    expect(stock[5]?.logs).toEqual([['hello'], ['label', 'n is 1']]);
  });

  it("an emit resolved with a scope other than the running actor's own goes to that scope's executor", () => {
    const emitter = compileMachine(
      createMachine({ initial: 'a', states: { a: { on: { GO: { actions: emit({ type: 'out' }) } } } } }),
    );
    const actor = createActor(emitter).start();
    const executed: { type: string; params: unknown }[] = [];
    const deferred: (() => void)[] = [];
    // The running actor as `self`, with an executor and a deferral of the caller's (a tool that steps a machine).
    const scope = {
      self: actor,
      id: actor.id,
      sessionId: actor.sessionId,
      logger: () => {},
      system: actor.system,
      defer: (fn: () => void) => deferred.push(fn),
      emit: () => {},
      stopChild: () => {},
      actionExecutor: (action: { type: string; params: unknown }) => executed.push(action),
    };
    const emitted: unknown[] = [];
    actor.on('out', (event) => emitted.push(event));
    emitter.transition(actor.getSnapshot(), { type: 'GO' }, scope as never);
    expect(executed).toMatchObject([{ type: 'xstate.emit', params: { event: { type: 'out' } } }]);
    expect(deferred).toEqual([]);
    expect(emitted).toEqual([]);
    actor.send({ type: 'GO' });
    expect(emitted).toEqual([{ type: 'out' }]);
    actor.stop();
  });
});

describe('final states', () => {
  const finalMachine = (output: 'function' | 'value' | 'none') =>
    setup({
      types: { context: {} as { result: unknown }, events: {} as AnyEvent },
      actions: { rec },
    }).createMachine({
      id: 'fin',
      ...traced('root'),
      tags: ['root-tag'],
      context: { result: null },
      initial: 'work',
      states: {
        work: {
          ...traced('work'),
          tags: ['work-tag'],
          initial: 'step1',
          states: {
            step1: { ...traced('step1'), on: { NEXT: 'step2', FINISH_PLAIN: 'plainDone' } },
            step2: { ...traced('step2'), on: { FINISH: 'done' } },
            done: {
              type: 'final',
              ...traced('done'),
              output: ({ event }) => ({ from: 'done', via: event.type }),
            },
            plainDone: { type: 'final', ...traced('plainDone') },
          },
          onDone: [
            {
              guard: ({ event }) => event.output !== undefined,
              target: 'reported',
              actions: [assign({ result: ({ event }) => event.output }), r('onDone:output')],
            },
            { target: 'reported', actions: r('onDone:plain') },
          ],
        },
        reported: {
          ...traced('reported'),
          on: { END: 'end', END_VALUE: 'endValue', END_PLAIN: 'endPlain', AGAIN: 'work' },
        },
        end: {
          type: 'final',
          ...traced('end'),
          tags: ['end-tag'],
          output: ({ context }) => ({ result: context.result }),
        },
        endValue: { type: 'final', ...traced('endValue'), output: 42 },
        endPlain: { type: 'final', ...traced('endPlain') },
      },
      ...(output === 'function'
        ? { output: ({ context, event }) => ({ context, event }) }
        : output === 'value'
          ? { output: 'constant' }
          : {}),
    });

  it('a final child of a compound state raises its done event, with and without output', async () => {
    const stock = await expectSameBehaviour(
      finalMachine('none'),
      {},
      send('NEXT', 'FINISH', 'AGAIN', 'FINISH_PLAIN'),
    );
    expect(stock[2]?.records).toEqual([
      'exit:step2',
      'entry:done',
      'exit:done',
      'exit:work',
      'onDone:output',
      'entry:reported',
    ]);
    expect(stock[4]?.records).toContain('onDone:plain');
  });

  for (const output of ['function', 'value', 'none'] as const) {
    for (const end of ['END', 'END_VALUE', 'END_PLAIN']) {
      it(`the machine's final state ends it (machine output: ${output}; ${end}), exit actions run`, async () => {
        const stock = await expectSameBehaviour(
          finalMachine(output),
          {},
          send('NEXT', 'FINISH', end, 'NEXT'),
        );
        expect(stock[3]?.status).toBe('done');
        expect(stock[3]?.records.slice(-3)).toContain('exit:root');
      });
    }
  }

  it('a machine that is done as it starts (an initial final state, or reached through eventless transitions)', async () => {
    const atOnce = createMachine({
      id: 'atOnce',
      initial: 'end',
      states: { end: { type: 'final' } },
      output: 7,
    });
    await expectSameBehaviour(atOnce, {}, send('ANY'));
    const through = setup({ actions: { rec } }).createMachine({
      id: 'through',
      initial: 'a',
      output: ({ event }) => event,
      states: {
        a: { ...traced('a'), always: 'b' },
        b: {
          initial: 'b1',
          states: { b1: { always: 'b2' }, b2: { type: 'final', output: { inner: true } } },
          onDone: { target: 'c', actions: r('b done') },
        },
        c: { type: 'final', ...traced('c'), output: ({ event }) => ({ last: event.type }) },
      },
    });
    await expectSameBehaviour(through, {}, send('ANY'));
  });

  it("a done machine's tags, meta and JSON", async () => {
    const tagged = createMachine({
      id: 'tagged',
      tags: ['root'],
      meta: { level: 'root' },
      initial: 'a',
      states: {
        a: {
          tags: ['a', 'shared'],
          meta: { level: 'a' },
          initial: 'a1',
          states: { a1: { tags: ['a1'], meta: { level: 'a1' }, on: { END: '#tagged.end' } } },
        },
        end: { type: 'final', tags: ['end', 'shared'], meta: { level: 'end' } },
      },
    });
    await expectSameBehaviour(tagged, {}, send('END'));
  });
});

describe('children', () => {
  const childMachine = setup({
    types: { context: {} as { got: string[]; input: unknown }, events: {} as AnyEvent, input: {} as unknown },
  }).createMachine({
    id: 'child',
    context: ({ input }) => ({ got: [], input }),
    initial: 'waiting',
    states: {
      waiting: {
        on: {
          PING: {
            actions: [
              assign({ got: ({ context, event }) => [...context.got, event.type] }),
              sendParent({ type: 'PONG' }),
            ],
          },
          FINISH: 'done',
          FAIL: {
            actions: () => {
              throw new Error('child failed');
            },
          },
        },
      },
      done: { type: 'final', output: ({ context }) => ({ got: context.got }) },
    },
  });

  const callback = fromCallback<AnyEvent, unknown>(({ sendBack, receive, input }) => {
    record(['cb:start', input]);
    receive((event) => {
      record(['cb:got', input, event.type]);
      if (event.type === 'ECHO') sendBack({ type: 'ECHOED', from: input });
    });
    return () => record(['cb:stop', input]);
  });
  const promise = fromPromise<{ value: unknown }, { value?: unknown; fail?: boolean }>(async ({ input }) => {
    if (input.fail) throw new Error('rejected');
    return { value: input.value };
  });

  const parent = setup({
    types: { context: {} as { result: unknown; ref: unknown; n: number }, events: {} as AnyEvent },
    actions: { rec },
    actors: { cb: callback, promise, child: childMachine },
    guards: {
      neverForErrors: () => {
        record('guard evaluated');
        return false;
      },
    },
  }).createMachine({
    id: 'parent',
    context: { result: null, ref: null, n: 0 },
    invoke: { id: 'rootCb', src: 'cb', input: 'root', systemId: 'root-callback' },
    entry: sendTo('rootCb', { type: 'HELLO' }),
    initial: 'idle',
    on: { PONG: { actions: r('pong@root') }, ECHO_ROOT: { actions: sendTo('rootCb', { type: 'ECHO' }) } },
    states: {
      idle: {
        on: {
          LOAD: 'loading',
          LOAD_FAIL: 'failing',
          LOAD_UNHANDLED: 'unhandled',
          LOAD_GUARDED: 'guardedError',
          CHILD: 'withChild',
          CB: 'withCb',
          SPAWN: 'spawning',
          END: 'end',
        },
      },
      loading: {
        invoke: {
          id: 'p',
          src: 'promise',
          input: { value: 1 },
          onDone: { target: 'idle', actions: assign({ result: ({ event }) => event.output }) },
          onError: { target: 'idle', actions: r('unexpected') },
        },
      },
      failing: {
        invoke: {
          id: 'pf',
          src: 'promise',
          input: { fail: true },
          onDone: 'idle',
          onError: {
            target: 'idle',
            actions: assign({ result: ({ event }) => (event.error as Error).message }),
          },
        },
      },
      unhandled: { invoke: { id: 'pu', src: 'promise', input: { fail: true } } },
      guardedError: {
        invoke: {
          id: 'pg',
          src: 'promise',
          input: { fail: true },
          onError: { guard: 'neverForErrors', target: 'idle' },
        },
      },
      withChild: {
        entry: sendTo('kid', { type: 'PING' }),
        invoke: {
          id: 'kid',
          src: 'child',
          input: ({ context }: { context: { n: number } }) => ({ n: context.n }),
          onDone: {
            target: 'idle',
            actions: [assign({ result: ({ event }) => event.output }), r('kid done')],
          },
          onError: { target: 'idle', actions: r('kid failed') },
          onSnapshot: { actions: r('kid snapshot') },
        },
        on: {
          PONG: { actions: r('pong@withChild') },
          PING_KID: { actions: sendTo('kid', { type: 'PING' }) },
          FINISH_KID: { actions: sendTo('kid', { type: 'FINISH' }) },
          FAIL_KID: { actions: sendTo('kid', { type: 'FAIL' }) },
          LEAVE: 'idle',
        },
      },
      withCb: {
        entry: sendTo('c', { type: 'ECHO' }),
        invoke: { id: 'c', src: 'cb', input: 'nested' },
        on: { ECHOED: { actions: r('echoed') }, LEAVE: 'idle', END: 'end' },
      },
      spawning: {
        entry: [
          spawnChild('cb', { id: 'sp', input: 'spawned' }),
          spawnChild('cb', { input: 'anonymous' }),
          assign({ ref: ({ spawn }) => spawn('child', { id: 'assigned', input: 'from assign' }) }),
          assign({ n: ({ spawn }) => (spawn('cb', { input: 'unnamed' }) ? 1 : 0) }),
          sendTo('sp', { type: 'ECHO' }),
        ],
        on: {
          PING_REF: { actions: sendTo(({ context }) => context.ref as AnyActorRef, { type: 'PING' }) },
          STOP_SP: { actions: stopChild('sp') },
          STOP_REF: { actions: stopChild(({ context }) => context.ref as never) },
          LEAVE: 'idle',
          END: 'end',
        },
      },
      end: { type: 'final' },
    },
  });

  it('invoked promises (resolved and rejected) with onDone and onError', async () => {
    await expectSameBehaviour(parent, {}, [
      ...send('LOAD'),
      flush,
      ...send('LOAD_FAIL'),
      flush,
      ...send('ECHO_ROOT'),
    ]);
  });

  it('an invoked child machine: sendTo in the same entry, sendParent, onSnapshot, onDone, stopped on exit', async () => {
    const stock = await expectSameBehaviour(parent, {}, [
      ...send('CHILD', 'PING_KID', 'FINISH_KID', 'CHILD', 'PING_KID', 'LEAVE', 'CHILD', 'FAIL_KID'),
    ]);
    expect(stock[1]?.records).toContain('pong@withChild');
  });

  it('a nested callback actor: sendTo in the same entry, sendBack, stopped on exit and when the machine ends', async () => {
    const stock = await expectSameBehaviour(parent, {}, send('CB', 'LEAVE', 'CB', 'END', 'CB'));
    expect(stock[0]?.records).toEqual([
      ['cb:start', 'root'],
      ['cb:got', 'root', 'HELLO'],
    ]);
    expect(stock[4]?.status).toBe('done');
  });

  it('spawnChild, spawn in assign, sendTo and stopChild of spawned actors', async () => {
    await expectSameBehaviour(
      parent,
      {},
      send('SPAWN', 'PING_REF', 'STOP_SP', 'STOP_REF', 'LEAVE', 'SPAWN', 'END'),
    );
  });

  it('an invoked actor that fails with no onError fails the machine', async () => {
    const stock = await expectSameBehaviour(parent, {}, [...send('LOAD_UNHANDLED'), flush, ...send('LOAD')]);
    expect(stock[2]?.status).toBe('error');
  });

  it('an actor error whose only onError guard fails: the guard runs as often as in XState', async () => {
    const stock = await expectSameBehaviour(parent, {}, [...send('LOAD_GUARDED'), flush]);
    expect(stock[2]?.status).toBe('error');
  });

  it('an error event handled by a wildcard transition does not fail the machine', async () => {
    const tolerant = createMachine({
      id: 'tolerant',
      initial: 'a',
      states: {
        a: {
          invoke: { src: fromPromise(() => Promise.reject(new Error('no'))) },
          on: { 'xstate.error.actor.*': { actions: () => record('caught') } },
        },
      },
    });
    const stock = await expectSameBehaviour(tolerant, {}, [flush]);
    expect(stock[1]?.status).toBe('active');
  });
});

describe('compiled children', () => {
  it('a compiled child machine invoked by a compiled parent', async () => {
    const child = setup({ types: { events: {} as AnyEvent } }).createMachine({
      id: 'kid',
      context: { n: 0 },
      entry: sendParent({ type: 'HELLO' }),
      initial: 'on',
      states: {
        on: {
          on: {
            PING: { actions: [assign({ n: ({ context }) => context.n + 1 }), sendParent({ type: 'PONG' })] },
            END: 'off',
          },
        },
        off: { type: 'final', output: ({ context }) => context.n },
      },
    });
    const parentOf = (kid: AnyStateMachine) =>
      setup({
        types: { context: {} as { got: unknown }, events: {} as AnyEvent },
        actors: { kid },
      }).createMachine({
        id: 'parentOfKid',
        context: { got: null },
        initial: 'a',
        states: {
          a: {
            invoke: {
              id: 'kid',
              src: 'kid',
              onDone: { target: 'b', actions: assign({ got: ({ event }) => event.output }) },
            },
            on: {
              PING: { actions: sendTo('kid', { type: 'PING' }) },
              END: { actions: sendTo('kid', { type: 'END' }) },
              PONG: { actions: () => record('pong') },
              HELLO: { actions: () => record('hello from the child') },
            },
          },
          b: {},
        },
      });
    await expectSameBehaviour(
      parentOf(child),
      { compiled: compileMachine(parentOf(compileMachine(child))) },
      send('PING', 'PING', 'END'),
    );
  });
});

describe('context', () => {
  const counter = (context: 'object' | 'function') =>
    setup({
      types: {
        context: {} as { count: number; label: string; seen: string[] },
        events: {} as AnyEvent,
        input: {} as { start: number; label: string } | undefined,
      },
    }).createMachine({
      id: 'ctx',
      context:
        context === 'object'
          ? { count: 0, label: 'fixed', seen: [] }
          : ({ input }) => ({ count: input?.start ?? -1, label: input?.label ?? 'none', seen: [] }),
      initial: 'a',
      states: {
        a: {
          on: {
            FN: {
              actions: assign(({ context, event }) => ({
                count: context.count + 1,
                seen: [...context.seen, event.type],
              })),
            },
            MAP: { actions: assign({ count: ({ context }) => context.count * 2, label: 'mapped' }) },
            SAME: { actions: assign(({ context }) => ({ count: context.count })) },
            EMPTY: { actions: assign({}) },
          },
        },
      },
    });

  it('context as an object, assign with a function and with a property map, and a no-change assign', async () => {
    const stock = await expectSameBehaviour(counter('object'), {}, send('FN', 'MAP', 'SAME', 'EMPTY', 'FN'));
    expect(stock[3]?.sameSnapshot).toBe(false);
    expect(stock[4]?.sameSnapshot).toBe(false);
  });

  it('context as a function of input', async () => {
    await expectSameBehaviour(counter('function'), { input: { start: 5, label: 'in' } }, send('FN', 'MAP'));
    await expectSameBehaviour(counter('function'), {}, send('FN'));
  });

  it('a context function that spawns, and one that throws', async () => {
    const spawning = createMachine({
      id: 'spawning',
      context: ({ spawn }) => ({
        ref: spawn(
          fromCallback(() => () => record('stopped')),
          { id: 'fromContext' },
        ),
      }),
      initial: 'a',
      states: { a: { on: { END: 'b' } }, b: { type: 'final' } },
    });
    await expectSameBehaviour(spawning, {}, send('END'));
    const throwing = createMachine({
      id: 'throwing',
      context: () => {
        throw new Error('no context');
      },
      initial: 'a',
      states: { a: {} },
    });
    const stock = await expectSameBehaviour(throwing, {}, send('ANY'));
    expect(stock[0]?.status).toBe('error');
  });

  it('an assign or an entry action that throws', async () => {
    const throwing = createMachine({
      id: 'assignThrows',
      context: { n: 0 },
      initial: 'a',
      states: {
        a: {
          on: {
            BAD: {
              actions: assign(() => {
                throw new Error('bad assign');
              }),
            },
            ENTER: 'b',
          },
        },
        b: {
          entry: () => {
            throw new Error('bad entry');
          },
        },
      },
    });
    await expectSameBehaviour(throwing, {}, send('BAD', 'ENTER'));
    await expectSameBehaviour(throwing, {}, send('ENTER', 'BAD'));
  });
});

describe('persistence and snapshot methods', () => {
  const persistent = setup({
    types: { context: {} as { n: number; ref: unknown }, events: {} as AnyEvent },
    actors: {
      kid: createMachine({
        id: 'kid',
        context: { pings: 0 },
        initial: 'on',
        states: {
          on: {
            on: {
              PING: {
                actions: [
                  assign({ pings: ({ context }) => context.pings + 1 }),
                  sendParent({ type: 'PONG' }),
                ],
              },
            },
          },
        },
      }),
    },
  }).createMachine({
    id: 'persistent',
    context: { n: 0, ref: null },
    tags: ['root'],
    meta: { root: true },
    initial: 'a',
    states: {
      a: {
        tags: ['a'],
        meta: { a: 1 },
        initial: 'a1',
        invoke: { id: 'kid', src: 'kid' },
        entry: assign({ ref: ({ spawn }) => spawn('kid', { id: 'spawnedKid' }) }),
        on: {
          INC: { actions: assign({ n: ({ context }) => context.n + 1 }) },
          PING: { actions: [sendTo('kid', { type: 'PING' }), sendTo('spawnedKid', { type: 'PING' })] },
          PONG: { actions: assign({ n: ({ context }) => context.n + 10 }) },
          GUARDED: { guard: ({ context }) => context.n > 100, target: 'b' },
          NOTHING: {},
        },
        states: {
          a1: { tags: ['a1'], on: { NEXT: 'a2' } },
          a2: { tags: ['a2'], meta: { a2: 2 }, on: { NEXT: '#persistent.b' } },
        },
      },
      b: { tags: ['b'], on: { BACK: 'a', END: 'c' } },
      c: { type: 'final' },
    },
  });

  const probes = events('INC', 'PING', 'GUARDED', 'NOTHING', 'NEXT', 'BACK', 'END', 'UNKNOWN');

  it('snapshot methods: can, matches, hasTag, getMeta, toJSON', async () => {
    await expectSameBehaviour(
      persistent,
      { probes },
      send('INC', 'PING', 'NEXT', 'NEXT', 'BACK', 'NEXT', 'END'),
    );
    const [stock, compiled] = machines(persistent);
    const a = createActor(stock).start();
    const b = createActor(compiled).start();
    for (const event of events('INC', 'NEXT')) {
      a.send(event);
      b.send(event);
    }
    const sa = a.getSnapshot();
    const sb = b.getSnapshot();
    for (const value of ['a', 'b', { a: 'a2' }, { a: 'a1' }, {}] as const)
      expect(sb.matches(value as never), JSON.stringify(value)).toBe(sa.matches(value as never));
    for (const tag of ['root', 'a', 'a1', 'a2', 'b', 'none'])
      expect(sb.hasTag(tag as never), tag).toBe(sa.hasTag(tag as never));
    expect(sb.getMeta()).toEqual(sa.getMeta());
    expect(Object.keys(sb.getMeta())).toEqual(Object.keys(sa.getMeta()));
    a.stop();
    b.stop();
  });

  it('a persisted snapshot of a compiled actor, restored on either interpreter, goes on the same way', async () => {
    const [, compiled] = machines(persistent);
    const first = createActor(compiled).start();
    for (const event of events('INC', 'PING', 'NEXT')) first.send(event);
    const persisted = JSON.parse(JSON.stringify(first.getPersistedSnapshot()));
    first.stop();
    await expectSameBehaviour(
      persistent,
      { snapshot: persisted, probes },
      send('INC', 'PING', 'NEXT', 'BACK', 'PING', 'NEXT', 'NEXT', 'END'),
    );
    // A snapshot persisted by XState's own interpreter restores on the compiled machine too.
    const stockActor = createActor(persistent).start();
    for (const event of events('INC', 'NEXT', 'NEXT')) stockActor.send(event);
    const fromStock = JSON.parse(JSON.stringify(stockActor.getPersistedSnapshot()));
    stockActor.stop();
    await expectSameBehaviour(persistent, { snapshot: fromStock, probes }, send('BACK', 'PING', 'END'));
  });

  it('a persisted done snapshot restores as done', async () => {
    const actor = createActor(persistent).start();
    for (const event of events('NEXT', 'NEXT', 'END')) actor.send(event);
    const persisted = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
    await expectSameBehaviour(persistent, { snapshot: persisted }, send('BACK'));
  });

  it('the pure transition() and initialTransition() functions', () => {
    const [stock, compiled] = machines(persistent);
    const summary = ([snapshot, actions]: [
      { value: unknown; context: { n: number }; status: string; tags: Set<string> },
      { type: string }[],
    ]) => ({
      value: snapshot.value,
      n: snapshot.context.n,
      status: snapshot.status,
      tags: [...snapshot.tags],
      actions: actions.map((action) => action.type),
    });
    const [s0, a0] = initialTransition(stock);
    const [c0, b0] = initialTransition(compiled);
    expect(summary([c0, b0] as never)).toEqual(summary([s0, a0] as never));
    let s = s0;
    let c = c0;
    for (const event of events('INC', 'PING', 'NEXT', 'NEXT', 'BACK', 'NEXT', 'END')) {
      const [sNext, sActions] = transition(stock, s, event);
      const [cNext, cActions] = transition(compiled, c, event);
      expect(summary([cNext, cActions] as never), event.type).toEqual(summary([sNext, sActions] as never));
      s = sNext;
      c = cNext;
    }
  });
});

describe('compileMachine', () => {
  it('refuses parallel and history states', () => {
    const parallel = createMachine({
      id: 'p',
      initial: 'a',
      states: { a: { type: 'parallel', states: { x: {}, y: {} } } },
    });
    expect(() => compileMachine(parallel)).toThrow(/state 'p.a' is parallel/);
    const history = createMachine({
      id: 'h',
      initial: 'a',
      states: { a: { initial: 'a1', states: { a1: {}, hist: { type: 'history' } } } },
    });
    expect(() => compileMachine(history)).toThrow(/state 'h.a.hist' is history/);
    const rootParallel = createMachine({ id: 'rp', type: 'parallel', states: { x: {}, y: {} } });
    expect(() => compileMachine(rootParallel)).toThrow(/parallel/);
  });

  it('provide() on a compiled machine gives a compiled machine with the new implementations', async () => {
    const base = setup({
      types: { events: {} as AnyEvent },
      actions: { hello: () => record('original') },
      guards: { ok: () => false },
    }).createMachine({
      id: 'provided',
      initial: 'a',
      states: {
        a: { on: { GO: [{ guard: 'ok', target: 'b', actions: 'hello' }, { actions: 'hello' }] } },
        b: {},
      },
    });
    const compiled = compileMachine(base);
    expect(isCompiledMachine(compiled)).toBe(true);
    expect(isCompiledMachine(base)).toBe(false);
    const implementations = { actions: { hello: () => record('provided') }, guards: { ok: () => true } };
    const provided = compiled.provide(implementations);
    expect(isCompiledMachine(provided)).toBe(true);
    const stock = await expectSameBehaviour(
      base.provide(implementations),
      { compiled: provided },
      send('GO', 'GO'),
    );
    expect(stock[1]?.records).toEqual(['provided']);
    expect(stock[1]?.value).toBe('b');
  });
});

describe('the initial microstep', () => {
  it("entry actions at start see XState's pre-initial snapshot", async () => {
    const probe = createMachine({
      id: 'pre',
      initial: 'a',
      states: {
        a: {
          initial: 'a1',
          entry: enqueueActions(({ check, enqueue }) => {
            enqueue(() => record(['in a', check(stateIn('a'))]));
            enqueue(() => record(['in a.a1', check(stateIn({ a: 'a1' }))]));
            enqueue(() => record(['in #pre.a', check(stateIn('#pre.a'))]));
          }),
          states: { a1: {} },
        },
      },
    });
    await expectSameBehaviour(probe, {}, []);
  });

  it('a machine that fails while it starts keeps the value of its pre-initial snapshot', async () => {
    const failing = createMachine({
      id: 'failsAtStart',
      initial: 'a',
      context: { n: 0 },
      states: {
        a: {
          initial: 'a1',
          states: {
            a1: {
              entry: assign(() => {
                throw new Error('entry assign failed');
              }),
              on: { GO: 'a2' },
            },
            a2: {},
          },
        },
      },
    });
    await expectSameBehaviour(failing, { probes: events('GO') }, send('GO'));
  });
});

describe('more transition shapes', () => {
  it('route transitions (xstate.route to a state with an explicit id)', async () => {
    const routed = createMachine({
      id: 'routed',
      initial: 'a',
      states: {
        a: {},
        b: {
          id: 'bee',
          route: {},
          initial: 'b1',
          states: { b1: { id: 'bee1', route: { guard: ({ event }) => event.ok === true } } },
        },
      },
    });
    await expectSameBehaviour(routed, {}, [
      { type: 'xstate.route', to: '#bee1' },
      { type: 'xstate.route', to: '#bee' },
      { type: 'xstate.route', to: '#bee1', ok: true },
      { type: 'xstate.route', to: '#nowhere' },
    ]);
  });

  it('initial transitions with actions, entered by default and skipped for an explicit target', async () => {
    const initial = setup({ types: { events: {} as AnyEvent }, actions: { rec } }).createMachine({
      id: 'initial',
      ...traced('root'),
      initial: { target: 'a', actions: r('initial:root') } as never,
      states: {
        a: {
          ...traced('a'),
          initial: { target: 'a1', actions: r('initial:a') } as never,
          on: { DEEP: '#initial.a.a2', RESET: { target: 'a', reenter: true } },
          states: { a1: traced('a1'), a2: traced('a2') },
        },
      },
    });
    const stock = await expectSameBehaviour(initial, {}, send('DEEP', 'RESET'));
    expect(stock[0]?.records).toEqual(['entry:root', 'initial:root', 'entry:a', 'initial:a', 'entry:a1']);
  });

  it('re-entering a state restarts its invoked actor under the same id', async () => {
    const restarting = setup({
      types: { events: {} as AnyEvent },
      actors: {
        cb: fromCallback<AnyEvent, string>(({ input }) => {
          record(['start', input]);
          return () => record(['stop', input]);
        }),
      },
    }).createMachine({
      id: 'restarting',
      initial: 'a',
      states: {
        a: {
          invoke: { id: 'worker', src: 'cb', input: 'a' },
          on: {
            AGAIN: { target: 'a', reenter: true },
            STAY: { target: 'a' },
            STOP_IT: { actions: stopChild('worker') },
            NEXT: 'b',
          },
        },
        b: { invoke: { id: 'worker', src: 'cb', input: 'b' }, on: { BACK: 'a' } },
      },
    });
    await expectSameBehaviour(restarting, {}, send('AGAIN', 'STAY', 'STOP_IT', 'AGAIN', 'NEXT', 'BACK'));
  });
});

describe('snapshot objects', () => {
  it('snapshots of one configuration share a frozen state value and read-only tags (a documented difference)', () => {
    const machine = createMachine({
      id: 'objects',
      tags: ['root'],
      initial: 'a',
      context: { n: 0 },
      states: {
        a: {
          tags: ['a'],
          initial: 'a1',
          on: { INC: { actions: assign({ n: ({ context }) => context.n + 1 }) } },
          states: { a1: {} },
        },
      },
    });
    const actor = createActor(compileMachine(machine)).start();
    const first = actor.getSnapshot();
    actor.send({ type: 'INC' });
    const second = actor.getSnapshot();
    actor.stop();
    // XState builds a new value object and tag set per snapshot; the compiled machine shares one per configuration,
    // so a change through one snapshot must fail loudly instead of showing in the others.
    expect(first.value).toBe(second.value);
    expect(first.tags).toBe(second.tags);
    expect(Object.isFrozen(first.value)).toBe(true);
    expect(() => (first.tags as Set<string>).add('added')).toThrow(TypeError);
    expect(() => (first.tags as Set<string>).delete('a')).toThrow(TypeError);
    expect([...second.tags]).toEqual(['root', 'a']);
    expect(second.context.n).toBe(1);
  });
});

describe("XState's development build checks", () => {
  it("an event of type '*' is refused", async () => {
    const any = createMachine({ id: 'star', on: { '*': { actions: () => record('matched') } } });
    const stock = await expectSameBehaviour(any, {}, send('*'));
    expect(stock[1]?.status).toBe('error');
  });

  it('a final output object with functions as values is warned about', async () => {
    const mapped = createMachine({
      id: 'mapped',
      context: { n: 1 },
      initial: 'a',
      states: {
        a: {
          initial: 'a1',
          states: { a1: { on: { END: 'a2' } }, a2: { type: 'final', output: { n: () => 1 } as never } },
          onDone: 'end',
        },
        end: { type: 'final' },
      },
      output: { fixed: () => 2 } as never,
    });
    const stock = await expectSameBehaviour(mapped, {}, send('END'));
    expect(stock[1]?.warnings.length).toBe(2);
  });

  it('the warning about an output object names each mapping function, its source on one line, as XState does', async () => {
    const multiline = createMachine({
      id: 'multiline',
      initial: 'a',
      states: { a: { on: { END: 'b' } }, b: { type: 'final' } },
      output: {
        plain: 1,
        fixed: function fixed() {
          const two = 2;
          return two;
        },
      } as never,
    });
    const stock = await expectSameBehaviour(multiline, {}, send('END'));
    const [warning] = (stock[1]?.warnings ?? []) as unknown[][];
    expect(String(warning?.[0])).toContain('\n - fixed: function fixed() {const two = 2;return two;}');
    expect(String(warning?.[0])).not.toContain('plain');
  });

  it('an infix wildcard descriptor is warned about', async () => {
    const infix = createMachine({
      id: 'infix',
      on: { 'foo.*.bar.*': { actions: () => record('infix') }, 'foo.*': { actions: () => record('suffix') } },
    });
    const stock = await expectSameBehaviour(infix, {}, send('foo.x.bar.y', 'foo.x.bar.y', 'foo.y'));
    // XState warns once per state and event type, wherever it first looks the candidates up (its can() does too).
    expect(stock.flatMap((observation) => observation.warnings).length).toBeGreaterThan(0);
    expect(stock[1]?.records).toEqual(['suffix']);
  });
});

describe('property: the agent machine under random events and limits', () => {
  const usage = { input: 1, output: 2, cached: 0, reasoning: 0 };
  const call = fc.record({
    id: fc.constantFrom('c1', 'c2', 'c3'),
    name: fc.constantFrom('t', 'u', 'transfer_to_b', 'unknown'),
    args: fc.record({ n: fc.integer({ min: 0, max: 2 }) }),
  });
  const response = fc.record(
    {
      text: fc.constantFrom('', '{"x":1}', 'not json', 'hello'),
      toolCalls: fc.array(call, { maxLength: 3 }),
      stopReason: fc.constantFrom(...modelStopReasons, undefined),
      reasoning: fc.constant<ReasoningBlock[]>([{ provider: 'test', data: { thinking: 'hmm' } }]),
      refusal: fc.constant('no'),
      usage: fc.constant(usage),
    },
    { requiredKeys: ['text', 'toolCalls', 'stopReason', 'usage'] },
  );
  const decoded = fc.constantFrom<DecodeOutcome>({ ok: true, value: { x: 1 } }, { ok: false, error: 'bad' });
  const outcome = fc.record(
    {
      callId: fc.constantFrom('c1', 'c2', 'c3', 'r1'),
      name: fc.constantFrom('t', 'u'),
      content: fc.constantFrom('ok', 'Error: failed'),
      isError: fc.boolean(),
      executed: fc.boolean(),
      degraded: fc.boolean(),
      attempts: fc.integer({ min: 1, max: 3 }),
      blocked: fc.constant({ name: 'g', stage: 'tool_output' as const, message: 'no', tool: 't' }),
    },
    {
      requiredKeys: ['callId', 'name', 'content', 'isError', 'executed', 'degraded', 'attempts'],
    },
  );
  /** Reasoning only, no text, calls or stop reason: the policy asks the model again (continue_thinking). */
  const thinking = fc.constant<AgentEvent>({
    type: 'model.response',
    response: {
      text: '',
      toolCalls: [],
      stopReason: undefined,
      reasoning: [{ provider: 'test', data: { thinking: 'hmm' } }],
      usage,
    },
  });
  const ending = fc.constantFrom<AgentEvent>(
    { type: 'model.error', error: { name: 'ModelError', code: 'model_server', message: 'boom' } },
    { type: 'model.denied', reason: 'budget_exhausted', message: 'no budget' },
    { type: 'abort' },
    { type: 'abort', reason: 'user' },
    { type: 'timeout' },
  );
  const block = { name: 'g', stage: 'output' as const, message: 'no' };
  const guardrailEvent = fc.constantFrom<AgentEvent>(
    { type: 'guardrails.done' },
    { type: 'guardrails.done', blocked: block },
    { type: 'guardrail.blocked', block, modelCalled: true, usage },
    { type: 'guardrail.blocked', block, modelCalled: false },
  );
  const event: fc.Arbitrary<AgentEvent> = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record(
        { type: fc.constant('model.response' as const), response, decoded },
        { requiredKeys: ['type', 'response'] },
      ),
    },
    { weight: 2, arbitrary: thinking },
    {
      weight: 5,
      arbitrary: fc.record(
        {
          type: fc.constant('tools.done' as const),
          results: fc.array(outcome, { maxLength: 3 }),
          nestedSteps: fc.integer({ min: 0, max: 2 }),
        },
        { requiredKeys: ['type', 'results'] },
      ),
    },
    { weight: 1, arbitrary: ending },
    { weight: 2, arbitrary: guardrailEvent },
  );
  const limits: fc.Arbitrary<ResolvedLimits> = fc.record({
    maxSteps: fc.integer({ min: 1, max: 4 }),
    finalAnswerOnMaxSteps: fc.boolean(),
    finalAnswerOnToolLimits: fc.boolean(),
    maxDuplicateToolCalls: fc.integer({ min: 1, max: 3 }),
    maxToolCallsPerTool: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }),
    maxDecodeRetries: fc.integer({ min: 0, max: 2 }),
    toolConcurrency: fc.constant(8),
    toolTimeoutMs: fc.constant(null),
    maxToolRetries: fc.constant(0),
    timeoutMs: fc.constant(null),
  });
  const resume: fc.Arbitrary<AgentCheckpoint> = fc
    .record({ step: fc.integer({ min: 0, max: 4 }), open: fc.boolean() })
    .map(({ step, open }) => {
      const pending = { id: 'r1', name: 't', args: { n: 1 } };
      return agentCheckpoint({
        step,
        open: open ? [pending] : [],
        history: [{ role: 'user', content: 'go' }],
        usage,
      });
    });
  const input: fc.Arbitrary<AgentMachineInput> = fc
    .record(
      {
        limits,
        toolNames: fc.subarray(['t', 'u', 'transfer_to_b']),
        hasOutputSchema: fc.boolean(),
        handoff: fc.boolean(),
        resume,
        guardrails: fc.record({
          input: fc.boolean(),
          parallelInput: fc.boolean(),
          output: fc.boolean(),
          tools: fc.boolean(),
        }),
      },
      { requiredKeys: ['limits', 'toolNames', 'hasOutputSchema', 'handoff'] },
    )
    .map(({ handoff, resume: checkpoint, ...rest }) => ({
      sessionId: 'prop',
      agent: 'prop',
      history: [{ role: 'user' as const, content: 'go' }],
      baseLength: 0,
      ...rest,
      ...(handoff ? { handoffTools: { transfer_to_b: 'b' } } : {}),
      ...(checkpoint ? { resume: checkpoint } : {}),
    }));
  it('both interpreters agree after every event (the commands the agent emits among what they compare)', async () => {
    await fc.assert(
      fc.asyncProperty(
        input,
        fc.array(event, { minLength: 1, maxLength: 16 }),
        async (agentInput, events) => {
          await expectSameBehaviour(agentMachine, { input: agentInput }, events);
        },
      ),
      { numRuns: 200, seed: 20_240_601 },
    );
  });
});

describe('property: random statecharts', () => {
  /** A random machine: a tree of states, each with random transitions, eventless transitions and actions. */
  interface TransitionSpec {
    event: string;
    target: number | null;
    reenter: boolean;
    guard: [number, number] | null;
    actions: string[];
  }
  interface NodeSpec {
    parent: number;
    final: boolean;
    tags: boolean;
    entry: string[];
    on: TransitionSpec[];
    always: TransitionSpec[];
    onDone: TransitionSpec | null;
  }
  const events = ['A', 'B', 'C', 'D'];
  const transitionSpec = (withEvent: boolean): fc.Arbitrary<TransitionSpec> =>
    fc.record({
      event: withEvent ? fc.constantFrom(...events, '*') : fc.constant(''),
      target: fc.option(fc.nat({ max: 20 }), { nil: null }),
      reenter: fc.boolean(),
      guard: fc.option(fc.tuple(fc.integer({ min: 2, max: 3 }), fc.integer({ min: 0, max: 2 })), {
        nil: null,
      }),
      actions: fc.array(fc.constantFrom('rec', 'inc', 'raise', 'emit'), { maxLength: 2 }),
    });
  const nodeSpec: fc.Arbitrary<NodeSpec> = fc.record({
    parent: fc.nat(),
    final: fc.boolean(),
    tags: fc.boolean(),
    entry: fc.array(fc.constantFrom('inc', 'raise', 'emit'), { maxLength: 2 }),
    on: fc.array(transitionSpec(true), { maxLength: 3 }),
    always: fc.array(transitionSpec(false), { maxLength: 1 }),
    onDone: fc.option(transitionSpec(false), { nil: null }),
  });

  function buildMachine(nodes: NodeSpec[]): AnyStateMachine {
    const count = nodes.length + 1;
    const parents = [-1, ...nodes.map((node, index) => node.parent % (index + 1))];
    const children = (index: number) => parents.flatMap((parent, child) => (parent === index ? [child] : []));
    const paths: string[] = [];
    const pathOf = (index: number): string =>
      (paths[index] ??= index === 0 ? 'fz' : `${pathOf(parents[index] as number)}.s${index}`);
    const action = (name: string, source: number) =>
      name === 'rec'
        ? r(`t:${source}`)
        : name === 'inc'
          ? { type: 'inc' }
          : name === 'raise'
            ? raise({ type: events[source % events.length] as string })
            : emit({ type: `emitted:${source}` });
    const transition = (spec: TransitionSpec, source: number) => ({
      ...(spec.target !== null ? { target: `#${pathOf(spec.target % count)}` } : {}),
      reenter: spec.reenter,
      ...(spec.guard ? { guard: { type: 'mod', params: { k: spec.guard[0], j: spec.guard[1] } } } : {}),
      actions: spec.actions.map((name) => action(name, source)),
    });
    const config = (index: number): Record<string, unknown> => {
      const spec = nodes[index - 1];
      const kids = children(index);
      const base: Record<string, unknown> = {
        entry: [r(`en:${index}`), ...(spec?.entry ?? []).map((name) => action(name, index))],
        exit: r(`ex:${index}`),
        ...(spec?.tags || index === 0 ? { tags: [`tag${index}`] } : {}),
      };
      if (kids.length === 0 && spec?.final) return { ...base, type: 'final', output: { from: index } };
      const on: Record<string, unknown[]> = {};
      for (const t of spec?.on ?? []) on[t.event] = [...(on[t.event] ?? []), transition(t, index)];
      return {
        ...base,
        on,
        always: (spec?.always ?? []).map((t) => transition(t, index)),
        ...(kids.length > 0
          ? {
              initial: `s${kids[0]}`,
              states: Object.fromEntries(kids.map((kid) => [`s${kid}`, config(kid)])),
              ...(spec?.onDone ? { onDone: transition(spec.onDone, index) } : {}),
            }
          : {}),
      };
    };
    return setup({
      types: { context: {} as { n: number }, events: {} as AnyEvent },
      actions: { rec, inc: assign({ n: ({ context }) => context.n + 1 }) },
      guards: { mod: ({ context }, params: { k: number; j: number }) => context.n % params.k === params.j },
    }).createMachine({
      id: 'fz',
      options: { maxIterations: 40 },
      context: { n: 0 },
      output: ({ context, event }: { context: { n: number }; event: AnyEvent }) => ({ n: context.n, event }),
      ...(config(0) as object),
    } as never) as unknown as AnyStateMachine;
  }

  it('both interpreters agree on random machines and events', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(nodeSpec, { minLength: 1, maxLength: 8 }),
        fc.array(fc.constantFrom(...events, 'E'), { minLength: 1, maxLength: 10 }),
        async (nodes, types) => {
          await expectSameBehaviour(buildMachine(nodes), {}, send(...types));
        },
      ),
      { numRuns: 300, seed: 5_330_301 },
    );
  });
});

describe('what a compiled machine shares between its actors', () => {
  const machine = createMachine({
    types: {} as { context: { n: number } },
    context: () => ({ n: 0 }),
    initial: 'idle',
    states: {
      idle: { on: { GO: { target: 'busy', actions: assign({ n: ({ context }) => context.n + 1 }) } } },
      busy: {
        entry: spawnChild(
          fromCallback(() => undefined),
          { id: 'worker' },
        ),
        on: { STOP: { target: 'idle', actions: stopChild('worker') } },
      },
    },
  });

  it('starts every actor with one empty children record and one empty history value, which no step writes', () => {
    const compiled = compileMachine(machine);
    expect(isCompiledMachine(compiled)).toBe(true);
    const first = createActor(compiled).start();
    const second = createActor(compiled).start();
    const [a, b] = [first.getSnapshot(), second.getSnapshot()];
    expect(a.children).toBe(b.children);
    expect(a.historyValue).toBe(b.historyValue);
    expect(Object.isFrozen(a.children)).toBe(true);
    expect(Object.isFrozen(a.historyValue)).toBe(true);
    // A spawned child goes into a record of the actor's own; the shared one stays empty.
    first.send({ type: 'GO' });
    expect(Object.keys(first.getSnapshot().children)).toEqual(['worker']);
    expect(first.getSnapshot().context).toEqual({ n: 1 });
    first.send({ type: 'STOP' });
    expect(first.getSnapshot().children).toEqual({});
    expect(b.children).toEqual({});
    expect(second.getSnapshot().children).toBe(b.children);
    first.stop();
    second.stop();
  });
});
