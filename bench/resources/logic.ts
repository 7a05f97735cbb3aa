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
  resourceLogic,
  resourceTransition,
} from '../../src/machines/resources.ts';

const quick = process.argv.includes('--quick');
const sizes = [1, 100, 10_000];

interface Variant {
  name: string;
  /** Sends one event; returns nothing. */
  make(): (event: ResourceEvent) => void;
  /** Skip sizes where one event takes so long that the run would last minutes. */
  maxSize?: number;
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
  types: { context: {} as MachineContext, events: {} as ResourceEvent },
}).createMachine({
  context: { scopes: {}, reservations: {} },
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
  () =>
    initialResourceState({
      quotas: [{ provider: 'p', model: 'm', requestsPerMinute: 1e12, tokensPerMinute: 1e15 }],
    }),
);

const quotas = [{ provider: 'p', model: 'm', requestsPerMinute: 1e12, tokensPerMinute: 1e15 }];

const variants: Variant[] = [
  {
    name: 'machine-assign',
    make() {
      const actor = createActor(budgetMachine).start();
      return (event) => actor.send(event);
    },
  },
  {
    name: 'transition-pure',
    maxSize: 100,
    make() {
      const actor = createActor(pureLogic).start();
      return (event) => actor.send(event);
    },
  },
  {
    name: 'transition-inplace',
    make() {
      const actor = createActor(resourceLogic, { input: { quotas } }).start();
      return (event) => actor.send(event);
    },
  },
  {
    name: 'function-direct',
    make() {
      const state = initialResourceState({ quotas });
      return (event) => {
        applyResourceEvent(state, event);
      };
    },
  },
];

/** µs per reserve + settle with `sessions` open runs, each holding one granted reservation. */
function measure(variant: Variant, sessions: number): number {
  const send = variant.make();
  send({ type: 'scope.open', scope: 'tenant', parent: null, limit: { tokens: 1e15 }, now: 0 });
  for (let s = 0; s < sessions; s++) {
    send({ type: 'scope.open', scope: `s${s}`, parent: 'tenant', limit: { tokens: 1e12 }, now: 0 });
    send({
      type: 'reserve',
      id: `held${s}`,
      scope: `s${s}`,
      provider: 'p',
      model: 'm',
      tokens: 10,
      usd: null,
      now: 0,
    });
  }
  const iterations = quick ? 2_000 : sessions >= 10_000 && variant.name === 'machine-assign' ? 2_000 : 20_000;
  const warmup = Math.min(500, iterations / 4);
  let started = 0;
  for (let i = 0; i < warmup + iterations; i++) {
    if (i === warmup) started = performance.now();
    const scope = `s${i % sessions}`;
    send({ type: 'reserve', id: `r${i}`, scope, provider: 'p', model: 'm', tokens: 100, usd: null, now: i });
    send({ type: 'settle', id: `r${i}`, tokens: 80, usd: null, now: i });
  }
  return ((performance.now() - started) * 1000) / iterations;
}

const rows: string[] = [];
rows.push(`| logic | ${sizes.map((size) => `S = ${size.toLocaleString('en')}`).join(' | ')} |`);
rows.push(`|---|${sizes.map(() => '---').join('|')}|`);
for (const variant of variants) {
  const cells = sizes.map((size) =>
    variant.maxSize !== undefined && size > variant.maxSize
      ? 'not run (too slow)'
      : `${measure(variant, size).toFixed(1)} µs`,
  );
  rows.push(`| ${variant.name} | ${cells.join(' | ')} |`);
}
process.stdout.write(
  `reserve + settle per model call (Node ${process.version}, ${quick ? 'quick' : 'full'})\n`,
);
process.stdout.write(`${rows.join('\n')}\n`);
