import { describe, expect, it } from 'vitest';
import {
  applyResourceEvent,
  type BudgetLimit,
  initialResourceState,
  minOutputTokens,
  type OutputBound,
  type QuotaLimit,
  type ResourceEvent,
  type ResourceOutput,
  type ResourceState,
  resourceTransition,
} from '../../src/resources/ledger.ts';

/**
 * What the resource transition function tells its callers (the `outbox`): grants, waits, denials with the message a
 * stopped run carries, spend and returns, warnings, releases, 429 blocks and closing summaries, and when it next
 * needs to be woken. Each test reads the decisions, not the internal counters.
 */

function world(config: { quotas?: QuotaLimit[]; concurrency?: number } = {}) {
  const state: ResourceState = initialResourceState(config);
  const apply = (event: ResourceEvent): ResourceOutput[] => applyResourceEvent(state, event).outbox;
  const open = (scope: string, limit?: BudgetLimit, parent: string | null = null, now = 0) =>
    apply({ type: 'scope.open', scope, parent, now, ...(limit ? { limit } : {}) });
  const reserve = (
    id: string,
    options: {
      scope?: string;
      tokens?: number;
      usd?: number | null;
      now?: number;
      provider?: string;
      model?: string;
      bound?: OutputBound;
    } = {},
  ) =>
    apply({
      type: 'reserve',
      id,
      scope: options.scope ?? 's',
      provider: options.provider ?? 'p',
      model: options.model ?? 'm',
      tokens: options.tokens ?? 10,
      usd: options.usd === undefined ? null : options.usd,
      ...(options.bound ? { bound: options.bound } : {}),
      now: options.now ?? 0,
    });
  const settle = (id: string, tokens: number, usd: number | null = null, now = 0) =>
    apply({ type: 'settle', id, tokens, usd, now });
  return { state, apply, open, reserve, settle };
}

