/**
 * A commit's events are one row of the event log (first and last seq, the events as one JSON array, one checksum).
 * These tests check that the rows read back as the events committed, whatever `after` and `limit` cut, on every
 * writer; and that a row edited, lost, moved, swapped or made to overlap another is refused, naming its session.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../src/persistence/sqlite-store.ts';
import { StoreCorruptError } from '../../src/persistence/store-errors.ts';
import { events, sessionRow } from './fixtures.ts';
import { resumRecords } from './resum-records.ts';

let directory: string;
let file: string;

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'troupe-stored-events-'));
  file = join(directory, 'sessions.db');
});

afterEach(() => {
  rmSync(directory, { recursive: true, force: true });
});

const writers = [
  ['without group commit', {}],
  ['group commit on the event loop', { groupCommit: { writer: 'inline' } }],
  ['group commit on a writer thread', { groupCommit: { writer: 'thread' } }],
] as const;

/** Commits of 3, 1 and 4 events (seqs 0-2, 3, 4-7) for `s1`, and of 2 for `s2`. */
async function writeLogs(options: (typeof writers)[number][1] = {}): Promise<void> {
  const store = createSqliteStore(file, options);
  try {
    await store.commit('s1', { session: sessionRow('s1'), events: events('s1', 0, 3) });
    await store.commit('s1', { session: sessionRow('s1'), events: events('s1', 3, 1) });
    await store.commit('s1', { session: sessionRow('s1'), events: events('s1', 4, 4) });
    await store.commit('s2', { session: sessionRow('s2'), events: events('s2', 0, 2) });
  } finally {
    await store.close();
  }
}

describe.each(writers)('the event log, %s', (_name, options) => {
  it('writes one row per commit and reads back every cut of it', async () => {
    await writeLogs(options);
    const raw = new DatabaseSync(file);
    expect(
      raw.prepare(`SELECT first_seq, seq FROM events WHERE session_id = 's1' ORDER BY seq`).all(),
    ).toEqual([
      { first_seq: 0, seq: 2 },
      { first_seq: 3, seq: 3 },
      { first_seq: 4, seq: 7 },
    ]);
    raw.close();
    const store = createSqliteStore(file);
    try {
      const all = events('s1', 0, 8);
      expect(store.readEvents('s1', -1)).toEqual(all);
      for (let after = -1; after < 8; after++)
        for (const limit of [undefined, 0, 1, 2, 3, 5, 9])
          expect(store.readEvents('s1', after, limit)).toEqual(
            all.slice(after + 1, limit === undefined ? undefined : after + 1 + limit),
          );
      expect(store.readEvents('s1', 1.5, 2)).toEqual(events('s1', 2, 2));
      expect(store.readEvents('s2', -1)).toEqual(events('s2', 0, 2));
    } finally {
      store.close();
    }
  });
});

describe('a damaged event row is refused, naming its session', () => {
  /** Runs `damage` on the file, then reads both logs: `s1`'s refused, `s2`'s as written unless `s2` is named. */
  async function refused(damage: (raw: DatabaseSync) => void, also: 's2' | undefined = undefined) {
    await writeLogs();
    const raw = new DatabaseSync(file);
    damage(raw);
    raw.close();
    const store = createSqliteStore(file);
    try {
      const errorOf = (sessionId: string): StoreCorruptError => {
        let error: unknown;
        try {
          store.readEvents(sessionId, -1);
        } catch (caught) {
          error = caught;
        }
        expect(error).toBeInstanceOf(StoreCorruptError);
        expect((error as StoreCorruptError).sessionId).toBe(sessionId);
        return error as StoreCorruptError;
      };
      const error = errorOf('s1');
      if (also === 's2') errorOf('s2');
      else expect(store.readEvents('s2', -1)).toEqual(events('s2', 0, 2));
      return error.message;
    } finally {
      store.close();
    }
  }
  const docOf = (raw: DatabaseSync, seq: number): unknown[][] =>
    JSON.parse(
      String(raw.prepare(`SELECT doc FROM events WHERE session_id = 's1' AND seq = ?`).get(seq)?.doc),
    ) as unknown[][];

  it('an event edited inside a row of several', async () => {
    const message = await refused((raw) => {
      const doc = docOf(raw, 7);
      (doc[2] as unknown[])[6] = { content: 'edited' };
      raw.prepare(`UPDATE events SET doc = ? WHERE session_id = 's1' AND seq = 7`).run(JSON.stringify(doc));
    });
    expect(message).toContain('the event row ending at seq 7 does not match its checksum');
  });

  it('a row lost from the middle: the next row does not continue the log', async () => {
    const message = await refused((raw) =>
      raw.exec(`DELETE FROM events WHERE session_id = 's1' AND seq = 3`),
    );
    expect(message).toContain('its event log lacks event 3 (the next stored event is 4)');
  });

  it('the last row lost: the head says where the log ends', async () => {
    const message = await refused((raw) =>
      raw.exec(`DELETE FROM events WHERE session_id = 's1' AND seq = 7`),
    );
    expect(message).toContain('its event log ends at seq 3, but its head says 7');
  });

  it('a row moved to another session: both are refused', async () => {
    const message = await refused(
      (raw) =>
        raw.exec(
          `UPDATE events SET session_id = 's2', seq = 5, first_seq = 2 WHERE session_id = 's1' AND seq = 3`,
        ),
      's2',
    );
    expect(message).toContain('its event log lacks event 3');
  });

  it("two rows' events swapped: the checksums break", async () => {
    const message = await refused((raw) => {
      const [three, seven] = [docOf(raw, 3), docOf(raw, 7)];
      // Rows of the same length: the first row's events and the last one's first three.
      const update = raw.prepare(`UPDATE events SET doc = ? WHERE session_id = 's1' AND seq = ?`);
      update.run(JSON.stringify(seven.slice(0, 1)), 3);
      update.run(JSON.stringify([...three, ...seven.slice(1)]), 7);
    });
    expect(message).toContain('does not match its checksum');
  });

  it('rows made to overlap, checksums and all: the seqs do not follow each other', async () => {
    const message = await refused((raw) => {
      const doc = docOf(raw, 3);
      raw
        .prepare(`UPDATE events SET first_seq = 2, doc = ? WHERE session_id = 's1' AND seq = 3`)
        .run(JSON.stringify([doc[0], doc[0]]));
      resumRecords(raw);
    });
    expect(message).toContain('its event log lacks event 3 (the next stored event is 2)');
  });
});

describe('an event damaged in a layout-7 file before it is migrated', () => {
  it('is refused after the migration, not checksummed again', () => {
    copyFileSync(new URL('./fixtures/layouts/layout-7.db', import.meta.url), file);
    const raw = new DatabaseSync(file);
    const changed = raw
      .prepare(`UPDATE events SET time = time + 1 WHERE session_id = 'nested' AND seq = 2`)
      .run().changes;
    raw.close();
    expect(changed).toBe(1);
    const store = createSqliteStore(file);
    try {
      expect(() => store.readEvents('nested', -1)).toThrow(StoreCorruptError);
      expect(() => store.readEvents('nested', -1)).toThrow(
        /the event row ending at seq 2 does not match its checksum/,
      );
      expect(store.readEvents('nested', 2).length).toBeGreaterThan(0);
      expect(store.readEvents('idle', -1).length).toBeGreaterThan(2);
    } finally {
      store.close();
    }
  });
});
