import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sqliteTokenStore } from '../../../src/tools/mcp/sqlite-token-store.ts';
import { endHolder, holdWriteLock } from '../../support/hold-write-lock.ts';

describe('sqliteTokenStore while another process writes to a new file', () => {
  let dir: string;
  let child: ChildProcess | undefined;
  afterEach(async () => {
    await endHolder(child);
    rmSync(dir, { recursive: true, force: true });
  });

  it('waits for the lock and opens the file (several processes may share it)', async () => {
    dir = mkdtempSync(join(tmpdir(), 'troupe-token-open-'));
    const path = join(dir, 'tokens.db');
    // The open blocks this thread while it waits: the holder lets go by itself.
    child = await holdWriteLock(path, 300);
    const store = sqliteTokenStore(path);
    const key = { server: 'docs', user: 'ada' };
    store.save(key, { tokens: { access_token: 'a', token_type: 'Bearer' } });
    expect(store.load(key)).toMatchObject({ tokens: { access_token: 'a' } });
    store.close();
  });
});
