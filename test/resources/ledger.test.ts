import { describe, expect, it } from 'vitest';
import {
  applyResourceEvent,
  initialResourceState,
  liveRequests,
  type ResourceState,
} from '../../src/resources/ledger.ts';

/** The quota log keeps a dead prefix and compacts it in bulk; settlements must still find their entries. */
describe('resource transition function: quota log compaction', () => {
  it('counts live requests and tokens exactly across expiry and compaction', () => {
    const state: ResourceState = initialResourceState({
      quotas: [{ provider: 'p', requestsPerMinute: 100_000, tokensPerMinute: 1e9 }],
    });
    applyResourceEvent(state, { type: 'scope.open', scope: 's', parent: null, now: 0 });
    const reserve = (id: string, now: number) =>
      applyResourceEvent(state, {
        type: 'reserve',
        id,
        scope: 's',
        provider: 'p',
        model: 'm',
        tokens: 10,
        usd: null,
        now,
      });
    // 3,000 calls granted over the first 30 s, all still in flight.
    for (let i = 0; i < 3_000; i++) reserve(`a${i}`, i * 10);
    const quota = state.quotas['p:*'];
    if (!quota) throw new Error('quota missing');
    expect(liveRequests(quota)).toBe(3_000);
    // At 61 s the first 100 have left the window (granted at 0..990 ms): no compaction yet.
    reserve('b0', 61_000);
    expect(quota.logHead).toBe(101);
    expect(liveRequests(quota)).toBe(2_900);
    // At 80 s, 2,001 have left: the dead prefix is compacted.
    reserve('b1', 80_000);
    expect(quota.logHead).toBe(0);
    expect(quota.logBase).toBe(2_001);
    expect(liveRequests(quota)).toBe(1_001);
    expect(quota.logTokens).toBe(10_010);
    // Settling a call still in the window corrects its tokens; one that left the window changes nothing.
    applyResourceEvent(state, { type: 'settle', id: 'a2500', tokens: 4, usd: null, now: 80_000 });
    expect(quota.logTokens).toBe(10_004);
    applyResourceEvent(state, { type: 'settle', id: 'a10', tokens: 4, usd: null, now: 80_000 });
    expect(quota.logTokens).toBe(10_004);
    expect(state.trace).toContain('settle.settled');
    expect(quota.inFlight).toBe(3_000);
    // Everything leaves: the log is emptied and the sequence keeps counting.
    reserve('c0', 200_000);
    expect(liveRequests(quota)).toBe(1);
    expect(quota.logBase).toBe(3_002);
    expect(quota.logTokens).toBe(10);
  });
});

describe('resource transition function: quota matching', () => {
  it('a provider quota covers its wire variants and all its models; a model quota only that model', () => {
    const state = initialResourceState({
      quotas: [
        { provider: 'openai', requestsPerMinute: 1 },
        { provider: 'anthropic', model: 'claude-haiku-4-5', maxInFlight: 1 },
      ],
    });
    applyResourceEvent(state, { type: 'scope.open', scope: 's', parent: null, now: 0 });
    const reserve = (id: string, provider: string, model: string) =>
      applyResourceEvent(state, {
        type: 'reserve',
        id,
        scope: 's',
        provider,
        model,
        tokens: 1,
        usd: null,
        now: 0,
      }).trace;
    expect(reserve('a', 'openai-chat', 'gpt-5')).toEqual(['reserve.granted']);
    expect(reserve('b', 'openai-responses', 'gpt-5-mini')).toEqual(['reserve.queued']);
    expect(reserve('c', 'openaix', 'm')).toEqual(['reserve.granted']);
    expect(reserve('d', 'anthropic', 'claude-sonnet-4-6')).toEqual(['reserve.granted']);
    expect(reserve('e', 'anthropic', 'claude-haiku-4-5')).toEqual(['reserve.granted']);
    expect(reserve('f', 'anthropic', 'claude-haiku-4-5')).toEqual(['reserve.queued']);
  });
});

/**
 * The schedule the resource property test once reported as 3 grants in one minute for a 2-per-minute quota
 * (seed -419363368). The manager was right; the test read the clock late. This pins what the manager decides: the
 * window is (now - 60 s, now], so calls granted at 0 leave it at exactly 60 s and two more may be granted then,
 * and no more until 120 s.
 */
