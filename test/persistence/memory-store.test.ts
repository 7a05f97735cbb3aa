import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.ts';
import { createMemoryStore } from '../../src/persistence/memory-store.ts';
import { StoreCommitError } from '../../src/persistence/store-errors.ts';
import { approval, checkpoint, events, idleRow, sessionRow } from './fixtures.ts';

describe('createMemoryStore', () => {
  it('keeps at most maxEventsPerSession events, dropping the oldest; reading after a dropped seq gives what is left', () => {
    const store = createMemoryStore({ maxEventsPerSession: 10 });
    store.commit('s1', { session: idleRow('s1'), events: events('s1', 0, 7) });
    store.commit('s1', { events: events('s1', 7, 8) });
    store.commit('s1', { events: events('s1', 15, 10) });
    const seqs = (after: number, limit?: number) =>
      store.readEvents('s1', after, limit).map((event) => event.seq);
    expect(seqs(-1)).toEqual([15, 16, 17, 18, 19, 20, 21, 22, 23, 24]);
    expect(seqs(3)).toEqual([15, 16, 17, 18, 19, 20, 21, 22, 23, 24]);
    expect(seqs(3, 2)).toEqual([15, 16]);
    expect(seqs(20)).toEqual([21, 22, 23, 24]);
    expect(seqs(24)).toEqual([]);
    // The log's seq goes on from the last event, not from what is retained.
    expect(store.load('s1')?.lastSeq).toBe(24);
    expect(() => store.commit('s1', { events: events('s1', 15, 1) })).toThrow(StoreCommitError);
    store.commit('s1', { events: events('s1', 25, 1) });
    expect(seqs(-1)).toEqual([16, 17, 18, 19, 20, 21, 22, 23, 24, 25]);
  });

  it('stays correct over many single-event commits (the retained window moves and is compacted)', () => {
    const store = createMemoryStore({ maxEventsPerSession: 5 });
    store.commit('s1', { session: idleRow('s1') });
    for (let seq = 0; seq < 5_000; seq++) store.commit('s1', { events: events('s1', seq, 1) });
    expect(store.readEvents('s1', -1)).toEqual(events('s1', 4_995, 5));
    expect(store.readEvents('s1', 4_996, 2)).toEqual(events('s1', 4_997, 2));
    expect(store.load('s1')?.lastSeq).toBe(4_999);
  });

  it('keeps 10,000 events per session by default', () => {
    const store = createMemoryStore();
    store.commit('s1', { session: idleRow('s1'), events: events('s1', 0, 10_050) });
    const kept = store.readEvents('s1', -1);
    expect(kept).toHaveLength(10_000);
    expect(kept[0]?.seq).toBe(50);
  });

  it('keeps committed values by reference; the Maps and arrays it returns are its own copies', () => {
    const store = createMemoryStore();
    const row = sessionRow('s1');
    const nested = checkpoint();
    const record = approval('s1', 'call_2');
    const value = { result: 'five' };
    store.commit('s1', {
      session: row,
      runs: [['nested', nested]],
      journal: [['k', value]],
      approvals: [record],
    });
    const state = store.load('s1');
    expect(state?.session).toBe(row);
    expect(state?.runs.get('nested')).toBe(nested);
    expect(state?.journal.get('k')).toBe(value);
    expect(state?.approvals[0]).toBe(record);

    state?.runs.clear();
    state?.journal.clear();
    state?.approvals.pop();
    const again = store.load('s1');
    expect(again?.runs.size).toBe(1);
    expect(again?.journal.size).toBe(1);
    expect(again?.approvals).toHaveLength(1);
  });

  it('refuses a bad maxEventsPerSession with a ConfigError', () => {
    expect(() => createMemoryStore({ maxEventsPerSession: -1 })).toThrow(ConfigError);
    expect(() => createMemoryStore({ maxEventsPerSession: 2.5 })).toThrow(ConfigError);
    expect(() => createMemoryStore({ maxEventsPerSession: Number.POSITIVE_INFINITY })).not.toThrow();
  });
});