describe('resources: reservations granted, denied, or made to wait', () => {
  it('grants a call at once, saying how long it waited', () => {
    const w = world();
    w.open('s');
    expect(w.reserve('a', { now: 5 })).toEqual([
      { kind: 'granted', id: 'a', scope: 's', waitedMs: 0, maxOutputTokens: null },
    ]);
  });

  it('denies a second reservation under the same id, and one for an unknown scope', () => {
    const w = world();
    w.open('s');
    w.reserve('a');
    expect(w.reserve('a')).toEqual([
      {
        kind: 'denied',
        id: 'a',
        scope: 's',
        reason: 'duplicate',
        blocking: 'a',
        message: 'reservation a already exists',
      },
    ]);
    expect(w.reserve('b', { scope: 'nowhere' })).toEqual([
      {
        kind: 'denied',
        id: 'b',
        scope: 'nowhere',
        reason: 'unknown_scope',
        blocking: 'nowhere',
        message: 'unknown budget scope nowhere',
      },
    ]);
  });

  it('denies an unpriced model under a USD budget anywhere up the chain', () => {
    const w = world();
    w.open('tenant', { usd: 1 });
    w.open('run', undefined, 'tenant');
    expect(w.reserve('a', { scope: 'run', model: 'mystery' })).toEqual([
      {
        kind: 'denied',
        id: 'a',
        scope: 'run',
        reason: 'unpriced_model',
        blocking: 'tenant',
        message: 'model "mystery" has no price, but tenant has a USD budget',
      },
    ]);
  });

  it('denies once spend reaches a token or USD budget, naming the scope and the amounts', () => {
    const tokens = world();
    tokens.open('s', { tokens: 100 });
    tokens.reserve('a', { tokens: 50 });
    tokens.settle('a', 100);
    expect(tokens.reserve('b')).toEqual([
      {
        kind: 'denied',
        id: 'b',
        scope: 's',
        reason: 'budget_exhausted',
        blocking: 's',
        message: 'token budget of s exhausted: 100 spent of 100',
      },
    ]);
    const usd = world();
    usd.open('s', { usd: 0.001 });
    usd.reserve('a', { usd: 0.0005 });
    usd.settle('a', 10, 0.00125);
    expect(usd.reserve('b', { usd: 0.0001 })).toMatchObject([
      { reason: 'budget_exhausted', message: 'USD budget of s exhausted: $0.00125 spent of $0.001' },
    ]);
  });

  it('a parent’s exhausted budget denies the calls of its children', () => {
    const w = world();
    w.open('tenant', { tokens: 20 });
    w.open('run', { tokens: 1_000 }, 'tenant');
    w.reserve('a', { scope: 'run' });
    w.settle('a', 25);
    expect(w.reserve('b', { scope: 'run' })).toMatchObject([{ kind: 'denied', blocking: 'tenant' }]);
    const other = world();
    other.open('tenant', { tokens: 1_000 });
    other.open('run', { tokens: 20 }, 'tenant');
    other.reserve('a', { scope: 'run' });
    other.settle('a', 25);
    expect(other.reserve('b', { scope: 'run' })).toMatchObject([{ kind: 'denied', blocking: 'run' }]);
  });

  it('denies a call larger than a tokens-per-minute quota instead of letting it wait forever', () => {
    const w = world({ quotas: [{ provider: 'p', tokensPerMinute: 100 }] });
    w.open('s');
    expect(w.reserve('a', { tokens: 101 })).toEqual([
      {
        kind: 'denied',
        id: 'a',
        scope: 's',
        reason: 'exceeds_quota',
        blocking: 'p:*',
        message: "the call's estimate of 101 tokens exceeds the 100 tokens-per-minute quota of p:*",
      },
    ]);
    // Exactly the quota fits.
    expect(w.reserve('b', { tokens: 100 })).toMatchObject([{ kind: 'granted' }]);
  });

  it('queues a call over a quota, saying which quota and where it stands, and wakes it when the window moves', () => {
    const w = world({ quotas: [{ provider: 'p', model: 'm', requestsPerMinute: 1 }] });
    w.open('s');
    w.reserve('a', { now: 1_000 });
    expect(w.reserve('b', { now: 2_000 })).toEqual([
      { kind: 'waiting', id: 'b', scope: 's', quota: 'p:m', position: 1 },
    ]);
    expect(w.reserve('c', { now: 3_000 })).toEqual([
      { kind: 'waiting', id: 'c', scope: 's', quota: 'p:m', position: 2 },
    ]);
    expect(w.state.nextWakeAt).toBe(61_000);
    expect(w.apply({ type: 'tick', now: 60_999 })).toEqual([]);
    expect(w.apply({ type: 'tick', now: 61_000 })).toEqual([
      { kind: 'granted', id: 'b', scope: 's', waitedMs: 59_000, maxOutputTokens: null },
    ]);
    expect(w.state.nextWakeAt).toBe(121_000);
  });

  it('tokens per minute count the estimates in the window, corrected by what the calls used', () => {
    const w = world({ quotas: [{ provider: 'p', tokensPerMinute: 100 }] });
    w.open('s');
    w.reserve('a', { tokens: 60 });
    expect(w.reserve('b', { tokens: 50 })).toMatchObject([{ kind: 'waiting', quota: 'p:*' }]);
    // The first call used only 20 tokens: 20 + 50 fit in the minute.
    expect(w.settle('a', 20)).toContainEqual({
      kind: 'granted',
      id: 'b',
      scope: 's',
      waitedMs: 0,
      maxOutputTokens: null,
    });
  });

  it('keeps calls in flight under maxInFlight and the manager-wide concurrency', () => {
    const w = world({ quotas: [{ provider: 'p', maxInFlight: 1 }], concurrency: 2 });
    w.open('s');
    w.reserve('a');
    expect(w.reserve('c', { provider: 'q' })).toMatchObject([{ kind: 'granted' }]);
    expect(w.reserve('d', { provider: 'q' })).toMatchObject([{ kind: 'waiting', quota: '*' }]);
    // Waiting on slots, not on time: nothing to wake for.
    expect(w.state.nextWakeAt).toBeNull();
    expect(w.settle('c', 1)).toContainEqual(expect.objectContaining({ kind: 'granted', id: 'd' }));
    expect(w.reserve('b')).toMatchObject([{ kind: 'waiting', quota: 'p:*' }]);
  });

  it('serves waiting calls first come, first served: a newcomer does not overtake them', () => {
    const w = world({ quotas: [{ provider: 'p', maxInFlight: 1 }] });
    w.open('s');
    w.reserve('a');
    w.reserve('b');
    w.reserve('c');
    expect(w.settle('a', 1)).toContainEqual(expect.objectContaining({ kind: 'granted', id: 'b' }));
    expect(w.state.waiting).toEqual(['c']);
    w.settle('b', 1);
    expect(w.state.waiting).toEqual([]);
    // A call on another quota passes a queue it does not share.
    w.reserve('d');
    w.reserve('e');
    expect(w.reserve('f', { provider: 'other' })).toMatchObject([{ kind: 'granted' }]);
  });
});

