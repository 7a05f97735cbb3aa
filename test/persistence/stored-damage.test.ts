import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { isDeepStrictEqual } from 'node:util';
import { createAgentSystem } from 'troupe';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../src/persistence/sqlite-store.ts';
import {
  ForeignStoreError,
  StoreCorruptError,
  StoreLayoutError,
} from '../../src/persistence/store-errors.ts';
import { recordChecksum } from '../../src/persistence/stored-format/record-checksum.ts';
import { resumRecords } from './resum-records.ts';

/**
 * Random damage to a store file holding interrupted sessions (a pending approval, a nested run blocked in a tool with
 * a message queued behind it, an idle session): every damaged file must either be refused with a typed store error
 * or read back exactly as before. Reading back different data is what must never happen: the runtime would resume
 * from it.
 */
const directory = mkdtempSync(join(tmpdir(), 'troupe-damage-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** The corpus's newest store, opened once by this code (migrated to its layout), as one file. */
function interruptedStore(): string {
  const path = join(directory, 'interrupted.db');
  copyFileSync(new URL('./fixtures/layouts/layout-6.db', import.meta.url), path);
  createSqliteStore(path).close();
  return path;
}

/** Everything the store gives back for its sessions: what the runtime would resume from. */
function readAll(path: string): unknown {
  const store = createSqliteStore(path);
  try {
    const list = store.list();
    const sessions = ['approval', 'idle', 'nested'].map((id) => ({
      state: store.load(id),
      events: store.readEvents(id, -1),
      approvals: store.approvals({ sessionId: id }),
    }));
    return { list, sessions, approvals: store.approvals() };
  } finally {
    store.close();
  }
}

/** A small seeded generator (mulberry32): the same seed damages the same bytes. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const typed = (error: unknown): boolean =>
  error instanceof StoreCorruptError ||
  error instanceof StoreLayoutError ||
  error instanceof ForeignStoreError;

/** What the damaged files of one test gave: read back the same, refused with a typed error, or neither. */
interface Outcomes {
  same: number;
  refused: number;
  different: number[];
  untyped: string[];
}

/** Writes a damaged copy of the store, reads everything back from it, and counts what that gave. */
function readDamaged(
  damaged: Buffer,
  name: string,
  seed: number,
  expected: unknown,
  outcomes: Outcomes,
): void {
  const path = join(directory, name);
  writeFileSync(path, damaged);
  try {
    if (isDeepStrictEqual(readAll(path), expected)) outcomes.same += 1;
    else outcomes.different.push(seed);
  } catch (error) {
    if (typed(error)) outcomes.refused += 1;
    else outcomes.untyped.push(`seed ${seed}: ${String(error)}`);
  } finally {
    rmSync(path, { force: true });
    rmSync(`${path}-wal`, { force: true });
    rmSync(`${path}-shm`, { force: true });
  }
}

/** Loads `sessionId` from the store at `path`: the load must be refused with a StoreCorruptError naming it. */
function refusedLoading(path: string, sessionId: string): StoreCorruptError {
  const store = createSqliteStore(path);
  try {
    store.load(sessionId);
  } catch (error) {
    expect(error).toBeInstanceOf(StoreCorruptError);
    expect((error as StoreCorruptError).sessionId).toBe(sessionId);
    return error as StoreCorruptError;
  } finally {
    store.close();
  }
  throw new Error(`session ${sessionId} loaded`);
}

/**
 * Damages one byte of one of `records` as they lie in the file `original` (every copy of a record is a row), over
 * 200 seeds, and reads each damaged copy back. Returns what that gave and how many places the records were found at.
 */
function damageRecords(
  original: string,
  records: readonly Buffer[],
  name: string,
): Outcomes & { places: number } {
  const bytes = readFileSync(original);
  const expected = readAll(original);
  const spans = new Map<number, number>();
  for (const record of records)
    for (let at = bytes.indexOf(record); at >= 0; at = bytes.indexOf(record, at + 1))
      spans.set(at, record.length);
  const spanList = [...spans];
  const outcomes: Outcomes = { same: 0, refused: 0, different: [], untyped: [] };
  for (let seed = 1; seed <= 200; seed += 1) {
    const next = random(seed);
    const damaged = Buffer.from(bytes);
    const [start, length] = spanList[Math.floor(next() * spanList.length)] as [number, number];
    const at = start + Math.floor(next() * length);
    damaged[at] = ((damaged[at] as number) + 1 + Math.floor(next() * 255)) % 256;
    readDamaged(damaged, `${name}-${seed}.db`, seed, expected, outcomes);
  }
  return { ...outcomes, places: spanList.length };
}

describe('damage to a stored session is a typed error, never different data', () => {
  it('random byte damage over 400 seeds (DAMAGE_SEEDS for more): refused with a typed error, or read back exactly the same', () => {
    const original = interruptedStore();
    const bytes = readFileSync(original);
    const expected = readAll(original);
    const seeds = Number(process.env.DAMAGE_SEEDS ?? 400);
    const outcomes: Outcomes = { same: 0, refused: 0, different: [], untyped: [] };
    for (let seed = 1; seed <= seeds; seed += 1) {
      const next = random(seed);
      const damaged = Buffer.from(bytes);
      // Mostly one byte; every third seed a burst of up to 8.
      const length = seed % 3 === 0 ? 1 + Math.floor(next() * 8) : 1;
      const at = Math.floor(next() * (damaged.length - length));
      for (let offset = at; offset < at + length; offset += 1) {
        const before = damaged[offset] as number;
        damaged[offset] = (before + 1 + Math.floor(next() * 255)) % 256;
      }
      readDamaged(damaged, `damaged-${seed}.db`, seed, expected, outcomes);
    }
    expect(outcomes.different).toEqual([]);
    expect(outcomes.untyped).toEqual([]);
    // The damage reached the records: many files were refused.
    expect(outcomes.refused).toBeGreaterThan(50);
  });

  it('random damage to the bytes of appended event and journal rows (200 seeds): refused with a typed error, or read back the same', () => {
    // Compacted, with what SQLite frees zeroed: no stale copy of a record (in the pages the migration freed, or in
    // the free space a page split leaves) is left for the damage to land on harmlessly.
    const original = join(directory, 'events-compacted.db');
    copyFileSync(interruptedStore(), original);
    const db = new DatabaseSync(original);
    db.exec('PRAGMA journal_mode = DELETE; PRAGMA secure_delete = ON; VACUUM;');
    // An event row's record holds its events as one document, a journal entry's its key and its document: where
    // those bytes lie in the file is where the rows are (several rows may hold the same bytes: each copy is a row).
    const records = [
      ...db.prepare('SELECT doc AS bytes FROM events').all(),
      ...db.prepare('SELECT key || doc AS bytes FROM journal').all(),
    ].map((row) => Buffer.from(String(row.bytes)));
    expect(db.prepare('SELECT count(*) AS n FROM journal').get()?.n).toBeGreaterThan(0);
    db.close();
    const outcomes = damageRecords(original, records, 'event-damaged');
    expect(outcomes.places).toBeGreaterThan(20);
    expect(outcomes.different).toEqual([]);
    expect(outcomes.untyped).toEqual([]);
    // Nearly all of them reach a record (a few land on bytes no read uses, such as a copy the file no longer reads).
    expect(outcomes.refused).toBeGreaterThan(180);
  });

  it("an event log whose index leads to another session's event is refused, naming the session", () => {
    const path = join(directory, 'event-index.db');
    copyFileSync(interruptedStore(), path);
    // The index entry (nested, seq 2) is pointed at the row of (idle, seq 2): both rows are whole and checksummed.
    const db = new DatabaseSync(path);
    const idOf = (sessionId: string) =>
      Number(db.prepare('SELECT id FROM events WHERE session_id = ? AND seq = 2').get(sessionId)?.id);
    const [nested, idle] = [idOf('nested'), idOf('idle')];
    db.close();
    expect(nested).toBeLessThan(128);
    expect(idle).toBeLessThan(128);
    // The index record: a 4-byte header (text of 6 characters, two 1-byte integers), 'nested', seq 2, its row's id.
    const entry = Buffer.concat([
      Buffer.from([4, 13 + 2 * 6, 1, 1]),
      Buffer.from('nested'),
      Buffer.from([2, nested]),
    ]);
    const bytes = readFileSync(path);
    const at = bytes.indexOf(entry);
    expect(at).toBeGreaterThan(0);
    expect(bytes.indexOf(entry, at + 1)).toBe(-1);
    bytes[at + entry.length - 1] = idle;
    writeFileSync(path, bytes);
    const store = createSqliteStore(path);
    try {
      expect(store.readEvents('idle', -1).length).toBeGreaterThan(2);
      let refused: unknown;
      try {
        store.readEvents('nested', -1);
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeInstanceOf(StoreCorruptError);
      expect((refused as StoreCorruptError).sessionId).toBe('nested');
    } finally {
      store.close();
    }
  });

  /**
   * Damages the session `idle` of a copy of the fixture `fixture` (a store of an older layout) before it is opened:
   * the migration must leave the damage to be refused (the session named), and migrate the other sessions.
   */
  const expectRefusedAfterMigration = (fixture: string, file: string) => {
    const path = join(directory, file);
    copyFileSync(new URL(`./fixtures/layouts/${fixture}`, import.meta.url), path);
    const db = new DatabaseSync(path);
    const changed = db
      .prepare(`UPDATE sessions SET doc = replace(doc, 'hello back', 'hallo back') WHERE id = 'idle'`)
      .run().changes;
    db.close();
    expect(changed).toBe(1);
    const store = createSqliteStore(path);
    try {
      let refused: unknown;
      try {
        store.load('idle');
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeInstanceOf(StoreCorruptError);
      expect((refused as StoreCorruptError).sessionId).toBe('idle');
      // The other sessions were migrated and load.
      expect(store.load('approval')?.session.status).toBe('awaiting');
    } finally {
      store.close();
    }
  };

  it('a session row damaged before its file is migrated is refused after, not checksummed again', () => {
    expectRefusedAfterMigration('layout-5.db', 'damaged-before-migration.db');
  });

  it('random damage to the bytes of appended message rows (200 seeds): refused with a typed error, or read back the same', () => {
    // Compacted, with what SQLite frees zeroed (see the test above): every copy of a message's text is a row.
    const original = join(directory, 'messages-compacted.db');
    copyFileSync(interruptedStore(), original);
    const db = new DatabaseSync(original);
    db.exec('PRAGMA journal_mode = DELETE; PRAGMA secure_delete = ON; VACUUM;');
    const records = db
      .prepare('SELECT doc FROM messages')
      .all()
      .map((row) => Buffer.from(String(row.doc)));
    db.close();
    expect(records.length).toBeGreaterThanOrEqual(6);
    const outcomes = damageRecords(original, records, 'message-damaged');
    expect(outcomes.places).toBeGreaterThanOrEqual(records.length);
    expect(outcomes.different).toEqual([]);
    expect(outcomes.untyped).toEqual([]);
    expect(outcomes.refused).toBeGreaterThan(180);
  });

  describe('a message row lost, moved or reordered is refused, naming its session', () => {
    /** A copy of the interrupted store with `edit` (SQL) applied. */
    const edited = (name: string, edit: string): string => {
      const path = join(directory, `${name}.db`);
      copyFileSync(interruptedStore(), path);
      const db = new DatabaseSync(path);
      db.exec(edit);
      db.close();
      return path;
    };
    const last = "(SELECT max(idx) FROM messages WHERE session_id = 'idle')";

    it('its last row lost: the head says how many there were', () => {
      refusedLoading(
        edited('message-lost', `DELETE FROM messages WHERE session_id = 'idle' AND idx = ${last}`),
        'idle',
      );
    });

    it('its last row lost with the head made to agree: the session row says how many it refers to', () => {
      // The head is rewritten as if the conversation had always been one message shorter, checksum and all.
      const path = edited(
        'message-lost-head',
        `DELETE FROM messages WHERE session_id = 'idle' AND idx = ${last}`,
      );
      const db = new DatabaseSync(path);
      const rows = db.prepare("SELECT sum FROM messages WHERE session_id = 'idle' ORDER BY idx").all();
      const head = db.prepare("SELECT * FROM heads WHERE session_id = 'idle'").get() as Record<
        string,
        number
      >;
      const changed = { ...head, messages: rows.length, messages_sum: Number(rows.at(-1)?.sum ?? 0) };
      db.prepare('UPDATE heads SET messages = ?, messages_sum = ?, sum = ? WHERE session_id = ?').run(
        changed.messages,
        changed.messages_sum,
        recordChecksum('heads', changed),
        'idle',
      );
      db.close();
      expect(refusedLoading(path, 'idle').message).toContain('expects');
    });

    it('a row moved to another session: both are refused', () => {
      const path = edited(
        'message-moved',
        `UPDATE messages SET session_id = 'approval', idx = (SELECT max(idx) + 1 FROM messages WHERE session_id = 'approval')
         WHERE session_id = 'idle' AND idx = ${last}`,
      );
      refusedLoading(path, 'idle');
      refusedLoading(path, 'approval');
    });

    it('two rows swapped, or one taken out of the middle: the chain of checksums breaks', () => {
      refusedLoading(
        edited(
          'message-swapped',
          `UPDATE messages SET idx = -1 WHERE session_id = 'idle' AND idx = 0;
           UPDATE messages SET idx = 0 WHERE session_id = 'idle' AND idx = 1;
           UPDATE messages SET idx = 1 WHERE session_id = 'idle' AND idx = -1;`,
        ),
        'idle',
      );
      refusedLoading(
        edited('message-gap', "DELETE FROM messages WHERE session_id = 'idle' AND idx = 1"),
        'idle',
      );
    });
  });

  it('a message damaged in a layout-6 row before its file is migrated is refused after, not checksummed again', () => {
    expectRefusedAfterMigration('layout-6.db', 'message-damaged-before-migration.db');
  });

  describe('named damage: refused by checksum as it is, and by validation when its checksums are made to match', () => {
    /** Applies `edit` (SQL) to a copy of the interrupted store; `resum` also recomputes every checksum. */
    const damaged = (name: string, edit: string, resum: boolean): string => {
      const path = join(directory, `${name}-${resum ? 'resummed' : 'raw'}.db`);
      copyFileSync(interruptedStore(), path);
      const db = new DatabaseSync(path);
      const before = JSON.stringify(
        ['sessions', 'runs', 'journal'].map((table) => db.prepare(`SELECT * FROM ${table}`).all()),
      );
      db.exec(edit);
      // The edit changed something (a replace() that finds nothing changes nothing).
      expect(
        JSON.stringify(
          ['sessions', 'runs', 'journal'].map((table) => db.prepare(`SELECT * FROM ${table}`).all()),
        ),
      ).not.toBe(before);
      if (resum) resumRecords(db);
      db.close();
      return path;
    };

    it('an edited tool result (in the journal or in the checkpoint) is refused, and recover() does not resume it', async () => {
      const journal = damaged(
        'tool-result-journal',
        `UPDATE journal SET doc = replace(doc, 'found x', 'found y') WHERE session_id = 'nested'`,
        false,
      );
      expect(refusedLoading(journal, 'nested').message).toMatch(
        /journal entry .* does not match its checksum/,
      );
      const row = damaged(
        'tool-result-row',
        `UPDATE runs SET doc = replace(doc, 'found x', 'found y') WHERE session_id = 'nested'`,
        false,
      );
      expect(refusedLoading(row, 'nested').message).toContain(
        'nested run "lead>r1/researcher" does not match its checksum',
      );
      const store = createSqliteStore(journal);
      const system = createAgentSystem({ store });
      const { sessions, failures } = await system.recover();
      expect(sessions.map((session) => session.sessionId)).not.toContain('nested');
      expect(failures.map((failure) => failure.sessionId)).toContain('nested');
      await system.shutdown();
      store.close();
    });

    it('an edited event in the append-only log is refused, naming its session', () => {
      const path = join(directory, 'event-edited.db');
      copyFileSync(interruptedStore(), path);
      const db = new DatabaseSync(path);
      const doc = String(
        db.prepare(`SELECT doc FROM events WHERE session_id = 'nested' AND seq = 3`).get()?.doc,
      );
      const events = JSON.parse(doc) as [number, ...unknown[]][];
      (events[0] as [number])[0] += 1;
      const changed = db
        .prepare(`UPDATE events SET doc = ? WHERE session_id = 'nested' AND seq = 3`)
        .run(JSON.stringify(events)).changes;
      db.close();
      expect(changed).toBe(1);
      const store = createSqliteStore(path);
      try {
        expect(() => store.readEvents('nested', -1)).toThrow(
          /the event row ending at seq 3 does not match its checksum/,
        );
        expect(store.readEvents('idle', -1).length).toBeGreaterThan(0);
      } finally {
        store.close();
      }
    });

    it('an idle row that kept its turn is refused', () => {
      const edit = `UPDATE sessions SET status = 'idle', doc = replace(doc, '"status":"running"', '"status":"idle"') WHERE id = 'nested'`;
      expect(refusedLoading(damaged('idle-with-turn', edit, false), 'nested').message).toContain('checksum');
      expect(refusedLoading(damaged('idle-with-turn', edit, true), 'nested').message).toContain(
        'session.turn is set, but a idle session holds no turn in progress',
      );
    });

    it('an altered agent name is refused', () => {
      const edit = `UPDATE sessions SET doc = replace(doc, '"current":"lead"', '"current":"leaf"') WHERE id = 'nested'`;
      expect(refusedLoading(damaged('agent-name', edit, false), 'nested').message).toContain('checksum');
      expect(refusedLoading(damaged('agent-name', edit, true), 'nested').message).toContain(
        'session.turn.session.current is "leaf", but the session\'s agent is "lead"',
      );
      const column = `UPDATE sessions SET agent = 'clerx' WHERE id = 'approval'`;
      expect(refusedLoading(damaged('agent-column', column, false), 'approval').message).toContain(
        'checksum',
      );
      expect(refusedLoading(damaged('agent-column', column, true), 'approval').message).toContain(
        'its columns and its record disagree',
      );
    });
  });
});
