/**
 * A running session's commits skip reading its head and lease (the store remembers the head it wrote). These tests
 * change the file between two commits of one store, behind its back, and check that the next commit sees what a
 * commit that reads them would: a lease another holder took fences it, a lease near its end is renewed, a damaged
 * head is refused, events another store wrote are not written over. On every writer: without group commit, group
 * commit on the event loop and on a writer thread.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../src/persistence/sqlite-store.ts';
import type { CommitBatch } from '../../src/persistence/store.ts';
import {
  SessionFencedError,
  StoreCommitError,
  StoreCorruptError,
} from '../../src/persistence/store-errors.ts';
import { events, sessionRow } from './fixtures.ts';

const ttlMs = 30_000;
const writers = [
  ['without group commit', {}],
  ['group commit on the event loop', { groupCommit: { writer: 'inline' } }],
  ['group commit on a writer thread', { groupCommit: { writer: 'thread' } }],
] as const;

describe.each(writers)('a running session’s next commit, %s', (_name, options) => {
  let directory: string;
  let file: string;
  let raw: DatabaseSync;
  const opened: { close(): unknown }[] = [];
  const open = () => {
    const store = createSqliteStore(file, { ...options, leaseTtlMs: ttlMs });
    opened.push(store);
    return {
      commit: async (batch: CommitBatch) => store.commit('s1', batch),
      load: async () => store.load('s1'),
    };
  };
  /** Two commits of the running session: the second is one the store made with a head it remembers. */
  const twoCommits = async () => {
    const store = open();
    await store.commit({ session: sessionRow('s1'), events: events('s1', 0, 2) });
    await store.commit({ session: sessionRow('s1'), events: events('s1', 2, 1) });
    return store;
  };
  const refusal = async (work: Promise<unknown>): Promise<unknown> => {
    try {
      await work;
    } catch (error) {
      return error;
    }
    return undefined;
  };

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'troupe-written-heads-'));
    file = join(directory, 'sessions.db');
    raw = new DatabaseSync(file);
    raw.exec('PRAGMA busy_timeout = 5000');
  });
  afterEach(() => {
    for (const store of opened.splice(0)) store.close();
    raw.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('is fenced when another live holder took the lease meanwhile', async () => {
    const store = await twoCommits();
    raw
      .prepare(
        "UPDATE leases SET host = 'elsewhere', token = 'other', expires_at = ? WHERE session_id = 's1'",
      )
      .run(Date.now() + 60_000);
    const error = await refusal(store.commit({ session: sessionRow('s1'), events: events('s1', 3, 1) }));
    expect(error).toBeInstanceOf(SessionFencedError);
    expect(raw.prepare("SELECT max(seq) AS last FROM events WHERE session_id = 's1'").get()?.last).toBe(2);
  });

  it('renews a lease with less than two thirds of its time left', async () => {
    const store = await twoCommits();
    raw.prepare("UPDATE leases SET expires_at = ? WHERE session_id = 's1'").run(Date.now() + 1_000);
    await store.commit({ session: sessionRow('s1'), events: events('s1', 3, 1) });
    const expires = Number(
      raw.prepare("SELECT expires_at FROM leases WHERE session_id = 's1'").get()?.expires_at,
    );
    expect(expires).toBeGreaterThan(Date.now() + ttlMs / 2);
  });

  it('refuses a head damaged meanwhile, naming the session, and writes nothing', async () => {
    const store = await twoCommits();
    raw.exec("UPDATE heads SET last_seq = 7 WHERE session_id = 's1'");
    const error = await refusal(store.commit({ session: sessionRow('s1'), events: events('s1', 3, 1) }));
    expect(error).toBeInstanceOf(StoreCorruptError);
    expect((error as StoreCorruptError).sessionId).toBe('s1');
    expect(raw.prepare("SELECT max(seq) AS last FROM events WHERE session_id = 's1'").get()?.last).toBe(2);
  });

  it('writes its status over one changed meanwhile, its head the same', async () => {
    const store = await twoCommits();
    raw.exec("UPDATE sessions SET status = 'awaiting' WHERE id = 's1'");
    await store.commit({ session: sessionRow('s1'), events: events('s1', 3, 1) });
    expect(raw.prepare("SELECT status FROM sessions WHERE id = 's1'").get()?.status).toBe('running');
    expect((await store.load())?.session.status).toBe('running');
  });

  it('continues the log another store of this process wrote meanwhile, and refuses a batch that does not', async () => {
    const store = await twoCommits();
    const other = open();
    await other.commit({ session: sessionRow('s1'), events: events('s1', 3, 2) });
    const error = await refusal(store.commit({ session: sessionRow('s1'), events: events('s1', 3, 1) }));
    expect(error).toBeInstanceOf(StoreCommitError);
    expect((error as StoreCommitError).reason).toBe('event_sequence');
    await store.commit({ session: sessionRow('s1'), events: events('s1', 5, 1) });
    expect((await store.load())?.lastSeq).toBe(5);
  });
});