describe('resources: settling and releasing', () => {
  it('reports spend and what the settlement returned, in tokens and USD', () => {
    const w = world();
    w.open('s', { usd: 10 });
    w.reserve('a', { tokens: 100, usd: 0.5 });
    expect(w.settle('a', 30, 0.25)).toEqual([
      { kind: 'spend', id: 'a', scope: 's', tokens: 30, usd: 0.25, returnedTokens: 70, returnedUsd: 0.25 },
    ]);
    const unpriced = world();
    unpriced.open('s');
    unpriced.reserve('a', { tokens: 100 });
    expect(unpriced.settle('a', 120)).toEqual([
      { kind: 'spend', id: 'a', scope: 's', tokens: 120, usd: null, returnedTokens: -20, returnedUsd: null },
    ]);
  });

  it('settles a call once; a second settlement or one for an unknown call changes nothing', () => {
    const w = world();
    w.open('s', { tokens: 1_000 });
    w.reserve('a');
    w.settle('a', 5);
    expect(w.settle('a', 5)).toEqual([]);
    expect(w.settle('ghost', 5)).toEqual([]);
    w.apply({ type: 'scope.close', scope: 's', now: 0 });
  });

  it('a released call gives back its estimate; a waiting one gives back nothing; twice is once', () => {
    const w = world({ quotas: [{ provider: 'p', maxInFlight: 1 }] });
    w.open('s');
    w.reserve('a', { tokens: 40, usd: 0.1 });
    w.reserve('b');
    expect(w.apply({ type: 'release', id: 'b', now: 0 })).toEqual([
      { kind: 'released', id: 'b', scope: 's', tokens: 0, usd: 0 },
    ]);
    expect(w.state.waiting).toEqual([]);
    expect(w.apply({ type: 'release', id: 'a', now: 0 })).toEqual([
      { kind: 'released', id: 'a', scope: 's', tokens: 40, usd: 0.1 },
    ]);
    expect(w.apply({ type: 'release', id: 'a', now: 0 })).toEqual([]);
    // The slot is free again.
    expect(w.reserve('c')).toMatchObject([{ kind: 'granted' }]);
  });

  it('releasing one waiting call keeps the others in order', () => {
    const w = world({ quotas: [{ provider: 'p', maxInFlight: 1 }] });
    w.open('s');
    w.reserve('a');
    w.reserve('b');
    w.reserve('c');
    w.reserve('d');
    w.apply({ type: 'release', id: 'c', now: 0 });
    expect(w.state.waiting).toEqual(['b', 'd']);
  });

  it('counts spend on the whole chain, and closing a scope returns what it still holds with its summary', () => {
    const w = world();
    w.open('tenant', { tokens: 1_000 });
    w.open('run', { tokens: 500, usd: 2, windowMs: 1_000 }, 'tenant');
    w.reserve('a', { scope: 'run', tokens: 100, usd: 0.01 });
    w.settle('a', 80, 0.01);
    w.reserve('b', { scope: 'run', tokens: 60, usd: 0.02 });
    const closing = w.apply({ type: 'scope.close', scope: 'run', now: 10 });
    expect(closing).toEqual([
      { kind: 'released', id: 'b', scope: 'run', tokens: 60, usd: 0.02 },
      {
        kind: 'scope_closed',
        scope: 'run',
        summary: {
          scope: 'run',
          parent: 'tenant',
          spentTokens: 80,
          spentUsd: 0.01,
          windowTokens: 80,
          windowUsd: 0.01,
          reservedTokens: 0,
          reservedUsd: 0,
          tokensLimit: 500,
          usdLimit: 2,
          windowMs: 1_000,
          calls: 1,
        },
      },
    ]);
    expect(w.apply({ type: 'scope.close', scope: 'tenant', now: 10 })).toMatchObject([
      { kind: 'scope_closed', summary: { spentTokens: 80, calls: 1, parent: null, reservedTokens: 0 } },
    ]);
    expect(w.apply({ type: 'scope.close', scope: 'tenant', now: 10 })).toEqual([]);
  });

  it('re-opening a scope updates its limits and keeps its spend', () => {
    const w = world();
    w.open('s', { tokens: 100 });
    w.reserve('a');
    w.settle('a', 90);
    w.open('s', { tokens: 1_000, warnAt: 0.5 });
    expect(w.reserve('b')).toMatchObject([{ kind: 'granted' }]);
    w.settle('b', 420);
    w.open('s', { tokens: 500 });
    expect(w.reserve('c')).toMatchObject([
      { kind: 'denied', message: 'token budget of s exhausted: 510 spent of 500' },
    ]);
  });
});

