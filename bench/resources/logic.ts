/**
 * Why the resource manager is a transition function updated in place and not a statechart with `assign`:
 * the cost of one model call's bookkeeping (a reserve and its settle) with S sessions open, each holding a granted
 * reservation, for four forms of the same logic:
 *   machine-assign   an XState machine whose assign returns a new context with object spreads (idiomatic)
 *   transition-pure  fromTransition over resourceTransition (structuredClone, then apply)
 *   transition-inplace  fromTransition over applyResourceEvent (the runtime's choice)
 *   function-direct  applyResourceEvent called directly, no actor (the floor)
 *
 *   node bench/resources/logic.ts [--quick]
 *
 * Plain script, not a test: figures vary with the machine; see the README of the issue for the recorded run.
 */
import { assign, createActor, fromTransition, setup } from 'xstate';
import {
  applyResourceEvent,
  initialResourceState,
  type ResourceEvent,
  type ResourceState,
  resourceTransition,
} from '../../src/resources/ledger.ts';

const quick = process.argv.includes('--quick');
/**
 * An in-flight quota that never binds: every call goes through the quota code, but no per-minute log is kept
 * (a log would make the copying variant clone thousands of entries and measure only that).
 */
const quotas = [{ provider: 'p', model: 'm', maxInFlight: 1e9 }];
const sizes = [1, 100, 10_000];

interface Variant {
  name: string;
  /** Starts the variant on a world of `sessions` open runs; returns how to send it one event. */
  make(sessions: number): (event: ResourceEvent) => void;
}

/** The idiomatic statechart: budgets per scope, reservations by id, new objects on every change. */
interface MachineContext {
  scopes: Record<string, { parent: string | null; limit: number; spent: number; reserved: number }>;
  reservations: Record<string, { scope: string; tokens: number }>;
}

function chain(context: MachineContext, id: string): string[] {
  const ids: string[] = [];
  for (let current: string | null = id; current !== null; current = context.scopes[current]?.parent ?? null)
    ids.push(current);
  return ids;
}

const budgetMachine = setup({
  types: { context: {} as MachineContext, events: {} as ResourceEvent, input: {} as MachineContext },
}).createMachine({
  context: ({ input }) => input,
  on: {
    'scope.open': {
      actions: assign(({ context, event }) => ({
        scopes: {
          ...context.scopes,
          [event.scope]: {
            parent: event.parent,
            limit: event.limit?.tokens ?? Infinity,
            spent: 0,
            reserved: 0,
          },
        },
      })),
    },
    reserve: {
      actions: assign(({ context, event }) => {
        const ids = chain(context, event.scope);
        if (
          ids.some((id) => {
            const scope = context.scopes[id];
            return scope !== undefined && scope.spent + scope.reserved >= scope.limit;
          })
        )
          return {};
        const scopes = { ...context.scopes };
        for (const id of ids) {
          const scope = scopes[id];
          if (scope) scopes[id] = { ...scope, reserved: scope.reserved + event.tokens };
        }
        return {
          scopes,
          reservations: { ...context.reservations, [event.id]: { scope: event.scope, tokens: event.tokens } },
        };
      }),
    },
    settle: {
      actions: assign(({ context, event }) => {
        const reservation = context.reservations[event.id];
        if (!reservation) return {};
        const scopes = { ...context.scopes };
        for (const id of chain(context, reservation.scope)) {
          const scope = scopes[id];
          if (scope)
            scopes[id] = {
              ...scope,
              reserved: scope.reserved - reservation.tokens,
              spent: scope.spent + event.tokens,
            };
        }
        const { [event.id]: _settled, ...reservations } = context.reservations;
        return { scopes, reservations };
      }),
    },
  },
});

const pureLogic = fromTransition(
  (state: ResourceState, event: ResourceEvent) => resourceTransition(state, event),
  ({ input }: { input: ResourceState }) => input,
);
const inPlaceLogic = fromTransition(
  (state: ResourceState, event: ResourceEvent) => applyResourceEvent(state, event),
  ({ input }: { input: ResourceState }) => input,
);

