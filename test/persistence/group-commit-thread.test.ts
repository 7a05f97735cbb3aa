import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.ts';
import { thisProcess } from '../../src/persistence/session-lease.ts';
import {
  type CommitRows,
  commitRowsOf,
  createSqliteStore,
  type SqliteGroupCommitStore,
} from '../../src/persistence/sqlite-store.ts';
import { startWriterThread } from '../../src/persistence/sqlite-writer-thread.ts';
import type { CommitBatch } from '../../src/persistence/store.ts';
import {
  SessionFencedError,
  StoreCommitError,
  StoreCorruptError,
  StoreIoError,
} from '../../src/persistence/store-errors.ts';
import { events, idleRow, sessionRow } from './fixtures.ts';

const run = promisify(execFile);

describe("group commit's writer thread", () => {
  let directory: string;
  let file: string;
  const opened: { close(): void }[] = [];
  const open = (writer: 'thread' | 'inline', path = file): SqliteGroupCommitStore => {
    const store = createSqliteStore(path, { groupCommit: { writer } });
    opened.push(store);
    return store;
  };

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'troupe-writer-'));
    file = join(directory, 'sessions.db');
  });

  afterEach(() => {
    for (const each of opened.splice(0)) each.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('refuses an unknown writer with a ConfigError', () => {
    expect(() => createSqliteStore(file, { groupCommit: { writer: 'fork' as never } })).toThrow(ConfigError);
  });

  /** A group of commits, each refused for a reason of its own but one, on a store of each writer. */
  async function refusals(writer: 'thread' | 'inline') {
    const path = join(directory, `${writer}.db`);
    const store = open(writer, path);
    await Promise.all([
      store.commit('a', { session: sessionRow('a'), events: events('a', 0, 1) }),
      store.commit('h', { session: sessionRow('h'), events: events('h', 0, 1) }),
      store.commit('f', { session: sessionRow('f') }),
    ]);
    const admin = new DatabaseSync(path);
    // h's head damaged; f's lease held by another live process (this test's parent).
    admin.exec(`UPDATE heads SET runs = 3 WHERE session_id = 'h'`);
    admin
      .prepare('UPDATE leases SET pid = ?, token = ? WHERE session_id = ?')
      .run(process.ppid, 'another', 'f');
    admin.close();
    const results = await Promise.allSettled([
      store.commit('a', { events: events('a', 5, 1) }),
      store.commit('c', { journal: [['k', 1]] }),
      store.commit('h', { events: events('h', 1, 1) }),
      store.commit('f', { events: events('f', 0, 1) }),
      store.commit('b', { session: sessionRow('b') }),
    ]);
    return results.map((result) => {
      if (result.status === 'fulfilled') return 'written';
      const error = result.reason as Error & Record<string, unknown>;
      return {
        class: error.constructor,
        name: error.name,
        message: error.message,
        code: error.code,
        sessionId: error.sessionId,
        reason: error.reason,
        holder: error.holder,
      };
    });
  }

  it("fails each refused batch alone with the same error, class and message as the event loop's writer", async () => {
    const thread = await refusals('thread');
    expect(thread).toEqual(await refusals('inline'));
    expect(thread.map((each) => (each === 'written' ? each : each.class))).toEqual([
      StoreCommitError,
      StoreCommitError,
      StoreCorruptError,
      SessionFencedError,
      'written',
    ]);
  });

  it("rejects every commit of a failed group with one error, the event loop's", async () => {
    const failures = async (writer: 'thread' | 'inline') => {
      const path = join(directory, `${writer}.db`);
      open(writer, path).close();
      const admin = new DatabaseSync(path);
      admin.exec(
        "CREATE TRIGGER end_all BEFORE INSERT ON journal WHEN NEW.key = 'end' BEGIN SELECT RAISE(ROLLBACK, 'ended'); END",
      );
      admin.close();
      const store = open(writer, path);
      const results = await Promise.allSettled([
        store.commit('a', { session: sessionRow('a') }),
        store.commit('b', { session: sessionRow('b'), journal: [['end', 1]] }),
      ]);
      const reasons = results.map((result) => (result.status === 'rejected' ? result.reason : undefined));
      expect(reasons[1]).toBe(reasons[0]);
      expect(store.load('a')).toBeUndefined();
      return [(reasons[0] as Error).constructor, (reasons[0] as Error).message];
    };
    expect(await failures('thread')).toEqual(await failures('inline'));
  });

  it('reads see a commit once its promise resolved; delete and close write the commits still waiting first', async () => {
    const store = open('thread');
    await store.commit('a', { session: sessionRow('a'), events: events('a', 0, 2) });
    expect(store.load('a')?.session).toEqual(sessionRow('a'));
    expect(store.readEvents('a', -1)).toEqual(events('a', 0, 2));
    const waiting = [
      store.commit('a', { session: idleRow('a'), events: events('a', 2, 1) }),
      store.commit('b', { session: sessionRow('b') }),
    ];
    store.delete('b');
    await Promise.all(waiting);
    expect(store.load('a')?.session).toEqual(idleRow('a'));
    expect(store.load('b')).toBeUndefined();
    const last = store.commit('c', { session: sessionRow('c') });
    store.close();
    await last;
    const reopened = open('inline');
    expect(reopened.load('c')?.session).toEqual(sessionRow('c'));
  });

  it("takes leases in this process's name: another store of this process may resume the session", async () => {
    const store = open('thread');
    await store.commit('a', { session: sessionRow('a') });
    const admin = new DatabaseSync(file);
    const lease = admin.prepare('SELECT host, pid, token FROM leases WHERE session_id = ?').get('a');
    admin.close();
    expect(lease).toEqual({ host: thisProcess.host, pid: process.pid, token: thisProcess.token });
    const other = createSqliteStore(file);
    opened.push(other);
    expect(() => other.acquireLease('a')).not.toThrow();
  });

  it('a writer that dies fails every waiting commit and every later one with a StoreIoError, and never blocks', async () => {
    open('inline').close();
    const writer = startWriterThread(
      { path: file, synchronous: 'full', busyTimeoutMs: 1000, leaseTtlMs: 30_000, holder: thisProcess },
      { maxDelayMs: 0, maxBatch: 4096 },
      new URL('./fixtures/writer-that-exits.ts', import.meta.url),
    );
    const rows = (id: string, batch: CommitBatch): CommitRows => commitRowsOf(id, batch);
    const waiting = writer.commit(rows('a', { session: sessionRow('a') }));
    // Blocks until the writer answers or is seen to have ended.
    writer.drain();
    await expect(waiting).rejects.toBeInstanceOf(StoreIoError);
    await expect(writer.commit(rows('b', { session: sessionRow('b') }))).rejects.toBeInstanceOf(StoreIoError);
    writer.drain();
    writer.close();
  });

  it('never keeps the process alive once no commit waits, and keeps it until a waiting commit is written', async () => {
    const script = [
      `import { createSqliteStore } from ${JSON.stringify(new URL('../../src/persistence/sqlite-store.ts', import.meta.url).href)};`,
      `const store = createSqliteStore(${JSON.stringify(file)}, { groupCommit: { writer: 'thread' } });`,
      `store.commit('a', { session: ${JSON.stringify(sessionRow('a'))} }).then(() => console.log('written'));`,
    ].join('\n');
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
      timeout: 60_000,
    });
    expect(stdout.trim()).toBe('written');
    const reopened = open('inline');
    expect(reopened.load('a')?.session).toEqual(sessionRow('a'));
  });
});
