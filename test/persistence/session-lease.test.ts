/**
 * The lease rules of one SQLite file, with holders made up (another host, a pid that is gone) and a clock the test
 * moves: who may take a session's lease, when a commit is fenced, and when a lease goes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.ts';
import { createAgentSystem, defineAgent } from '../../src/index.ts';
import { createMemoryStore } from '../../src/persistence/memory-store.ts';
import {
  holderIsDead,
  type LeaseHolder,
  leasesTable,
  prepareLeases,
  thisProcess,
} from '../../src/persistence/session-lease.ts';
import { createSqliteStore } from '../../src/persistence/sqlite-store.ts';
import { SessionFencedError, SessionLeasedError } from '../../src/persistence/store-errors.ts';
import { scriptedModel } from '../../src/testing/index.ts';
import { idleRow, sessionRow } from './fixtures.ts';

let directory: string;
let db: DatabaseSync;
let time = 1_000;
const now = () => time;
beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'troupe-lease-'));
  db = new DatabaseSync(join(directory, 'leases.db'));
  db.exec(leasesTable);
  time = 1_000;
});
afterEach(() => {
  db.close();
  rmSync(directory, { recursive: true, force: true });
});

/** A pid no process has (the highest pid Linux hands out is below 2^22). */
const goneProcess = 2 ** 22 + 17;
const otherHost: LeaseHolder = {
  host: `${thisProcess.host}-elsewhere`,
  pid: process.pid,
  token: 'other-host',
};
const sameHostAlive: LeaseHolder = { host: thisProcess.host, pid: process.ppid, token: 'parent' };
const sameHostDead: LeaseHolder = { host: thisProcess.host, pid: goneProcess, token: 'dead' };
const leases = (holder: LeaseHolder = thisProcess) => prepareLeases(db, { ttlMs: 100, holder, now });
const commitAs = (holder: LeaseHolder, sessionId: string) => {
  db.exec('BEGIN IMMEDIATE');
  try {
    leases(holder).checkCommit(sessionId);
    db.exec('COMMIT');
  } catch (error) {
    db.exec('ROLLBACK');
    throw error;
  }
};

describe('session leases', () => {
  it('tells a dead holder on this host by its pid, never one on another host', () => {
    expect(holderIsDead(sameHostDead)).toBe(true);
    expect(holderIsDead(sameHostAlive)).toBe(false);
    expect(holderIsDead(thisProcess)).toBe(false);
    // This pid with another token: a process before this one that had the same pid.
    expect(holderIsDead({ ...thisProcess, token: 'before' })).toBe(true);
    expect(holderIsDead({ ...otherHost, pid: goneProcess })).toBe(false);
  });

  it('refuses a live holder’s session, naming it; takes it from a dead one at once', () => {
    commitAs(sameHostAlive, 's1');
    let refused: unknown;
    try {
      leases().acquire('s1');
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(SessionLeasedError);
    expect((refused as SessionLeasedError).holder).toEqual(sameHostAlive);
    expect((refused as SessionLeasedError).message).toContain(`process ${process.ppid}`);

    commitAs(sameHostDead, 's2');
    leases().acquire('s2');
    expect(leases().held.size).toBe(0);
    const mine = leases();
    mine.acquire('s2');
    expect([...mine.held]).toEqual(['s2']);
  });

  it('lets a lease of another host run out after its TTL unless a commit or the timer renews it', () => {
    commitAs(otherHost, 's1');
    time += 99;
    expect(() => leases().acquire('s1')).toThrow(SessionLeasedError);
    commitAs(otherHost, 's1');
    time += 99;
    expect(() => leases().acquire('s1')).toThrow(SessionLeasedError);
    const theirs = leases(otherHost);
    theirs.acquire('s1');
    time += 50;
    theirs.renewAll();
    time += 99;
    expect(() => leases().acquire('s1')).toThrow(SessionLeasedError);
    time += 1;
    leases().acquire('s1');
  });

  it('renews the lease with a commit only once a third of its TTL has passed (the timer renews it meanwhile)', () => {
    const expiresAt = () =>
      Number(db.prepare("SELECT expires_at FROM leases WHERE session_id = 's1'").get()?.expires_at);
    const mine = leases();
    const commit = () => {
      db.exec('BEGIN IMMEDIATE');
      mine.checkCommit('s1');
      db.exec('COMMIT');
    };
    commit();
    expect(expiresAt()).toBe(1_100);
    time += 33;
    commit();
    // Written at 1,000: 67 ms of its 100 left, more than two thirds. Unchanged, and still this holder's.
    expect(expiresAt()).toBe(1_100);
    expect([...mine.held]).toEqual(['s1']);
    time += 1;
    commit();
    expect(expiresAt()).toBe(1_134);
  });

  it('fences the commits of a holder that was taken over; the new holder commits on', () => {
    commitAs(sameHostAlive, 's1');
    commitAs(sameHostAlive, 's1');
    leases().acquire('s1', { takeOver: true });
    expect(() => commitAs(sameHostAlive, 's1')).toThrow(SessionFencedError);
    commitAs(thisProcess, 's1');
    // A lease left by a process that is gone (or expired) is claimed by a commit: a writer restarted after a crash.
    commitAs(sameHostDead, 's2');
    commitAs(thisProcess, 's2');
    commitAs(otherHost, 's3');
    time += 100;
    commitAs(thisProcess, 's3');
  });

  it('gives a session’s lease back with the commit that ends its turn, and every lease at close()', () => {
    const file = join(directory, 'sessions.db');
    const store = createSqliteStore(file);
    const leaseRows = () =>
      new DatabaseSync(file, { readOnly: true })
        .prepare('SELECT session_id FROM leases ORDER BY session_id')
        .all()
        .map((row) => row.session_id);
    store.commit('running', { session: sessionRow('running') });
    store.commit('ends', { session: sessionRow('ends') });
    store.commit('ends', { session: idleRow('ends') });
    store.acquireLease('other');
    expect(leaseRows()).toEqual(['other', 'running']);
    store.releaseLease('other');
    expect(leaseRows()).toEqual(['running']);
    store.close();
    expect(leaseRows()).toEqual([]);
  });

  it('refuses a takeOver that is not true or false, on recover() and restore() alike', async () => {
    const agent = defineAgent({ name: 'a', instructions: 'x', model: scriptedModel([{ text: 'ok' }]) });
    const system = createAgentSystem({ store: createMemoryStore(), agents: [agent] });
    await expect(system.recover({ takeOver: 'yes' as unknown as boolean })).rejects.toThrow(ConfigError);
    await expect(system.restore('s1', agent, { takeOver: 1 as unknown as boolean })).rejects.toThrow(
      ConfigError,
    );
    await expect(system.recover({ takeOver: true })).resolves.toEqual({ sessions: [], failures: [] });
    await system.shutdown();
  });
});
