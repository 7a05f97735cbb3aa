import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../src/persistence/sqlite-store.ts';
import { StoreIoError } from '../../src/persistence/store-errors.ts';
import { endHolder, holdWriteLock } from '../support/hold-write-lock.ts';

describe('createSqliteStore while another process holds a new file', () => {
  let dir: string;
  let child: ChildProcess | undefined;
  afterEach(async () => {
    await endHolder(child);
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