describe('resources: budget warnings and rolling windows', () => {
  it('warns once when spend crosses the threshold (80% by default), for the scope and the call’s origin', () => {
    const w = world();
    w.open('tenant', { tokens: 100 });
    w.open('run', undefined, 'tenant');
    w.reserve('a', { scope: 'run' });
    expect(w.settle('a', 79)).not.toContainEqual(expect.objectContaining({ kind: 'budget_warning' }));
    w.reserve('b', { scope: 'run' });
    expect(w.settle('b', 1)).toContainEqual({
      kind: 'budget_warning',
      scope: 'tenant',
      origin: 'run',
      dimension: 'tokens',
      spent: 80,
      limit: 100,
      threshold: 0.8,
    });
    w.reserve('c', { scope: 'run' });
    expect(w.settle('c', 1)).not.toContainEqual(expect.objectContaining({ kind: 'budget_warning' }));
  });

  it('warns on USD budgets too', () => {
    const w = world();
    w.open('s', { usd: 1, warnAt: 0.5 });
    w.reserve('a', { usd: 0.1 });
    expect(w.settle('a', 1, 0.6)).toContainEqual(
      expect.objectContaining({ kind: 'budget_warning', dimension: 'usd', spent: 0.6, limit: 1 }),
    );
  });

  it('a rolling window forgets old spend: a denied scope can spend again, and warns again', () => {
    const w = world();
    w.open('s', { tokens: 100, windowMs: 1_000 });
    w.reserve('a', { now: 0 });
    expect(w.settle('a', 100, null, 0)).toContainEqual(expect.objectContaining({ kind: 'budget_warning' }));
    expect(w.reserve('b', { now: 999 })).toMatchObject([{ kind: 'denied', reason: 'budget_exhausted' }]);
    expect(w.reserve('c', { now: 1_000 })).toMatchObject([{ kind: 'granted' }]);
    // The window moved on: the earlier warning is re-armed, the next crossing warns again.
    expect(w.settle('c', 10, null, 1_000)).not.toContainEqual(
      expect.objectContaining({ kind: 'budget_warning' }),
    );
    w.reserve('d', { now: 1_001 });
    expect(w.settle('d', 80, null, 1_001)).toContainEqual(
      expect.objectContaining({ kind: 'budget_warning', spent: 90 }),
    );
  });

  it('a lifetime budget never forgets', () => {
    const w = world();
    w.open('s', { tokens: 100 });
    w.reserve('a', { now: 0 });
    w.settle('a', 100, null, 0);
    expect(w.reserve('b', { now: 10_000_000 })).toMatchObject([{ kind: 'denied' }]);
  });
});

