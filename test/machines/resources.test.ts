import { describe, expect, it } from 'vitest';
import {
  applyResourceEvent,
  initialResourceState,
  liveRequests,
  type ResourceState,
} from '../../src/machines/resources.ts';

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
