import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../src/core/errors.ts';
import {
  createGroupCommitter,
  type GroupTransaction,
  groupCommitSettings,
} from '../../src/persistence/group-commit.ts';
import {
  createSqliteStore,
  type SqliteGroupCommitStore,
  type SqliteSessionStore,
} from '../../src/persistence/sqlite-store.ts';
import { StoreCommitError, StoreCorruptError, StoreIoError } from '../../src/persistence/store-errors.ts';
import { checkpoint, events, idleRow, sessionRow } from './fixtures.ts';

/** A transaction that records what group commit asks of it. */
function recordingTransaction(refuse: ReadonlySet<string> = new Set()) {
  const calls: string[] = [];
  const transaction: GroupTransaction<string> = {
    begin: (durable) => calls.push(durable ? 'begin' : 'begin relaxed'),
    write: (entry, alone) => {
      if (refuse.has(entry)) throw new StoreCommitError(entry, 'event_sequence', 'refused');
      calls.push(alone ? `write ${entry} alone` : `write ${entry}`);
    },
    ownFault: (error) => error instanceof StoreCommitError,
    open: () => true,
    commit: (size) => calls.push(`commit ${size}`),
    rollback: () => calls.push('rollback'),
  };
  return { calls, transaction };
}

describe('createGroupCommitter', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('writes the commits made in one turn of the event loop in one transaction, resolving none before it', async () => {
    const { calls, transaction } = recordingTransaction();
    const committer = createGroupCommitter(transaction, { maxDelayMs: 0, maxBatch: 512 });
    const resolved: string[] = [];
    const all = ['a', 'b', 'c'].map((id) => committer.commit(id, false).then(() => resolved.push(id)));
    expect(calls).toEqual([]);
    expect(committer.pending).toBe(3);
    await Promise.all(all);
    expect(calls).toEqual(['begin', 'write a', 'write b', 'write c', 'commit 3']);
    expect(resolved).toEqual(['a', 'b', 'c']);
    // The next turn's commits make a group of their own.
    await committer.commit('d', false);
    expect(calls.slice(5)).toEqual(['begin', 'write d', 'commit 1']);
  });

  it('writes a group of relaxed commits only without asking for the disk', async () => {
    const { calls, transaction } = recordingTransaction();
    const committer = createGroupCommitter(transaction, { maxDelayMs: 0, maxBatch: 512 });
    await Promise.all([committer.commit('a', true), committer.commit('b', true)]);
    await Promise.all([committer.commit('c', true), committer.commit('d', false)]);
    expect(calls).toEqual([
      'begin relaxed',
      'write a',
      'write b',
      'commit 2',
      'begin',
      'write c',
      'write d',
      'commit 2',
    ]);
  });

  it('writes a group that reaches maxBatch at once', () => {
    const { calls, transaction } = recordingTransaction();
    const committer = createGroupCommitter(transaction, { maxDelayMs: 0, maxBatch: 2 });
    void committer.commit('a', false);
    expect(calls).toEqual([]);
    void committer.commit('b', false);
    expect(calls).toEqual(['begin', 'write a', 'write b', 'commit 2']);
    expect(committer.pending).toBe(0);
  });

  it('waits maxDelayMs for more commits to join the group', async () => {
    vi.useFakeTimers();
    const { calls, transaction } = recordingTransaction();
    const committer = createGroupCommitter(transaction, { maxDelayMs: 5, maxBatch: 512 });
    const first = committer.commit('a', false);
    await vi.advanceTimersByTimeAsync(4);
    const second = committer.commit('b', false);
    expect(calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await Promise.all([first, second]);
    expect(calls).toEqual(['begin', 'write a', 'write b', 'commit 2']);
  });

  it("fails a refused batch alone: the group's other commits are written", async () => {
    const { calls, transaction } = recordingTransaction(new Set(['b']));
    const committer = createGroupCommitter(transaction, { maxDelayMs: 0, maxBatch: 512 });
    const results = await Promise.allSettled(['a', 'b', 'c'].map((id) => committer.commit(id, false)));
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(StoreCommitError);
    // Written without savepoints first; b's refusal rolls that back, and the group is written again, each commit
    // in a savepoint of its own (a, written before b the first time, included).
    expect(calls).toEqual([
      'begin',
      'write a',
      'rollback',
      'begin',
      'write a alone',
      'write c alone',
      'commit 2',
    ]);
  });

  it('writes a group without a savepoint per commit when none is refused', async () => {
    const { calls, transaction } = recordingTransaction();
    const committer = createGroupCommitter(transaction, { maxDelayMs: 0, maxBatch: 512 });
    await Promise.all(['a', 'b'].map((id) => committer.commit(id, false)));
    expect(calls).toEqual(['begin', 'write a', 'write b', 'commit 2']);
  });

  it('fails a group of one refused batch at once, without writing it again', async () => {
    const { calls, transaction } = recordingTransaction(new Set(['a']));
    const committer = createGroupCommitter(transaction, { maxDelayMs: 0, maxBatch: 512 });
    await expect(committer.commit('a', false)).rejects.toBeInstanceOf(StoreCommitError);
    expect(calls).toEqual(['begin', 'rollback']);
  });

  it('rejects every commit of a group whose transaction fails, with the same error', async () => {
    const failure = new StoreIoError('/tmp/x.db', 'disk full', { busy: false });
    const { calls, transaction } = recordingTransaction();
    transaction.commit = () => {
      throw failure;
    };
    const committer = createGroupCommitter(transaction, { maxDelayMs: 0, maxBatch: 512 });
    const results = await Promise.allSettled(['a', 'b'].map((id) => committer.commit(id, false)));
    expect(results).toEqual([
      { status: 'rejected', reason: failure },
      { status: 'rejected', reason: failure },
    ]);
    expect(calls).toEqual(['begin', 'write a', 'write b', 'rollback']);
  });
});