/** The world, built directly (building it through the copying forms would take minutes at 10,000). */
function world(sessions: number): ResourceState {
  const state = initialResourceState({ quotas });
  applyResourceEvent(state, {
    type: 'scope.open',
    scope: 'tenant',
    parent: null,
    limit: { tokens: 1e15 },
    now: 0,
  });
  for (let s = 0; s < sessions; s++) {
    const scope = `s${s}`;
    applyResourceEvent(state, {
      type: 'scope.open',
      scope,
      parent: 'tenant',
      limit: { tokens: 1e12 },
      now: 0,
    });
    const held = { id: `held${s}`, scope, provider: 'p', model: 'm', tokens: 10, usd: null, now: 0 };
    applyResourceEvent(state, { type: 'reserve', ...held });
  }
  return state;
}

function machineWorld(sessions: number): MachineContext {
  const context: MachineContext = {
    scopes: { tenant: { parent: null, limit: 1e15, spent: 0, reserved: 0 } },
    reservations: {},
  };
  for (let s = 0; s < sessions; s++) {
    context.scopes[`s${s}`] = { parent: 'tenant', limit: 1e12, spent: 0, reserved: 10 };
    context.reservations[`held${s}`] = { scope: `s${s}`, tokens: 10 };
  }
  return context;
}

const variants: Variant[] = [
  {
    name: 'machine-assign',
    make(sessions) {
      const actor = createActor(budgetMachine, { input: machineWorld(sessions) }).start();
      return (event) => actor.send(event);
    },
  },
  {
    name: 'transition-pure',
    make(sessions) {
      const actor = createActor(pureLogic, { input: world(sessions) }).start();
      return (event) => actor.send(event);
    },
  },
  {
    name: 'transition-inplace',
    make(sessions) {
      const actor = createActor(inPlaceLogic, { input: world(sessions) }).start();
      return (event) => actor.send(event);
    },
  },
  {
    name: 'function-direct',
    make(sessions) {
      const state = world(sessions);
      return (event) => {
        applyResourceEvent(state, event);
      };
    },
  },
];

function call(send: (event: ResourceEvent) => void, sessions: number, i: number): void {
  const scope = `s${Math.abs(i) % sessions}`;
  send({ type: 'reserve', id: `r${i}`, scope, provider: 'p', model: 'm', tokens: 100, usd: null, now: 0 });
  send({ type: 'settle', id: `r${i}`, tokens: 80, usd: null, now: 0 });
}

/** µs per reserve + settle with `sessions` open runs, each holding one granted reservation. */
function measure(variant: Variant, sessions: number): number {
  const send = variant.make(sessions);
  for (let i = 0; i < 20; i++) call(send, sessions, -1 - i);
  // Each variant runs for about a second (at least 20 calls), so the slow forms finish too.
  const budgetMs = quick ? 200 : 1_000;
  let iterations = 0;
  const started = performance.now();
  while (iterations < 20 || (performance.now() - started < budgetMs && iterations < 200_000)) {
    call(send, sessions, iterations);
    iterations++;
  }
  return ((performance.now() - started) * 1000) / iterations;
}

const rows: string[] = [];
rows.push(`| logic | ${sizes.map((size) => `S = ${size.toLocaleString('en')}`).join(' | ')} |`);
rows.push(`|---|${sizes.map(() => '---').join('|')}|`);
for (const variant of variants) {
  const cells = sizes.map((size) => `${measure(variant, size).toFixed(1)} µs`);
  rows.push(`| ${variant.name} | ${cells.join(' | ')} |`);
}
process.stdout.write(
  `reserve + settle per model call (Node ${process.version}, ${quick ? 'quick' : 'full'})\n`,
);
process.stdout.write(`${rows.join('\n')}\n`);