describe('resource transition function: requests-per-minute boundary', () => {
  it('grants two calls per minute, freeing the window at exactly 60 s, never three in one minute', () => {
    const state = initialResourceState({
      quotas: [{ provider: 'p', requestsPerMinute: 2, tokensPerMinute: 250, maxInFlight: 3 }],
    });
    applyResourceEvent(state, {
      type: 'scope.open',
      scope: 'tenant',
      parent: null,
      limit: { tokens: 200 },
      now: 0,
    });
    applyResourceEvent(state, {
      type: 'scope.open',
      scope: 'run',
      parent: 'tenant',
      limit: { tokens: 100 },
      now: 0,
    });
    const grantedAt = new Map<string, number>();
    const apply = (event: Parameters<typeof applyResourceEvent>[1]) => {
      applyResourceEvent(state, event);
      for (const output of state.outbox) if (output.kind === 'granted') grantedAt.set(output.id, event.now);
      return state.trace;
    };
    const reserve = (id: string, now: number) =>
      apply({ type: 'reserve', id, scope: 'run', provider: 'p', model: 'm', tokens: 1, usd: null, now });
    const settle = (id: string, now: number) => apply({ type: 'settle', id, tokens: 1, usd: null, now });

    expect(reserve('a', 0)).toEqual(['reserve.granted']);
    expect(reserve('b', 0)).toEqual(['reserve.granted']);
    for (const id of ['c', 'd', 'e']) expect(reserve(id, 13_614)).toEqual(['reserve.queued']);
    // The wake-up is set for when the oldest call leaves the window, not earlier.
    expect(state.nextWakeAt).toBe(60_000);
    expect(apply({ type: 'tick', now: 44_488 })).not.toContain('wait.granted');
    expect(apply({ type: 'tick', now: 59_999 })).not.toContain('wait.granted');
    // At 60 s both calls of minute one have left: c is granted, d waits for an in-flight slot (3 in flight).
    apply({ type: 'tick', now: 60_000 });
    expect([...grantedAt.keys()]).toEqual(['a', 'b', 'c']);
    expect(reserve('f', 60_000)).toEqual(['reserve.queued']);
    // Settling frees in-flight slots: d takes the window's second place; e and f wait for the next minute.
    settle('a', 60_000);
    settle('b', 60_000);
    settle('c', 60_000);
    expect(grantedAt.get('d')).toBe(60_000);
    expect(state.waiting).toEqual(['e', 'f']);
    expect(state.nextWakeAt).toBe(120_000);
    settle('d', 60_000);
    expect(apply({ type: 'tick', now: 119_999 })).not.toContain('wait.granted');
    apply({ type: 'tick', now: 120_000 });
    expect(Object.fromEntries(grantedAt)).toEqual({
      a: 0,
      b: 0,
      c: 60_000,
      d: 60_000,
      e: 120_000,
      f: 120_000,
    });
    // No window (t - 60 s, t] at any grant holds more than two grants.
    const times = [...grantedAt.values()];
    for (const at of times)
      expect(times.filter((t) => t > at - 60_000 && t <= at).length).toBeLessThanOrEqual(2);
  });
});

/**
 * A budget that only the estimates of calls in flight fill holds a new call back until they settle; it is denied
 * only once spend itself reaches the limit.
 */
describe('resource transition function: calls held by reservations in flight', () => {
  const world = (limit: { tokens?: number; usd?: number }) => {
    const state = initialResourceState({ quotas: [{ provider: 'p', requestsPerMinute: 100 }] });
    applyResourceEvent(state, { type: 'scope.open', scope: 'tenant', parent: null, limit, now: 0 });
    applyResourceEvent(state, { type: 'scope.open', scope: 'run', parent: 'tenant', now: 0 });
    applyResourceEvent(state, { type: 'scope.open', scope: 'other', parent: null, now: 0 });
    const apply = (event: Parameters<typeof applyResourceEvent>[1]) => applyResourceEvent(state, event);
    const reserve = (id: string, tokens: number, usd: number | null = null, scope = 'run') =>
      apply({ type: 'reserve', id, scope, provider: 'p', model: 'm', tokens, usd, now: 0 });
    return { state, apply, reserve };
  };

  it('$0 spent and $0.0012 reserved of a $0.001 budget: the next call waits, then runs once the first settles', () => {
    const { state, apply, reserve } = world({ usd: 0.001 });
    // A call alone starts whatever its estimate, when nothing is spent or reserved.
    expect(reserve('a', 1_200, 0.0012).trace).toEqual(['reserve.granted']);
    expect(reserve('b', 1_200, 0.0012).trace).toEqual(['reserve.held_budget']);
    expect(state.outbox).toEqual([
      {
        kind: 'budget_wait',
        id: 'b',
        scope: 'run',
        blocking: 'tenant',
        dimension: 'usd',
        spent: 0,
        reserved: 0.0012,
        limit: 0.001,
      },
    ]);
    // Held by its budget, it waits on no quota and no time: nothing to wake for.
    expect(state.nextWakeAt).toBeNull();
    // Another budget's call on the same quota is not queued behind it.
    expect(reserve('c', 10, null, 'other').trace).toEqual(['reserve.granted']);
    // The first call cost a quarter of its estimate: the waiting one is granted.
    expect(apply({ type: 'settle', id: 'a', tokens: 300, usd: 0.0003, now: 5 }).trace).toContain(
      'wait.granted',
    );
    expect(state.reservations.get('b')?.status).toBe('granted');
    expect(state.reservations.get('b')?.heldBy).toBeNull();
  });

  it('denies the waiting call once the calls in flight have spent the budget; releases it if they are released', () => {
    const denied = world({ tokens: 1_000 });
    denied.reserve('a', 1_200);
    denied.reserve('b', 100);
    expect(denied.apply({ type: 'settle', id: 'a', tokens: 1_000, usd: null, now: 5 }).trace).toContain(
      'wait.denied_budget',
    );
    expect(denied.state.outbox).toContainEqual(
      expect.objectContaining({ kind: 'denied', id: 'b', reason: 'budget_exhausted', blocking: 'tenant' }),
    );
    expect(denied.state.waiting).toEqual([]);

    const released = world({ tokens: 1_000 });
    released.reserve('a', 1_200);
    released.reserve('b', 100);
    // Still held while another call of the budget is in flight (a tick changes nothing).
    expect(released.apply({ type: 'tick', now: 1 }).trace).toEqual([
      'tick',
      'wait.held_budget',
      'wait.still_waiting',
    ]);
    expect(released.apply({ type: 'release', id: 'a', now: 2 }).trace).toContain('wait.granted');
    // Spend, not reservations, decides a denial: 999 of 1,000 spent still lets a call start.
    released.apply({ type: 'settle', id: 'b', tokens: 999, usd: null, now: 3 });
    expect(released.reserve('c', 500).trace).toEqual(['reserve.granted']);
    released.apply({ type: 'settle', id: 'c', tokens: 1, usd: null, now: 4 });
    expect(released.reserve('d', 1).trace).toEqual(['reserve.denied_budget']);
  });
});