describe('resources: 429s from providers', () => {
  it('blocks the model’s quota until the retry-after ends, then lets the waiting calls run', () => {
    const w = world({ quotas: [{ provider: 'p', model: 'm', requestsPerMinute: 100 }] });
    w.open('s');
    expect(
      w.apply({ type: 'rate_limited', provider: 'p', model: 'm', retryAfterMs: 5_000, now: 1_000 }),
    ).toEqual([{ kind: 'rate_limited', quota: 'p:m', until: 6_000 }]);
    expect(w.reserve('a', { now: 2_000 })).toMatchObject([{ kind: 'waiting', quota: 'p:m' }]);
    expect(w.state.nextWakeAt).toBe(6_000);
    expect(w.apply({ type: 'tick', now: 5_999 })).toEqual([]);
    expect(w.apply({ type: 'tick', now: 6_000 })).toEqual([
      { kind: 'granted', id: 'a', scope: 's', waitedMs: 4_000, maxOutputTokens: null },
    ]);
  });

  it('a shorter retry-after never shortens a block, and a negative one blocks nothing beyond now', () => {
    const w = world({ quotas: [{ provider: 'p', model: 'm', requestsPerMinute: 100 }] });
    w.apply({ type: 'rate_limited', provider: 'p', model: 'm', retryAfterMs: 5_000, now: 0 });
    expect(w.apply({ type: 'rate_limited', provider: 'p', model: 'm', retryAfterMs: 1_000, now: 0 })).toEqual(
      [{ kind: 'rate_limited', quota: 'p:m', until: 5_000 }],
    );
    const fresh = world({ quotas: [{ provider: 'p', model: 'm', requestsPerMinute: 100 }] });
    expect(
      fresh.apply({ type: 'rate_limited', provider: 'p', model: 'm', retryAfterMs: -50, now: 10 }),
    ).toEqual([{ kind: 'rate_limited', quota: 'p:m', until: 10 }]);
  });

  it('without a quota for the model, creates one, and the calls already waiting for it wait on it too', () => {
    const w = world({ concurrency: 1 });
    w.open('s');
    w.reserve('a', { model: 'm' });
    w.reserve('b', { model: 'm' });
    w.reserve('c', { model: 'other' });
    expect(w.apply({ type: 'rate_limited', provider: 'p', model: 'm', retryAfterMs: 1_000, now: 0 })).toEqual(
      [{ kind: 'rate_limited', quota: 'p:m', until: 1_000 }],
    );
    // The slot frees up: b is blocked by the new quota (and keeps its place), c on another model may not pass it.
    const settled = w.settle('a', 1);
    expect(settled.filter((o) => o.kind === 'granted')).toEqual([]);
    expect(w.state.nextWakeAt).toBe(1_000);
    // New calls for the model are paced by the new quota.
    expect(w.reserve('d', { model: 'm', now: 10 })).toMatchObject([{ kind: 'waiting' }]);
    w.apply({ type: 'tick', now: 1_000 });
    expect(w.state.reservations.get('b')?.status).toBe('granted');
  });

  it('a quota made by a 429 counts only the calls that waited on it: none in flight once all settle', () => {
    const w = world({ concurrency: 1 });
    w.open('s');
    w.reserve('a', { model: 'm' });
    w.reserve('b', { model: 'm' });
    w.reserve('c', { model: 'm' });
    w.apply({ type: 'rate_limited', provider: 'p', model: 'm', retryAfterMs: 1_000, now: 0 });
    // a was granted before the quota existed: it holds no slot in it, and b and c each wait on it once.
    expect(w.state.reservations.get('a')?.quotas).toEqual(['*']);
    expect(w.state.reservations.get('b')?.quotas).toEqual(['*', 'p:m']);
    expect(w.state.reservations.get('c')?.quotas).toEqual(['*', 'p:m']);
    w.settle('a', 1);
    w.apply({ type: 'tick', now: 1_000 });
    expect(w.state.quotas['p:m']?.inFlight).toBe(1);
    w.settle('b', 1, null, 1_000);
    w.settle('c', 1, null, 1_000);
    expect(w.state.reservations.size).toBe(0);
    expect(w.state.quotas['p:m']?.inFlight).toBe(0);
    expect(w.state.quotas['*']?.inFlight).toBe(0);
  });

  it('does not block a provider-wide account quota for one model’s 429', () => {
    const w = world({ quotas: [{ provider: 'p', requestsPerMinute: 100 }] });
    w.open('s');
    expect(w.apply({ type: 'rate_limited', provider: 'p', model: 'm', retryAfterMs: 1_000, now: 0 })).toEqual(
      [{ kind: 'rate_limited', quota: 'p:m', until: 1_000 }],
    );
    expect(w.reserve('a', { model: 'n' })).toMatchObject([{ kind: 'granted' }]);
    expect(w.reserve('b', { model: 'm' })).toMatchObject([{ kind: 'waiting', quota: 'p:m' }]);
  });
});

