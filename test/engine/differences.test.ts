import { describe, expect, it } from 'vitest';
import { type AnyStateMachine, assign, createActor, createMachine, fromCallback, setup } from 'xstate';
import { compileMachine, isCompiledMachine } from '../../src/engine/compiled-machine.ts';

/**
 * Each difference between the compiled interpreter and XState's that the README lists, shown on both: what an
 * observer of a compiled machine can tell apart. Everything else is the same (compiled-machine.test.ts).
 */

const machine = () =>
  createMachine({
    id: 'm',
    initial: 'a',
    context: { n: 0 },
    states: {
      a: {
        tags: ['t'],
        initial: 'x',
        states: { x: {} },
        on: { bump: { actions: assign({ n: ({ context }) => context.n + 1 }) } },
      },
    },
  });

const bothInterpreters = [
  ['xstate', machine()],
  ['compiled', compileMachine(machine())],
] as const;

describe('the documented differences', () => {
  it("snapshots of one configuration share one frozen state value and one read-only tag set; XState's are new and open", () => {
    for (const [name, logic] of bothInterpreters) {
      const actor = createActor(logic).start();
      const before = actor.getSnapshot();
      actor.send({ type: 'bump' });
      const after = actor.getSnapshot();
      expect(after.context.n, name).toBe(1);
      expect(after.value, name).toEqual({ a: 'x' });
      const compiled = name === 'compiled';
      expect(after.value === before.value, name).toBe(compiled);
      expect(after.tags === before.tags, name).toBe(compiled);
      expect(Object.isFrozen(after.value), name).toBe(compiled);
      if (compiled) {
        expect(() => after.tags.add('u')).toThrow(TypeError);
        expect(() => after.tags.delete('t')).toThrow(TypeError);
        expect(() => after.tags.clear()).toThrow(TypeError);
      } else {
        after.tags.add('u');
        expect(after.tags.has('u')).toBe(true);
      }
      actor.stop();
    }
  });

  it("an assigner's `spawn` is not an own property of its arguments compiled: a spread or Object.keys misses it; a symbol-keyed member is one", () => {
    const interpreters: [string, (logic: AnyStateMachine) => AnyStateMachine][] = [
      ['xstate', (logic) => logic],
      ['compiled', (logic) => compileMachine(logic)],
    ];
    for (const [name, compile] of interpreters) {
      const seen: { keys?: string[]; spreadHasSpawn?: boolean; destructured?: string; symbols?: number } = {};
      const logic = setup({ actors: { child: fromCallback(() => {}) } }).createMachine({
        context: {},
        entry: assign((args) => {
          seen.keys = Object.keys(args);
          seen.symbols = Object.getOwnPropertySymbols(args).length;
          seen.spreadHasSpawn = 'spawn' in { ...args };
          const { spawn } = args;
          seen.destructured = typeof spawn;
          spawn('child', { id: 'kid' });
          return {};
        }),
      });
      const actor = createActor(compile(logic)).start();
      expect(seen.destructured, name).toBe('function');
      expect(Object.keys(actor.getSnapshot().children), name).toEqual(['kid']);
      expect(seen.keys?.includes('spawn'), name).toBe(name === 'xstate');
      expect(seen.spreadHasSpawn, name).toBe(name === 'xstate');
      // The compiled interpreter's arguments keep its microstep under a symbol: JSON and Object.keys skip it.
      expect(seen.symbols, name).toBe(name === 'xstate' ? 0 : 1);
      actor.stop();
    }
  });

  it('parallel and history states are refused; provide() of a compiled machine is compiled', () => {
    expect(() => compileMachine(createMachine({ type: 'parallel', states: { a: {}, b: {} } }))).toThrow(
      /parallel/,
    );
    expect(() =>
      compileMachine(createMachine({ initial: 'a', states: { a: {}, h: { type: 'history' } } })),
    ).toThrow(/history/);
    expect(isCompiledMachine(compileMachine(machine()).provide({}))).toBe(true);
  });
});
