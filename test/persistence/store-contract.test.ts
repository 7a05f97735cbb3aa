import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.ts';
import type { RunEvent } from '../../src/core/events.ts';
import type { JsonValue } from '../../src/core/json.ts';
import { createMemoryStore } from '../../src/persistence/memory-store.ts';
import { createSqliteStore } from '../../src/persistence/sqlite-store.ts';
import type { CommitBatch, SessionStore } from '../../src/persistence/store.ts';
import { StoreClosedError } from '../../src/persistence/store-errors.ts';
import { commitRefusal } from '../support/commit-refusal.ts';
import { approval, checkpoint, events, idleRow, sessionRow } from './fixtures.ts';

/** One contract, every store: what the runtime may rely on whichever store it is given. */
interface Harness {
  name: string;
  /** Whether a second store opened on the same file sees what the first committed. */
  durable: boolean;
  open(file: string): SessionStore;
}

const harnesses: Harness[] = [
  { name: 'memory', durable: false, open: () => createMemoryStore() },
  { name: 'sqlite (synchronous full)', durable: true, open: (file) => createSqliteStore(file) },
  {
    name: 'sqlite (synchronous normal)',
    durable: true,
    open: (file) => createSqliteStore(file, { synchronous: 'normal' }),
  },
];

describe.each(harnesses)('$name store', (harness) => {
  let directory: string;
  let file: string;
  let store: SessionStore;
  const opened: SessionStore[] = [];
  const open = (): SessionStore => {
    const next = harness.open(file);
    opened.push(next);
    return next;
  };

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'troupe-store-'));
    file = join(directory, 'sessions.db');
    store = open();
  });

  afterEach(() => {
    for (const each of opened.splice(0)) each.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('holds the lease of every session it runs in this process: taken, kept through commits, given back, taken again', async () => {
    expect(store.acquireLease).toBeTypeOf('function');
    expect(store.releaseLease).toBeTypeOf('function');
    await store.acquireLease?.('s1');
    // The same process takes its own lease again (a second system on the same store, a restore after a suspend).
    await store.acquireLease?.('s1');
    await store.commit('s1', { session: sessionRow('s1'), events: events('s1', 0, 1) });
    await store.releaseLease?.('s1');
    // A commit of a session whose lease is free takes it (a session's first commit does).
    await store.commit('s1', { events: events('s1', 1, 1) });
    await store.acquireLease?.('s1', { takeOver: true });
    await store.commit('s1', { session: idleRow('s1') });
    await store.releaseLease?.('never-seen');
    expect((await store.load('s1'))?.lastSeq).toBe(1);
    await store.close();
    expect(() => store.acquireLease?.('s1')).toThrow(StoreClosedError);
  });

  it('knows nothing of a session it never saw', async () => {
    expect(await store.load('nobody')).toBeUndefined();
    expect(await store.readEvents('nobody', -1)).toEqual([]);
    expect(await store.list()).toEqual([]);
    expect(await store.approvals()).toEqual([]);
    await store.delete('nobody');
  });

  it('answers synchronously: every call returns a plain value, never a promise', () => {
    const results = [
      store.commit('s1', { session: sessionRow('s1'), events: events('s1', 0, 1) }),
      store.load('s1'),
      store.readEvents('s1', -1),
      store.list(),
      store.approvals(),
      store.delete('s1'),
    ];
    for (const result of results) expect(result).not.toBeInstanceOf(Promise);
  });

  it('loads back everything a commit wrote: row, nested runs, journal, approvals and the last seq', async () => {
    const row = sessionRow('s1');
    const nested = checkpoint({ step: 1 });
    await store.commit('s1', {
      session: row,
      runs: [['support>call_2/researcher', nested]],
      journal: [
        ['model:3', { text: 'hi', toolCalls: [] }],
        ['tool:call_1', '5'],
      ],
      events: events('s1', 0, 3),
      approvals: [approval('s1', 'call_2')],
    });
    const state = await store.load('s1');
    expect(state?.session).toEqual(row);
    expect(state?.runs).toEqual(new Map([['support>call_2/researcher', nested]]));
    expect(state?.journal).toEqual(
      new Map<string, JsonValue>([
        ['model:3', { text: 'hi', toolCalls: [] }],
        ['tool:call_1', '5'],
      ]),
    );
    expect(state?.approvals).toEqual([approval('s1', 'call_2')]);
    expect(state?.lastSeq).toBe(2);
    expect(await store.readEvents('s1', -1)).toEqual(events('s1', 0, 3));
  });

  it('gives values back exactly as JSON has them: unicode, odd keys, nulls, empty containers, fractions', async () => {
    // Keys that name Object.prototype members must come back as own data, not be looked up or dropped.
    const odd = JSON.parse(
      '{"__proto__": {"polluted": true}, "constructor": 1, "hasOwnProperty": null, "toString": "x"}',
    ) as JsonValue;
    const values: [string, JsonValue][] = [
      ['odd keys', odd],
      ['unicode', 'naïve café, 漢字, emoji 🎉, lone surrogate \ud800, nul \u0000 inside'],
      ['empty', { list: [], object: {}, text: '' }],
      ['numbers', [0, 0.1, 1e21, -3.5, 9_007_199_254_740_991]],
      ['null', null],
      ['false', false],
    ];
    const row = sessionRow('s1', {
      transcript: [
        { role: 'user', content: 'quote " backslash \\ newline \n tab \t' },
        { role: 'assistant', content: '🎉', reasoning: [{ provider: 'anthropic', data: odd }] },
      ],
      status: 'idle',
      turn: null,
    });
    const event: RunEvent = {
      ...events('s1', 0, 1)[0]!,
      type: 'delta',
      data: { content: 'ünïcödé 🎉 \u0000' },
    };
    await store.commit('s1', { session: row, journal: values, events: [event] });
    const state = await store.load('s1');
    expect(state?.session).toEqual(row);
    for (const [key, value] of values) expect(state?.journal.get(key)).toEqual(value);
    const back = state?.journal.get('odd keys') as Record<string, unknown>;
    expect(Object.hasOwn(back, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(await store.readEvents('s1', -1)).toEqual([event]);
  });

  it('commits a batch whole or not at all: a batch whose events do not continue the log writes nothing', async () => {
    const before = sessionRow('s1');
    await store.commit('s1', {
      session: before,
      runs: [['nested', checkpoint()]],
      journal: [['tool:call_1', '5']],
      events: events('s1', 0, 2),
      approvals: [approval('s1', 'call_2')],
    });
    const bad: CommitBatch = {
      session: sessionRow('s1', { turns: 7, updatedAt: 9_999 }),
      clearTurn: true,
      runs: [['another', checkpoint()]],
      journal: [['tool:call_9', 'lost']],
      events: [...events('s1', 2, 1), ...events('s1', 4, 1)], // 2, then a gap
      approvals: [
        approval('s1', 'call_2', { status: 'approved', decision: { type: 'approve' }, decidedAt: 3 }),
      ],
    };
    const error = commitRefusal(() => store.commit('s1', bad));
    expect(error.reason).toBe('event_sequence');
    expect(error.sessionId).toBe('s1');
    expect(error.message).toContain('Commit to session "s1" refused, nothing was written');

    const state = await store.load('s1');
    expect(state?.session).toEqual(before);
    expect([...(state?.runs.keys() ?? [])]).toEqual(['nested']);
    expect([...(state?.journal.keys() ?? [])]).toEqual(['tool:call_1']);
    expect(state?.approvals).toEqual([approval('s1', 'call_2')]);
    expect(state?.lastSeq).toBe(1);
    expect(await store.readEvents('s1', -1)).toEqual(events('s1', 0, 2));
    expect(await store.list()).toMatchObject([
      { sessionId: 's1', turns: 1, updatedAt: 1_000, pendingApprovals: 1 },
    ]);

    // The same batch with the right seq goes through.
    await store.commit('s1', { ...bad, events: events('s1', 2, 2) });
    expect((await store.load('s1'))?.lastSeq).toBe(3);
  });

  it('refuses events that do not start at lastSeq + 1: a fresh log starts at 0, a repeated seq is refused', async () => {
    expect(
      commitRefusal(() => store.commit('s1', { session: idleRow('s1'), events: events('s1', 1, 1) })).reason,
    ).toBe('event_sequence');
    expect(await store.load('s1')).toBeUndefined();
    await store.commit('s1', { session: idleRow('s1'), events: events('s1', 0, 3) });
    expect(commitRefusal(() => store.commit('s1', { events: events('s1', 2, 1) })).reason).toBe(
      'event_sequence',
    );
    expect(commitRefusal(() => store.commit('s1', { events: events('s1', 4, 1) })).reason).toBe(
      'event_sequence',
    );
    await store.commit('s1', { events: events('s1', 3, 1) });
    expect((await store.readEvents('s1', -1)).map((event) => event.seq)).toEqual([0, 1, 2, 3]);
  });

  it('refuses rows of a session that has none (no session row yet), and a row under another id', async () => {
    for (const batch of [
      { events: events('s1', 0, 1) },
      { journal: [['k', 1]] },
      { approvals: [approval('s1', 'c')] },
      { runs: [['r', checkpoint()]] },
    ] as CommitBatch[])
      expect(commitRefusal(() => store.commit('s1', batch)).reason).toBe('unknown_session');
    expect(await store.load('s1')).toBeUndefined();
    expect(await store.list()).toEqual([]);
    expect(await store.approvals()).toEqual([]);

    expect(commitRefusal(() => store.commit('s1', { session: idleRow('s2') })).reason).toBe('invalid_value');
    expect(await store.load('s1')).toBeUndefined();
  });

  it('replaces the session row whole, keeping the runs, journal, events and approvals beside it', async () => {
    await store.commit('s1', {
      session: sessionRow('s1'),
      runs: [['nested', checkpoint()]],
      journal: [['k', 1]],
      events: events('s1', 0, 2),
      approvals: [approval('s1', 'call_2')],
    });
    const next = idleRow('s1', { turns: 2, updatedAt: 2_000, agent: 'billing' });
    await store.commit('s1', { session: next });
    const state = await store.load('s1');
    expect(state?.session).toEqual(next);
    expect(state?.runs.size).toBe(1);
    expect(state?.journal.size).toBe(1);
    expect(state?.approvals).toHaveLength(1);
    expect(state?.lastSeq).toBe(1);
  });

  it('writes nested-run checkpoints by route, replaces them, and deletes one given null', async () => {
    await store.commit('s1', {
      session: sessionRow('s1'),
      runs: [
        ['a>call_1/x', checkpoint({ step: 1 })],
        ['a>call_2/y', checkpoint({ step: 2 })],
      ],
    });
    await store.commit('s1', {
      runs: [
        ['a>call_1/x', null],
        ['a>call_2/y', checkpoint({ step: 5, phase: 'finalOutput' })],
      ],
    });
    const runs = (await store.load('s1'))?.runs;
    expect(runs).toEqual(new Map([['a>call_2/y', checkpoint({ step: 5, phase: 'finalOutput' })]]));
  });

  it('keeps the last value of a journal key', async () => {
    await store.commit('s1', { session: sessionRow('s1'), journal: [['tool:call_2', 'first']] });
    await store.commit('s1', { journal: [['tool:call_2', { result: 'second' }]] });
    expect((await store.load('s1'))?.journal).toEqual(new Map([['tool:call_2', { result: 'second' }]]));
  });

  it('clearTurn drops the nested runs and the journal, keeps the rest; the same batch may start the next turn', async () => {
    await store.commit('s1', {
      session: sessionRow('s1'),
      runs: [['nested', checkpoint()]],
      journal: [['tool:call_1', '5']],
      events: events('s1', 0, 2),
      approvals: [approval('s1', 'call_2')],
    });
    const finished = idleRow('s1', { turns: 2 });
    await store.commit('s1', { session: finished, clearTurn: true, events: events('s1', 2, 1) });
    let state = await store.load('s1');
    expect(state?.session).toEqual(finished);
    expect(state?.runs.size).toBe(0);
    expect(state?.journal.size).toBe(0);
    expect(state?.approvals).toHaveLength(1);
    expect(state?.lastSeq).toBe(2);

    // Cleared first, then the batch's own runs and journal apply.
    await store.commit('s1', {
      clearTurn: true,
      runs: [['fresh', checkpoint()]],
      journal: [['model:1', 'x']],
    });
    state = await store.load('s1');
    expect([...(state?.runs.keys() ?? [])]).toEqual(['fresh']);
    expect([...(state?.journal.keys() ?? [])]).toEqual(['model:1']);
  });

  it('reads events after a seq, at most a limit of them, in order', async () => {
    await store.commit('s1', { session: idleRow('s1'), events: events('s1', 0, 4) });
    await store.commit('s1', { events: events('s1', 4, 6) });
    const seqs = async (after: number, limit?: number) =>
      (await store.readEvents('s1', after, limit)).map((event) => event.seq);
    expect(await seqs(-1)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(await seqs(3)).toEqual([4, 5, 6, 7, 8, 9]);
    expect(await seqs(3, 2)).toEqual([4, 5]);
    expect(await seqs(-1, 0)).toEqual([]);
    expect(await seqs(8, 5)).toEqual([9]);
    expect(await seqs(9)).toEqual([]);
    expect(await seqs(100)).toEqual([]);
    expect(() => store.readEvents('s1', -1, -1)).toThrow(ConfigError);
    expect(() => store.readEvents('s1', -1, 1.5)).toThrow(ConfigError);
  });

  it('keeps the log of each session apart', async () => {
    await store.commit('a', { session: idleRow('a'), events: events('a', 0, 2) });
    await store.commit('b', { session: idleRow('b'), events: events('b', 0, 1) });
    expect(await store.readEvents('a', -1)).toEqual(events('a', 0, 2));
    expect(await store.readEvents('b', -1)).toEqual(events('b', 0, 1));
  });

  it('lists sessions oldest update first (ties in creation order), filtered by status, with pending approvals', async () => {
    await store.commit('c', { session: idleRow('c', { updatedAt: 300 }) });
    await store.commit('a', { session: sessionRow('a', { updatedAt: 100 }) });
    await store.commit('b', {
      session: sessionRow('b', {
        status: 'awaiting',
        updatedAt: 300,
        entry: 'front',
        agent: 'billing',
        turns: 4,
      }),
      approvals: [
        approval('b', 'x'),
        approval('b', 'y'),
        approval('b', 'z', { status: 'rejected', decision: { type: 'reject', reason: 'no' }, decidedAt: 5 }),
      ],
    });
    await store.commit('d', { session: idleRow('d', { status: 'closed', updatedAt: 50 }) });

    expect(await store.list()).toEqual([
      {
        sessionId: 'd',
        status: 'closed',
        entry: 'triage',
        agent: 'support',
        turns: 1,
        updatedAt: 50,
        pendingApprovals: 0,
      },
      {
        sessionId: 'a',
        status: 'running',
        entry: 'triage',
        agent: 'support',
        turns: 1,
        updatedAt: 100,
        pendingApprovals: 0,
      },
      {
        sessionId: 'c',
        status: 'idle',
        entry: 'triage',
        agent: 'support',
        turns: 1,
        updatedAt: 300,
        pendingApprovals: 0,
      },
      {
        sessionId: 'b',
        status: 'awaiting',
        entry: 'front',
        agent: 'billing',
        turns: 4,
        updatedAt: 300,
        pendingApprovals: 2,
      },
    ]);
    const ids = async (status: Parameters<SessionStore['list']>[0]) =>
      (await store.list(status)).map((summary) => summary.sessionId);
    expect(await ids({ status: ['running', 'awaiting', 'suspended'] })).toEqual(['a', 'b']);
    expect(await ids({ status: ['idle'] })).toEqual(['c']);
    expect(await ids({ status: [] })).toEqual([]);

    // A later update moves a session to the end.
    await store.commit('a', { session: idleRow('a', { updatedAt: 400 }) });
    expect(await ids(undefined)).toEqual(['d', 'c', 'b', 'a']);
  });

  it('lists approvals by session and status, in the order they were first recorded; a decision replaces a record in place', async () => {
    await store.commit('s1', {
      session: sessionRow('s1'),
      approvals: [approval('s1', 'a1'), approval('s1', 'a2')],
    });
    await store.commit('s2', { session: sessionRow('s2'), approvals: [approval('s2', 'b1')] });
    await store.commit('s1', {
      approvals: [approval('s1', 'a3', { kind: 'question', question: 'Which account?' })],
    });
    const decided = approval('s1', 'a1', {
      status: 'approved',
      decision: { type: 'approve' },
      decidedAt: 2_500,
    });
    await store.commit('s1', { approvals: [decided] });

    const calls = async (query?: Parameters<SessionStore['approvals']>[0]) =>
      (await store.approvals(query)).map((record) => `${record.sessionId}/${record.callId}`);
    expect(await calls()).toEqual(['s1/a1', 's1/a2', 's2/b1', 's1/a3']);
    expect(await calls({ status: ['pending'] })).toEqual(['s1/a2', 's2/b1', 's1/a3']);
    expect(await calls({ sessionId: 's1' })).toEqual(['s1/a1', 's1/a2', 's1/a3']);
    expect(await calls({ sessionId: 's1', status: ['approved', 'rejected'] })).toEqual(['s1/a1']);
    expect(await calls({ sessionId: 'nobody' })).toEqual([]);
    expect((await store.approvals({ sessionId: 's1', status: ['approved'] }))[0]).toEqual(decided);
    expect((await store.load('s1'))?.approvals.map((record) => record.callId)).toEqual(['a1', 'a2', 'a3']);
    expect((await store.list()).map((summary) => summary.pendingApprovals)).toEqual([2, 1]);
  });

  it('deletes a session with everything of it; the id can start again from seq 0', async () => {
    await store.commit('s1', {
      session: sessionRow('s1'),
      runs: [['nested', checkpoint()]],
      journal: [['k', 1]],
      events: events('s1', 0, 3),
      approvals: [approval('s1', 'call_2')],
    });
    await store.commit('s2', {
      session: idleRow('s2'),
      events: events('s2', 0, 1),
      approvals: [approval('s2', 'x')],
    });
    await store.delete('s1');
    expect(await store.load('s1')).toBeUndefined();
    expect(await store.readEvents('s1', -1)).toEqual([]);
    expect(await store.approvals({ sessionId: 's1' })).toEqual([]);
    expect((await store.list()).map((summary) => summary.sessionId)).toEqual(['s2']);
    expect((await store.approvals()).map((record) => record.callId)).toEqual(['x']);
    expect((await store.load('s2'))?.lastSeq).toBe(0);

    await store.commit('s1', { session: idleRow('s1'), events: events('s1', 0, 1) });
    const state = await store.load('s1');
    expect(state?.lastSeq).toBe(0);
    expect(state?.runs.size).toBe(0);
    expect(state?.journal.size).toBe(0);
    expect(state?.approvals).toEqual([]);
  });

  it('throws StoreClosedError from every call after close (closing again does nothing)', async () => {
    await store.commit('s1', { session: idleRow('s1') });
    await store.close();
    await store.close();
    const calls: (() => unknown)[] = [
      () => store.load('s1'),
      () => store.commit('s1', { session: idleRow('s1') }),
      () => store.readEvents('s1', -1),
      () => store.list(),
      () => store.approvals(),
      () => store.delete('s1'),
    ];
    for (const call of calls) expect(call).toThrow(StoreClosedError);
  });

  it.runIf(harness.durable)(
    'continues the event log across a reopen, and refuses a seq the log already has',
    async () => {
      await store.commit('s1', { session: sessionRow('s1'), events: events('s1', 0, 3) });
      await store.close();
      const reopened = open();
      const state = await reopened.load('s1');
      expect(state?.lastSeq).toBe(2);
      expect(state?.session).toEqual(sessionRow('s1'));
      expect(commitRefusal(() => reopened.commit('s1', { events: events('s1', 0, 1) })).reason).toBe(
        'event_sequence',
      );
      await reopened.commit('s1', { events: events('s1', 3, 2) });
      expect((await reopened.readEvents('s1', -1)).map((event) => event.seq)).toEqual([0, 1, 2, 3, 4]);
    },
  );
});