describe('resources: edge cases of scopes and windows', () => {
  it('a scope whose parents loop back to it is unknown, never looped over', () => {
    const w = world();
    w.open('a');
    w.open('b', undefined, 'a');
    w.open('a', undefined, 'b');
    expect(w.reserve('x', { scope: 'b' })).toMatchObject([{ kind: 'denied', reason: 'unknown_scope' }]);
  });

  it('a window that empties spends exactly nothing (no floating-point residue)', () => {
    const w = world();
    w.open('s', { usd: 10, windowMs: 1_000 });
    w.reserve('a', { usd: 0.1 });
    w.settle('a', 1, 0.1);
    w.reserve('b', { usd: 0.2 });
    w.settle('b', 1, 0.2);
    w.reserve('c', { usd: 0.1, now: 5_000 });
    w.apply({ type: 'release', id: 'c', now: 5_000 });
    expect(w.apply({ type: 'scope.close', scope: 's', now: 5_000 })).toMatchObject([
      { kind: 'scope_closed', summary: { windowUsd: 0, windowTokens: 0, spentTokens: 2, calls: 2 } },
    ]);
  });
});

describe('resources: what calls in flight hold, and when to wake', () => {
  it('a rolling window drops only the spend that left it', () => {
    const w = world();
    w.open('s', { tokens: 1_000, windowMs: 1_000 });
    w.reserve('a', { now: 0 });
    w.settle('a', 60, null, 0);
    w.reserve('b', { now: 500 });
    w.settle('b', 30, null, 500);
    w.reserve('c', { now: 1_000 });
    w.settle('c', 5, null, 1_000);
    expect(w.apply({ type: 'scope.close', scope: 's', now: 1_000 })).toMatchObject([
      { kind: 'scope_closed', summary: { windowTokens: 35, spentTokens: 95, calls: 3 } },
    ]);
  });

  it('a held call stays held while the estimates still in flight fill the budget', () => {
    const w = world();
    w.open('s', { tokens: 100 });
    w.reserve('a', { tokens: 50 });
    w.reserve('b', { tokens: 150 });
    expect(w.reserve('c', { tokens: 1 })).toMatchObject([{ kind: 'budget_wait', reserved: 200, limit: 100 }]);
    // a returns its 50: b's 150 still fill the budget.
    expect(w.apply({ type: 'release', id: 'a', now: 0 })).toEqual([
      { kind: 'released', id: 'a', scope: 's', tokens: 50, usd: null },
    ]);
    expect(w.apply({ type: 'release', id: 'b', now: 0 })).toContainEqual(
      expect.objectContaining({ kind: 'granted', id: 'c' }),
    );
  });

  it('a newcomer queues behind a waiting call it shares a quota with, even when that quota has room', () => {
    const w = world({
      quotas: [
        { provider: 'p', maxInFlight: 5 },
        { provider: 'p', model: 'm2', requestsPerMinute: 1 },
      ],
    });
    w.open('s');
    w.reserve('a', { model: 'm2' });
    expect(w.reserve('b', { model: 'm2' })).toMatchObject([{ kind: 'waiting', quota: 'p:m2' }]);
    expect(w.reserve('c', { model: 'm1' })).toMatchObject([{ kind: 'waiting', position: 2 }]);
    expect(w.reserve('d', { provider: 'q' })).toMatchObject([{ kind: 'granted' }]);
  });

  it('wakes at the earliest time any waiting call may run', () => {
    const w = world({
      quotas: [
        { provider: 'p', model: 'm1', requestsPerMinute: 1 },
        { provider: 'p', model: 'm2', requestsPerMinute: 1 },
      ],
    });
    w.open('s');
    w.reserve('a', { model: 'm1', now: 0 });
    w.reserve('b', { model: 'm2', now: 10 });
    w.reserve('c', { model: 'm2', now: 20 });
    expect(w.state.nextWakeAt).toBe(60_010);
    w.reserve('d', { model: 'm1', now: 30 });
    expect(w.state.nextWakeAt).toBe(60_000);
  });

  it('returns no USD figure when the estimate or the settlement had none', () => {
    const w = world();
    w.open('s');
    w.reserve('a');
    expect(w.settle('a', 1, 0.1)).toMatchObject([{ kind: 'spend', usd: 0.1, returnedUsd: null }]);
  });

  it('a warning re-arms only when spend falls back under the threshold', () => {
    const w = world();
    w.open('s', { tokens: 100 });
    for (const [id, tokens] of [
      ['a', 80],
      ['b', 1],
      ['c', 1],
      ['d', 1],
    ] as const) {
      w.reserve(id);
      const warnings = w.settle(id, tokens).filter((o) => o.kind === 'budget_warning');
      expect(warnings, id).toHaveLength(id === 'a' ? 1 : 0);
    }
  });
});

