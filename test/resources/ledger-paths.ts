import { fromTransition } from 'xstate';
import { getShortestPaths, type StatePath } from 'xstate/graph';
import {
  applyResourceEvent,
  initialResourceState,
  liveRequests,
  type ResourceBranch,
  type ResourceEvent,
  type ResourceState,
  resourceTransition,
} from '../../src/resources/ledger.ts';

/**
 * Model-based test support for the resource manager's transition function: a harness logic that owns the time
 * (an `advance` event moves it forward, so every path sees time go one way), a small world (one quota of 1
 * request and 300 tokens a minute, a run with a 250-token budget over a 60-second rolling window, a run with a
 * USD budget, a tenant above both), the events the traversal may send (fixed estimates, and reservations bounded by
 * their budgets), and an abstract state key that keeps the
 * traversal finite.
 */

/** Events of the harness: the manager's events without `now` (the harness adds it), plus advancing time. */
export type HarnessEvent = DistributiveOmit<ResourceEvent, 'now'> | { type: 'advance'; ms: number };
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

export interface HarnessState {
  now: number;
  rm: ResourceState;
  /** Branches taken by the event that led here. */
  trace: ResourceBranch[];
}

export const horizonMs = 90_000;

export function harnessInitial(): HarnessState {
  let rm = initialResourceState({
    quotas: [{ provider: 'p', model: 'm', requestsPerMinute: 1, tokensPerMinute: 300 }],
  });
  const open = (event: Omit<Extract<ResourceEvent, { type: 'scope.open' }>, 'type' | 'now'>) => {
    rm = applyResourceEvent(rm, { type: 'scope.open', now: 0, ...event });
  };
  open({ scope: 't', parent: null, limit: { tokens: 1_000 } });
  open({ scope: 'a', parent: 't', limit: { tokens: 250, windowMs: 60_000 } });
  open({ scope: 'u', parent: 't', limit: { usd: 1 } });
  rm.outbox = [];
  rm.trace = [];
  return { now: 0, rm, trace: [] };
}

export function harnessStep(state: HarnessState, event: HarnessEvent): HarnessState {
  if (event.type === 'advance') return { now: state.now + event.ms, rm: state.rm, trace: [] };
  const rm = resourceTransition(state.rm, { ...event, now: state.now } as ResourceEvent);
  return { now: state.now, rm, trace: rm.trace };
}

export const harnessLogic = fromTransition(harnessStep, harnessInitial);

const reserveOn = (
  id: string,
  scope: string,
  tokens: number,
  usd: number | null,
  provider = 'p',
  model = 'm',
) => ({ type: 'reserve', id, scope, provider, model, tokens, usd }) as const;

const reserveR1 = reserveOn('r1', 'a', 100, 0.1);
// r2 goes to a provider without a configured quota: it spends on the same budget while r1 waits.
const reserveR2 = reserveOn('r2', 'a', 100, 0.1, 'q', 'z');
const settleR1: HarnessEvent = { type: 'settle', id: 'r1', tokens: 120, usd: 0.12 };
const settleR2: HarnessEvent = { type: 'settle', id: 'r2', tokens: 90, usd: 0.09 };
const advance: HarnessEvent = { type: 'advance', ms: 30_000 };
const tick: HarnessEvent = { type: 'tick' };

/**
 * Small worlds, each with a few events, traversed separately: one traversal over all the events together has
 * about 15,000 abstract states, too many to replay in a unit test; together these reach every branch.
 */
export const harnessWorlds: { name: string; events: HarnessEvent[] }[] = [
  {
    name: 'budgets, rolling window, queue and settlement',
    events: [reserveR1, reserveR2, settleR1, settleR2, { type: 'release', id: 'r1' }, tick, advance],
  },
  {
    name: 'denials and scopes',
    events: [
      reserveR1,
      reserveOn('r3', 'u', 10, null),
      reserveOn('r4', 'a', 400, 0.4),
      reserveOn('r5', 'nowhere', 10, 0.01),
      { type: 'release', id: 'r1' },
      { type: 'scope.open', scope: 'a', parent: 't', limit: { tokens: 250, windowMs: 60_000 } },
      { type: 'scope.open', scope: 'x', parent: 'missing' },
      { type: 'scope.close', scope: 'a' },
      { type: 'scope.close', scope: 'gone' },
    ],
  },
  {
    name: 'bounded reservations: output capped by what the budgets leave',
    events: [
      {
        ...reserveOn('b1', 'a', 110, 0.11),
        bound: { inputTokens: 100, inputUsd: 0.1, maxTokens: 120, usdPerToken: 0.001 },
      },
      {
        ...reserveOn('b2', 'a', 60, 0.06),
        bound: { inputTokens: 50, inputUsd: 0.05, maxTokens: 500, usdPerToken: 0.001 },
      },
      {
        ...reserveOn('b3', 'u', 30, 0.03),
        bound: { inputTokens: 20, inputUsd: 0.02, maxTokens: 2_000, usdPerToken: 0.001 },
      },
      { type: 'settle', id: 'b1', tokens: 200, usd: 0.2 },
    ],
  },
  {
    name: '429s and waking',
    events: [
      reserveR1,
      settleR1,
      { type: 'rate_limited', provider: 'p', model: 'm', retryAfterMs: 10_000 },
      { type: 'rate_limited', provider: 'q', model: 'z', retryAfterMs: 10_000 },
      tick,
      advance,
    ],
  },
];

/**
 * The abstract state: what decides the next branch (budget used up, held or warned, reservations and their status, the
 * queue, quota fill, block and age of the oldest entry, time in 30-second steps), not the exact sums, which would
 * make the space too large to traverse.
 */
export function harnessKey(state: HarnessState): string {
  const { rm, now } = state;
  const scopes = Object.values(rm.scopes).map((scope) => [
    scope.id,
    scope.tokensLimit !== null && scope.windowTokens + scope.reservedTokens >= scope.tokensLimit,
    scope.tokensLimit !== null && scope.windowTokens >= scope.tokensLimit,
    scope.reservedTokens > 0,
    scope.window.length > 0,
    scope.warnedTokens,
  ]);
  const quotas = Object.values(rm.quotas).map((quota) => [
    quota.key,
    liveRequests(quota),
    liveRequests(quota) > 0 ? Math.floor((now - (quota.logTimes[quota.logHead] ?? now)) / 30_000) : null,
    quota.inFlight,
    quota.blockedUntil > now,
  ]);
  const reservations = [...rm.reservations.values()].map((r) => [r.id, r.status, r.heldBy]);
  return JSON.stringify({ scopes, quotas, reservations, waiting: rm.waiting, t: Math.floor(now / 30_000) });
}

export function generateHarnessPaths(
  events: HarnessEvent[],
): StatePath<ReturnType<typeof harnessLogic.getInitialSnapshot>, HarnessEvent>[] {
  return getShortestPaths(harnessLogic, {
    events,
    // The branches that led here are part of the node, so an event that changes nothing but takes a branch of
    // its own (a denial, a no-op release) still ends a path.
    serializeState: (snapshot) => `${harnessKey(snapshot.context)} via ${snapshot.context.trace.join(',')}`,
    // Time stops at the horizon, so the traversal is finite.
    filterEvents: (snapshot, event) => event.type !== 'advance' || snapshot.context.now < horizonMs,
    limit: 20_000,
  });
}