describe('groupCommitSettings', () => {
  it('fills in the defaults and refuses bad options with a ConfigError', () => {
    expect(groupCommitSettings(true, 'here')).toEqual({ maxDelayMs: 0, maxBatch: 4096 });
    expect(groupCommitSettings({ maxDelayMs: 2 }, 'here')).toEqual({ maxDelayMs: 2, maxBatch: 4096 });
    for (const bad of [{ maxDelayMs: -1 }, { maxBatch: 0 }, { maxBatch: 1.5 }, { maxDelay: 3 }, 'yes', null])
      expect(() => groupCommitSettings(bad as never, 'here')).toThrow(ConfigError);
  });
});

describe('createSqliteStore with groupCommit', () => {
  let directory: string;
  let file: string;
  const opened: { close(): void }[] = [];
  const open = (options: Parameters<typeof createSqliteStore>[1] = {}) => {
    const store = createSqliteStore(file, { ...options, groupCommit: true }) as SqliteGroupCommitStore;
    opened.push(store);
    return store;
  };
  const plain = (): SqliteSessionStore => {
    const store = createSqliteStore(file);
    opened.push(store);
    return store;
  };

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'troupe-group-'));
    file = join(directory, 'sessions.db');
  });

  afterEach(() => {
    for (const each of opened.splice(0)) each.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('refuses a bad groupCommit option with a ConfigError and opens nothing', () => {
    expect(() => createSqliteStore(file, { groupCommit: { maxBatch: 0 } })).toThrow(ConfigError);
    expect(() => createSqliteStore(file, { groupCommit: 'on' as never })).toThrow(ConfigError);
  });

  it('commits many sessions in one transaction: each promise resolves once the whole group is readable', async () => {
    const store = open();
    const other = plain();
    const ids = Array.from({ length: 20 }, (_, index) => `s${index}`);
    const commits = ids.map((id) =>
      store.commit(id, { session: sessionRow(id), runs: [['root', checkpoint()]], events: events(id, 0, 3) }),
    );
    // Nothing is written before the group is: another connection sees none of it.
    expect(other.list()).toEqual([]);
    await Promise.all(commits);
    expect(
      other
        .list()
        .map((summary) => summary.sessionId)
        .sort(),
    ).toEqual([...ids].sort());
    for (const id of ids) {
      const state = other.load(id);
      expect(state?.runs.get('root')).toEqual(checkpoint());
      expect(other.readEvents(id, -1)).toEqual(events(id, 0, 3));
    }
  });

  it("keeps one session's commits in order within a group", async () => {
    const store = open();
    await Promise.all([
      store.commit('s', { session: sessionRow('s'), events: events('s', 0, 2) }),
      store.commit('s', { events: events('s', 2, 2) }),
      store.commit('s', { session: idleRow('s'), clearTurn: true, events: events('s', 4, 1) }),
    ]);
    expect(store.readEvents('s', -1)).toEqual(events('s', 0, 5));
    expect(store.load('s')?.session).toEqual(idleRow('s'));
  });

  it('fails a batch that breaks the rules alone; the rest of the group is committed', async () => {
    const store = open();
    await store.commit('a', { session: sessionRow('a'), events: events('a', 0, 1) });
    const results = await Promise.allSettled([
      store.commit('b', { session: sessionRow('b'), events: events('b', 0, 1) }),
      // A gap in a's log: refused.
      store.commit('a', { session: idleRow('a'), events: events('a', 5, 1) }),
      // No row for c: refused.
      store.commit('c', { journal: [['k', 1]] }),
      store.commit('d', { session: sessionRow('d') }),
    ]);
    expect(results.map((result) => result.status)).toEqual([
      'fulfilled',
      'rejected',
      'rejected',
      'fulfilled',
    ]);
    const refusals = results.flatMap((result) => (result.status === 'rejected' ? [result.reason] : []));
    expect(
      refusals.map((error) => [error instanceof StoreCommitError, (error as StoreCommitError).reason]),
    ).toEqual([
      [true, 'event_sequence'],
      [true, 'unknown_session'],
    ]);
    const other = plain();
    expect(other.load('a')?.session).toEqual(sessionRow('a'));
    expect(other.readEvents('a', -1)).toEqual(events('a', 0, 1));
    expect(other.load('b')?.session).toEqual(sessionRow('b'));
    expect(other.load('c')).toBeUndefined();
    expect(other.load('d')?.session).toEqual(sessionRow('d'));
  });

  it("writes again, whole, the commits of a group written before a refused one, a session's later commits included", async () => {
    const store = open();
    await store.commit('a', { session: sessionRow('a'), events: events('a', 0, 1) });
    const results = await Promise.allSettled([
      store.commit('a', { events: events('a', 1, 1) }),
      store.commit('b', { session: sessionRow('b'), events: events('b', 0, 1) }),
      // A gap in c's log, after a's and b's commits were written in the same transaction: refused.
      store.commit('c', { session: sessionRow('c'), events: events('c', 3, 1) }),
      // a's next commit continues the head its commit above wrote.
      store.commit('a', { session: idleRow('a'), events: events('a', 2, 2) }),
    ]);
    expect(results.map((result) => result.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
    ]);
    expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(StoreCommitError);
    const other = plain();
    expect(other.readEvents('a', -1)).toEqual(events('a', 0, 4));
    expect(other.load('a')?.session).toEqual(idleRow('a'));
    expect(other.readEvents('b', -1)).toEqual(events('b', 0, 1));
    expect(other.load('c')).toBeUndefined();
    // The next group writes on from there.
    await store.commit('b', { events: events('b', 1, 1) });
    expect(plain().readEvents('b', -1)).toEqual(events('b', 0, 2));
  });

  it("fails the commit of a session whose stored head is damaged alone; the group's other commits are written", async () => {
    const store = open();
    await Promise.all([
      store.commit('a', { session: sessionRow('a'), events: events('a', 0, 1) }),
      store.commit('b', { session: sessionRow('b'), events: events('b', 0, 1) }),
    ]);
    const admin = new DatabaseSync(file);
    admin.exec(`UPDATE heads SET runs = 3 WHERE session_id = 'a'`);
    admin.close();
    const results = await Promise.allSettled([
      store.commit('a', { events: events('a', 1, 1) }),
      store.commit('b', { events: events('b', 1, 1) }),
    ]);
    expect(results[0]?.status).toBe('rejected');
    const refusal = results[0]?.status === 'rejected' ? results[0].reason : undefined;
    expect(refusal).toBeInstanceOf(StoreCorruptError);
    expect((refusal as StoreCorruptError).sessionId).toBe('a');
    expect(results[1]?.status).toBe('fulfilled');
    expect(plain().readEvents('b', -1)).toEqual(events('b', 0, 2));
  });

  it('undoes the part of a refused batch already written (its savepoint), and only that', async () => {
    open().close();
    // A trigger that refuses one journal entry (a constraint): the session row before it is already written.
    const admin = new DatabaseSync(file);
    admin.exec(
      "CREATE TRIGGER refuse_one BEFORE INSERT ON journal WHEN NEW.key = 'refuse' BEGIN SELECT RAISE(ABORT, 'refused'); END",
    );
    admin.close();
    const store = open();
    const results = await Promise.allSettled([
      store.commit('d', { session: sessionRow('d') }),
      store.commit('e', { session: sessionRow('e'), journal: [['refuse', 1]] }),
      store.commit('f', { session: sessionRow('f'), journal: [['kept', 1]] }),
    ]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(StoreCommitError);
    const other = plain();
    expect(other.load('d')?.session).toEqual(sessionRow('d'));
    expect(other.load('e')).toBeUndefined();
    expect(other.load('f')?.journal.get('kept')).toBe(1);
  });

  it('refuses a value that is not JSON when commit is called, without joining a group', async () => {
    const store = open();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    await expect(
      store.commit('a', { session: sessionRow('a'), journal: [['k', cyclic as never]] }),
    ).rejects.toThrow(StoreCommitError);
    expect(plain().load('a')).toBeUndefined();
  });

  it('commits the batch as it was when commit was called', async () => {
    const store = open();
    const row = structuredClone(sessionRow('a'));
    const committed = store.commit('a', { session: row });
    row.transcript.push({ role: 'user', content: 'changed afterwards' });
    await committed;
    expect(plain().load('a')?.session).toEqual(sessionRow('a'));
  });

  it('rejects every commit of a group that cannot begin (the file is held) with the same StoreIoError, writing nothing', async () => {
    const store = open({ busyTimeoutMs: 0 });
    const holder = new DatabaseSync(file);
    holder.exec('BEGIN IMMEDIATE');
    try {
      const results = await Promise.allSettled(
        ['a', 'b'].map((id) => store.commit(id, { session: sessionRow(id) })),
      );
      const reasons = results.map((result) => (result.status === 'rejected' ? result.reason : undefined));
      expect(reasons[0]).toBeInstanceOf(StoreIoError);
      expect((reasons[0] as StoreIoError).busy).toBe(true);
      expect(reasons[1]).toBe(reasons[0]);
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
    expect(plain().list()).toEqual([]);
  });

  it('rejects every commit of a group whose transaction SQLite ends mid-way, and writes none of them', async () => {
    const store = open();
    await store.commit('a', { session: sessionRow('a') });
    // A trigger that ends the whole transaction when session "bad" is written: a failure that is not one batch's.
    const admin = new DatabaseSync(file);
    admin.exec(
      "CREATE TRIGGER end_all BEFORE INSERT ON journal WHEN NEW.key = 'end' BEGIN SELECT RAISE(ROLLBACK, 'ended'); END",
    );
    admin.close();
    const reopened = open();
    const results = await Promise.allSettled([
      reopened.commit('a', { session: idleRow('a') }),
      reopened.commit('b', { session: sessionRow('b'), journal: [['end', 1]] }),
      reopened.commit('c', { session: sessionRow('c') }),
    ]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected', 'rejected']);
    const reasons = results.map((result) => (result.status === 'rejected' ? result.reason : undefined));
    expect(reasons[1]).toBe(reasons[0]);
    expect(reasons[2]).toBe(reasons[0]);
    const other = plain();
    expect(other.load('a')?.session).toEqual(sessionRow('a'));
    expect(other.load('b')).toBeUndefined();
    expect(other.load('c')).toBeUndefined();
    // The store goes on: the next group commits.
    await reopened.commit('c', { session: sessionRow('c') });
    expect(other.load('c')?.session).toEqual(sessionRow('c'));
  });

  it('writes the commits still waiting before a delete and when it closes', async () => {
    const store = open();
    const first = store.commit('a', { session: sessionRow('a') });
    const second = store.commit('b', { session: sessionRow('b') });
    store.delete('a');
    await first;
    expect(plain().load('a')).toBeUndefined();
    const third = store.commit('c', { session: sessionRow('c') });
    store.close();
    await Promise.all([second, third]);
    const other = plain();
    expect(other.load('b')?.session).toEqual(sessionRow('b'));
    expect(other.load('c')?.session).toEqual(sessionRow('c'));
  });

  it('keeps a group of relaxed commits relaxed and goes back to synchronous FULL after it', async () => {
    const store = open();
    await store.commit('a', { session: sessionRow('a') });
    await Promise.all([store.commit('a', { events: events('a', 0, 2), relaxed: true })]);
    expect(store.settings().synchronous).toBe('full');
    expect(store.readEvents('a', -1)).toEqual(events('a', 0, 2));
  });
});