describe('resources: configuration and foreign events', () => {
  it('merges quotas given twice for the same provider and model', () => {
    const w = world({
      quotas: [
        { provider: 'p', requestsPerMinute: 1 },
        { provider: 'p', maxInFlight: 5 },
      ],
    });
    expect(w.state.quotaKeys).toEqual(['p:*']);
    w.open('s');
    w.reserve('a');
    expect(w.reserve('b')).toMatchObject([{ kind: 'waiting', quota: 'p:*' }]);
  });

  it('ignores events that are not its own, keeping its last decisions', () => {
    const w = world();
    w.open('s');
    w.reserve('a');
    const before = w.state.outbox;
    applyResourceEvent(w.state, { type: 'xstate.stop' } as unknown as ResourceEvent);
    expect(w.state.outbox).toBe(before);
  });

  it('the pure form leaves the given state untouched', () => {
    const state = initialResourceState();
    const next = resourceTransition(state, { type: 'scope.open', scope: 's', parent: null, now: 0 });
    expect(state.scopes).toEqual({});
    expect(Object.keys(next.scopes)).toEqual(['s']);
  });
});

describe('resources: a bounded reservation caps its call', () => {
  /** A prompt of `input` tokens asking for up to `maxTokens` of output; USD at $1 in, $4 out per million tokens. */
  const bounded = (input: number, maxTokens = 4_096, priced = true): OutputBound => ({
    inputTokens: input,
    inputUsd: priced ? input / 1_000_000 : null,
    maxTokens,
    usdPerToken: priced ? 4 / 1_000_000 : null,
  });
  const granted = (outputs: ResourceOutput[]) => outputs.find((output) => output.kind === 'granted');

  it('caps the output at what the token budget leaves after the prompt, and holds prompt plus cap', () => {
    const w = world();
    w.open('s', { tokens: 1_000 });
    expect(granted(w.reserve('a', { tokens: 266, bound: bounded(10) }))).toMatchObject({
      maxOutputTokens: 990,
    });
    expect(w.state.scopes.s).toMatchObject({ reservedTokens: 1_000 });
    // The budget is held in full: the next call waits for the first to settle, then gets what is left.
    expect(w.reserve('b', { tokens: 266, bound: bounded(10) })).toMatchObject([
      { kind: 'budget_wait', blocking: 's', spent: 0, reserved: 1_000, limit: 1_000 },
    ]);
    expect(granted(w.settle('a', 400))).toMatchObject({ id: 'b', maxOutputTokens: 590 });
  });

  it('the call’s own limit wins when it is lower; a budget anywhere up the chain caps it', () => {
    const w = world();
    w.open('tenant', { tokens: 300 });
    w.open('run', { tokens: 5_000 }, 'tenant');
    expect(granted(w.reserve('a', { scope: 'run', bound: bounded(20, 100) }))).toMatchObject({
      maxOutputTokens: 100,
    });
    expect(granted(w.reserve('b', { scope: 'run', bound: bounded(20) }))).toMatchObject({
      maxOutputTokens: 160,
    });
  });

  it('converts a USD budget through the prices: the output the rest of the money buys', () => {
    const w = world();
    w.open('s', { usd: 0.001 });
    // $0.001 - $0.00001 for the prompt buys 247 output tokens at $4 per million.
    const outputs = w.reserve('a', { usd: 0.00003, bound: bounded(10) });
    expect(granted(outputs)).toMatchObject({ maxOutputTokens: 247 });
    expect(w.state.scopes.s?.reservedUsd).toBeCloseTo(0.000998, 12);
  });

  it('denies a call whose prompt leaves less than the minimal output, before any spend reaches the budget', () => {
    const w = world();
    w.open('s', { tokens: 100 });
    expect(w.reserve('a', { bound: bounded(100 - minOutputTokens + 1) })).toEqual([
      {
        kind: 'denied',
        id: 'a',
        scope: 's',
        reason: 'budget_exhausted',
        blocking: 's',
        message: `token budget of s exhausted: 0 spent of 100; the call needs ${100 - minOutputTokens + 1} for its prompt and ${minOutputTokens} output tokens`,
      },
    ]);
    // A call that asks for less than the minimal output needs only that.
    expect(granted(w.reserve('b', { bound: bounded(95, 5) }))).toMatchObject({ maxOutputTokens: 5 });
  });

  it('without a budget nothing is capped and the estimate is held; an unpriced model under a USD budget is denied', () => {
    const w = world();
    w.open('s');
    expect(granted(w.reserve('a', { tokens: 42, bound: bounded(10) }))).toMatchObject({
      maxOutputTokens: null,
    });
    expect(w.state.scopes.s?.reservedTokens).toBe(42);
    const usd = world();
    usd.open('s', { usd: 1 });
    expect(usd.reserve('a', { usd: 0.1, bound: bounded(10, 4_096, false) })).toMatchObject([
      { kind: 'denied', reason: 'unpriced_model' },
    ]);
  });
});
