import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { createAgentSystem, createSqliteStore, defineAgent, StoreLayoutError } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storeLayoutVersion } from '../../src/persistence/store.ts';

let directory = '';
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'troupe-layout-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

/** A store file holding one finished session, then rewritten as the previous layout (no audit log table). */
async function layoutThreeFile(): Promise<string> {
  const path = join(directory, 'sessions.db');
  const store = createSqliteStore(path);
  const system = createAgentSystem({ store });
  const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel([{ text: 'hi' }]) });
  await system.spawn(agent, 'go', { sessionId: 'kept' }).result;
  await system.shutdown();
  store.close();
  const raw = new DatabaseSync(path);
  raw.exec('DROP TABLE audit_log');
  raw.exec("UPDATE meta SET value = 3 WHERE key = 'layout'");
  raw.close();
  return path;
}

describe('the SQLite store layout with the audit log', () => {
  it('is layout 4, and a layout-3 file is migrated in place, its sessions kept', async () => {
    expect(storeLayoutVersion).toBe(4);
    const path = await layoutThreeFile();
    const store = createSqliteStore(path);
    expect((await store.list()).map((summary) => summary.sessionId)).toEqual(['kept']);
    store.appendAudit([{ seq: 1 }]);
    expect(store.readAudit()).toEqual([{ seq: 1 }]);
    store.close();
    const raw = new DatabaseSync(path);
    expect(raw.prepare("SELECT value FROM meta WHERE key = 'layout'").get()?.value).toBe(4);
    raw.close();
  });

  it('still refuses other layouts', async () => {
    const path = await layoutThreeFile();
    const raw = new DatabaseSync(path);
    raw.exec("UPDATE meta SET value = 2 WHERE key = 'layout'");
    raw.close();
    expect(() => createSqliteStore(path)).toThrow(StoreLayoutError);
  });

  it('refuses an audit batch that repeats a seq, writing nothing of it', () => {
    const store = createSqliteStore(join(directory, 'a.db'));
    store.appendAudit([{ seq: 1 }]);
    expect(() => store.appendAudit([{ seq: 2 }, { seq: 1 }])).toThrow();
    expect(store.readAudit()).toEqual([{ seq: 1 }]);
    store.close();
  });
});
