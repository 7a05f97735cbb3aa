import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { createSqliteStore, StoreLayoutError } from 'troupe';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storeLayoutVersion } from '../../src/persistence/store.ts';

let directory = '';
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'troupe-layout-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

/** The corpus's layout-3 store (written by that layout's code), copied: opening it migrates it in place. */
async function layoutThreeFile(): Promise<string> {
  const path = join(directory, 'sessions.db');
  await copyFile(new URL('./fixtures/layouts/layout-3.db', import.meta.url), path);
  return path;
}

describe('the SQLite store layout with the audit log', () => {
  it('is the current layout, and a layout-3 file is migrated in place, its sessions kept', async () => {
    expect(storeLayoutVersion).toBe(8);
    const path = await layoutThreeFile();
    const store = createSqliteStore(path);
    expect((await store.list()).map((summary) => summary.sessionId).sort()).toEqual([
      'approval',
      'idle',
      'nested',
    ]);
    store.appendAudit([{ seq: 1 }]);
    expect(store.readAudit()).toEqual([{ seq: 1 }]);
    store.close();
    const raw = new DatabaseSync(path);
    expect(raw.prepare("SELECT value FROM meta WHERE key = 'layout'").get()?.value).toBe(8);
    raw.close();
  });

  it('refuses layouts it has no migration from, and newer ones, leaving the file as it was', async () => {
    for (const layout of [1, storeLayoutVersion + 1]) {
      const path = await layoutThreeFile();
      const raw = new DatabaseSync(path);
      raw.exec(`UPDATE meta SET value = ${layout} WHERE key = 'layout'`);
      raw.close();
      expect(() => createSqliteStore(path)).toThrow(StoreLayoutError);
      const after = new DatabaseSync(path);
      expect(after.prepare("SELECT value FROM meta WHERE key = 'layout'").get()?.value).toBe(layout);
      after.close();
    }
  });

  it('refuses an audit batch that repeats a seq, writing nothing of it', () => {
    const store = createSqliteStore(join(directory, 'a.db'));
    store.appendAudit([{ seq: 1 }]);
    expect(() => store.appendAudit([{ seq: 2 }, { seq: 1 }])).toThrow();
    expect(store.readAudit()).toEqual([{ seq: 1 }]);
    store.close();
  });
});
