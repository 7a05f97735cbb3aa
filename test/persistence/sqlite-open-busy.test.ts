import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../src/persistence/sqlite-store.ts';
import { StoreIoError } from '../../src/persistence/store-errors.ts';

/**
 * Another process takes a write lock on a new database file (not yet in WAL mode) and holds it for `holdMs`, or
 * until its stdin closes. Switching such a file to WAL is a lock upgrade that SQLite refuses at once instead of
 * calling its busy handler (waiting there could deadlock), which is what two processes opening one new store meet.
 */
async function holdWriteLock(path: string, holdMs: number | 'until stdin closes'): Promise<ChildProcess> {
  const release =
    holdMs === 'until stdin closes'
      ? "process.stdin.on('end', done); process.stdin.resume();"
      : `setTimeout(done, ${holdMs});`;
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const { DatabaseSync } = require('node:sqlite');
       const db = new DatabaseSync(${JSON.stringify(path)});
       db.exec('BEGIN IMMEDIATE');
       const done = () => { db.exec('COMMIT'); db.close(); };
       process.stdout.write('held\\n');
       ${release}`,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const [data] = (await once(child.stdout as NodeJS.ReadableStream, 'data')) as [Buffer];
  expect(data.toString()).toBe('held\n');
  return child;
}

describe('createSqliteStore while another process holds a new file', () => {
  let dir: string;
  let child: ChildProcess | undefined;
  afterEach(async () => {
    if (child && child.exitCode === null) {
      child.stdin?.end();
      await once(child, 'exit');
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('waits for the lock within the busy timeout and opens the store', async () => {
    dir = mkdtempSync(join(tmpdir(), 'troupe-open-busy-'));
    const path = join(dir, 'sessions.db');
    // The open blocks this thread while it waits: the holder lets go by itself.
    child = await holdWriteLock(path, 300);
    const store = createSqliteStore(path, { busyTimeoutMs: 60_000 });
    expect(await store.list()).toEqual([]);
    await store.close();
  });

  it('fails typed (busy, nothing changed) when the lock outlasts the busy timeout', async () => {
    dir = mkdtempSync(join(tmpdir(), 'troupe-open-busy-'));
    const path = join(dir, 'sessions.db');
    child = await holdWriteLock(path, 'until stdin closes');
    let failure: unknown;
    try {
      createSqliteStore(path, { busyTimeoutMs: 0 });
    } catch (error) {
      failure = error;
    }
    expect(failure).toBeInstanceOf(StoreIoError);
    expect(failure).toMatchObject({ busy: true, path });
    expect(existsSync(`${path}-wal`)).toBe(false);
    child.stdin?.end();
    await once(child, 'exit');
    // Once the other process is gone, the same file opens.
    const store = createSqliteStore(path);
    expect(await store.list()).toEqual([]);
    await store.close();
  });
});
