import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.ts';
import { createSqliteStore, type SqliteSessionStore } from '../../src/persistence/sqlite-store.ts';
import { storeLayoutVersion } from '../../src/persistence/store.ts';
import {
  ForeignStoreError,
  StoreClosedError,
  StoreCommitError,
  StoreCorruptError,
  StoreIoError,
  StoreLayoutError,
} from '../../src/persistence/store-errors.ts';
import { approval, checkpoint, events, idleRow, sessionRow } from './fixtures.ts';
import { resumRecords } from './resum-records.ts';

let directory: string;
let file: string;
const opened: { close(): void }[] = [];

function store(options?: Parameters<typeof createSqliteStore>[1], path = file): SqliteSessionStore {
  const created = createSqliteStore(path, options);
  opened.push(created);
  return created;
}

/** A second connection to the file that bypasses the store, to look at or damage what it wrote. */
function raw(path = file): DatabaseSync {
  const db = new DatabaseSync(path);
  opened.push(db);
  return db;
}

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('nothing was thrown');
}

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'troupe-sqlite-'));
  file = join(directory, 'sessions.db');
});

afterEach(() => {
  for (const each of opened.splice(0).reverse()) {
    try {
      each.close();
    } catch {
      // Already closed by the test.
    }
  }
  rmSync(directory, { recursive: true, force: true });
});

describe('createSqliteStore: the connection', () => {
  it('runs in WAL mode with synchronous FULL, foreign keys and a busy timeout by default', () => {
    const sessions = store();
    expect(sessions.settings()).toEqual({
      journalMode: 'wal',
      synchronous: 'full',
      busyTimeoutMs: 5_000,
      foreignKeys: true,
    });
    // WAL mode is a property of the file: another connection sees it too.
    expect(raw().prepare('PRAGMA journal_mode').get()?.journal_mode).toBe('wal');
  });

  it('takes synchronous NORMAL and another busy timeout when asked', () => {
    expect(store({ synchronous: 'normal', busyTimeoutMs: 250 }).settings()).toMatchObject({
      journalMode: 'wal',
      synchronous: 'normal',
      busyTimeoutMs: 250,
    });
  });

  it('refuses bad options with a ConfigError', () => {
    expect(() => createSqliteStore(file, { synchronous: 'off' as 'full' })).toThrow(ConfigError);
    expect(() => createSqliteStore(file, { busyTimeoutMs: -1 })).toThrow(ConfigError);
    expect(() => createSqliteStore('')).toThrow(ConfigError);
  });

  it('refuses a file in a folder that does not exist with a ConfigError, and creates nothing', () => {
    const mistyped = join(directory, 'sesions', 'sessions.db');
    const error = thrown(() => createSqliteStore(mistyped));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain(join(directory, 'sesions'));
    expect((error as Error).message).toContain('createDirectories: true');
    expect(existsSync(join(directory, 'sesions'))).toBe(false);
    expect(() => createSqliteStore(file, { createDirectories: 'yes' as unknown as boolean })).toThrow(
      ConfigError,
    );
  });

  it('creates the folder of a new file when asked, and works in memory too', () => {
    const nested = join(directory, 'a', 'b', 'sessions.db');
    store({ createDirectories: true }, nested).commit('s1', { session: idleRow('s1') });
    expect(statSync(nested).isFile()).toBe(true);
    const inMemory = store(undefined, ':memory:');
    inMemory.commit('s1', { session: idleRow('s1'), events: events('s1', 0, 2) });
    expect(inMemory.load('s1')?.lastSeq).toBe(1);
  });

  it('fails with a StoreIoError, not a raw error, where no database can be opened', () => {
    const error = thrown(() => createSqliteStore(directory));
    expect(error).toBeInstanceOf(StoreIoError);
    expect((error as StoreIoError).busy).toBe(false);
    expect((error as Error).message).toContain(directory);
    writeFileSync(join(directory, 'plain-file'), 'x');
    expect(() =>
      createSqliteStore(join(directory, 'plain-file', 'sub', 'sessions.db'), { createDirectories: true }),
    ).toThrow(StoreIoError);
  });

  it('records its layout version in the meta table', () => {
    store();
    expect(raw().prepare("SELECT value FROM meta WHERE key = 'layout'").get()?.value).toBe(
      storeLayoutVersion,
    );
  });

  it('gives back copies: what load returns is equal to what was committed, not the same object', () => {
    const sessions = store();
    const row = sessionRow('s1');
    sessions.commit('s1', { session: row });
    const loaded = sessions.load('s1')?.session;
    expect(loaded).toEqual(row);
    expect(loaded).not.toBe(row);
  });
});

describe('createSqliteStore: files it must refuse', () => {
  it('refuses a file written with another storage layout with StoreLayoutError naming the file', () => {
    store().close();
    raw().exec("UPDATE meta SET value = 1 WHERE key = 'layout'");
    const error = thrown(() => createSqliteStore(file));
    expect(error).toBeInstanceOf(StoreLayoutError);
    expect((error as StoreLayoutError).found).toBe(1);
    expect((error as StoreLayoutError).expected).toBe(storeLayoutVersion);
    expect((error as Error).message).toContain(file);
  });

  it('refuses a file of garbage with StoreCorruptError naming the file (no session)', () => {
    writeFileSync(
      file,
      'this is not a database, only text that is long enough to fill a header. '.repeat(64),
    );
    const error = thrown(() => createSqliteStore(file));
    expect(error).toBeInstanceOf(StoreCorruptError);
    expect((error as StoreCorruptError).sessionId).toBeUndefined();
    expect((error as Error).message).toContain(file);
  });

  it("refuses another application's SQLite database as not a Troupe store (not a damaged one), leaving it as it was", () => {
    const other = raw();
    other.exec('CREATE TABLE notes (body TEXT)');
    const error = thrown(() => createSqliteStore(file));
    expect(error).toBeInstanceOf(ForeignStoreError);
    expect(error).not.toBeInstanceOf(StoreCorruptError);
    expect((error as ForeignStoreError).path).toBe(file);
    expect((error as Error).message).toContain('not a Troupe session store');
    expect((error as Error).message).not.toContain('damaged');
    // Its journal mode is its own: the store switched nothing to WAL before refusing it.
    expect(other.prepare('PRAGMA journal_mode').get()?.journal_mode).toBe('delete');
  });

  it("refuses another application's database with a meta table of its own the same way", () => {
    raw().exec(
      "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); INSERT INTO meta VALUES ('owner', 'crm')",
    );
    expect(thrown(() => createSqliteStore(file))).toBeInstanceOf(ForeignStoreError);
  });

  it('refuses a database file cut short with StoreCorruptError, wherever it was cut', () => {
    const sessions = store();
    for (let i = 0; i < 200; i++)
      sessions.commit(`s${i}`, { session: sessionRow(`s${i}`), events: events(`s${i}`, 0, 5) });
    sessions.close();
    const whole = join(directory, 'whole.db');
    copyFileSync(file, whole);
    const size = statSync(whole).size;
    expect(size).toBeGreaterThan(64 * 1024);
    for (const cut of [50, 100, 4_096, Math.floor(size / 2), size - 4_096]) {
      const damaged = join(directory, `cut-${cut}.db`);
      copyFileSync(whole, damaged);
      truncateSync(damaged, cut);
      const error = thrown(() => {
        const reopened = store(undefined, damaged);
        // Should the damage stay out of sight at open, reading must find it.
        for (let i = 0; i < 200; i++) reopened.load(`s${i}`);
        reopened.list();
      });
      expect(error, `cut at ${cut} bytes`).toBeInstanceOf(StoreCorruptError);
      expect((error as Error).message).toContain(damaged);
    }
  });
});

describe('createSqliteStore: damaged records', () => {
  function withSessions(): SqliteSessionStore {
    const sessions = store();
    sessions.commit('s1', {
      session: sessionRow('s1'),
      runs: [['nested', checkpoint()]],
      journal: [['tool:call_1', '5']],
      events: events('s1', 0, 3),
      approvals: [approval('s1', 'call_2')],
    });
    sessions.commit('s2', { session: idleRow('s2'), events: events('s2', 0, 1) });
    return sessions;
  }

  const corruptOf = (run: () => unknown): StoreCorruptError => {
    const error = thrown(run);
    expect(error).toBeInstanceOf(StoreCorruptError);
    return error as StoreCorruptError;
  };

  it('refuses a session row whose JSON does not parse, naming the session; other sessions still load', () => {
    const sessions = withSessions();
    raw().exec(`UPDATE sessions SET doc = '{"id": "s1", "status":' WHERE id = 's1'`);
    resumRecords(raw());
    const error = corruptOf(() => sessions.load('s1'));
    expect(error.sessionId).toBe('s1');
    expect(error.message).toContain('the session row is not valid JSON');
    expect(sessions.load('s2')?.session).toEqual(idleRow('s2'));
    // The store is not left inside a transaction by the failed load.
    sessions.commit('s2', { events: events('s2', 1, 1) });
  });

  it('refuses damaged event data, nested-run checkpoints, journal entries and approvals, naming the session', () => {
    const sessions = withSessions();
    const db = raw();
    // The three events of s1's commit are one row.
    const stored = String(db.prepare(`SELECT doc FROM events WHERE session_id = 's1'`).get()?.doc);
    db.exec(`UPDATE events SET doc = '${stored.slice(0, -2)}' WHERE session_id = 's1'`);
    resumRecords(db);
    let error = corruptOf(() => sessions.readEvents('s1', -1));
    expect(error.sessionId).toBe('s1');
    expect(error.message).toContain('the row of events 0 to 2 is not valid JSON');
    expect(sessions.readEvents('s2', -1)).toEqual(events('s2', 0, 1));
    const parsed = JSON.parse(stored) as unknown[][];
    (parsed[1] as unknown[])[4] = 'no_such_type';
    db.prepare(`UPDATE events SET doc = ? WHERE session_id = 's1'`).run(JSON.stringify(parsed));
    resumRecords(db);
    expect(corruptOf(() => sessions.readEvents('s1', -1)).message).toContain(
      'event 1 has the type "no_such_type"',
    );
    db.prepare(`UPDATE events SET doc = ? WHERE session_id = 's1'`).run(JSON.stringify(parsed.slice(0, 2)));
    resumRecords(db);
    expect(corruptOf(() => sessions.readEvents('s1', -1)).message).toContain(
      'the row of events 0 to 2 holds 2 events',
    );
    db.prepare(`UPDATE events SET doc = ? WHERE session_id = 's1'`).run(stored);
    resumRecords(db);
    expect(sessions.readEvents('s1', 1)).toEqual(events('s1', 2, 1));

    db.exec(`UPDATE runs SET doc = '{"history": 5}' WHERE session_id = 's1'`);
    resumRecords(db);
    error = corruptOf(() => sessions.load('s1'));
    expect(error.message).toContain('nested run "nested"');

    db.exec(`UPDATE runs SET doc = '${JSON.stringify(checkpoint())}' WHERE session_id = 's1'`);
    db.exec(`UPDATE journal SET doc = '{' WHERE session_id = 's1'`);
    resumRecords(db);
    expect(corruptOf(() => sessions.load('s1')).message).toContain(
      'journal entry "tool:call_1" is not valid JSON',
    );

    db.exec(`UPDATE journal SET doc = '"5"' WHERE session_id = 's1'`);
    db.exec(`UPDATE approvals SET doc = '{"callId": "call_2"}' WHERE session_id = 's1'`);
    resumRecords(db);
    error = corruptOf(() => sessions.approvals({ status: ['pending'] }));
    expect(error.sessionId).toBe('s1');
    expect(error.message).toContain('approval "call_2"');
    expect(corruptOf(() => sessions.load('s1')).sessionId).toBe('s1');
  });

  it('refuses a checkpoint with an orphan tool message, or whose history is not an array', () => {
    const sessions = store();
    const orphan = sessionRow('s1');
    const turn = orphan.turn!;
    const agent = turn.agent!;
    orphan.turn = {
      ...turn,
      agent: {
        ...agent,
        checkpoint: {
          ...agent.checkpoint,
          history: [...agent.checkpoint.history, { role: 'tool', toolCallId: 'call_404', content: 'stray' }],
        },
      },
    };
    // The store does not check what it commits (that would cost every commit); it checks what it reads back.
    sessions.commit('s1', { session: orphan });
    let error = corruptOf(() => sessions.load('s1'));
    expect(error.sessionId).toBe('s1');
    expect(error.message).toContain('turn.agent.checkpoint.history is not a valid conversation');
    expect(error.message).toContain('call_404');

    const notArray = JSON.parse(JSON.stringify(sessionRow('s2'))) as {
      turn: { agent: { checkpoint: object } };
    };
    notArray.turn.agent.checkpoint = { ...notArray.turn.agent.checkpoint, history: { 0: 'hi' } };
    // The row says how many of its messages are in rows, and holds the others (its tail): the rows below keep both.
    const { messages: stored, tail } = JSON.parse(
      (raw().prepare('SELECT doc FROM sessions WHERE id = ?').get('s1') as { doc: string }).doc,
    ) as { messages: number; tail: unknown[] };
    const all = stored + tail.length;
    raw()
      .prepare('UPDATE sessions SET doc = ? WHERE id = ?')
      .run(
        JSON.stringify({
          layout: storeLayoutVersion,
          row: { ...notArray, id: 's1' },
          messages: stored,
          tail,
        }),
        's1',
      );
    resumRecords(raw());
    error = corruptOf(() => sessions.load('s1'));
    expect(error.message).toContain('turn.agent.checkpoint.history must be an array');
    // A row that refers to a message it does not have.
    raw()
      .prepare('UPDATE sessions SET doc = ? WHERE id = ?')
      .run(
        JSON.stringify({
          layout: storeLayoutVersion,
          row: { ...sessionRow('s1'), transcript: { $ranges: [all, all + 1] } },
          messages: stored,
          tail,
        }),
        's1',
      );
    resumRecords(raw());
    error = corruptOf(() => sessions.load('s1'));
    expect(error.message).toContain(`refers to messages ${all} to ${all + 1}`);
    // A row that does not say how many messages it was written with.
    raw()
      .prepare('UPDATE sessions SET doc = ? WHERE id = ?')
      .run(JSON.stringify({ layout: storeLayoutVersion, row: sessionRow('s1') }), 's1');
    resumRecords(raw());
    expect(corruptOf(() => sessions.load('s1')).message).toContain('expects no messages');
  });

  it('refuses a row with a status it does not know in list(), naming the session', () => {
    const sessions = withSessions();
    raw().exec(`UPDATE sessions SET status = 'zombie' WHERE id = 's2'`);
    resumRecords(raw());
    const error = corruptOf(() => sessions.list());
    expect(error.sessionId).toBe('s2');
    expect(error.message).toContain('zombie');
  });
});

describe('createSqliteStore: the head each commit writes', () => {
  const corruptOf = (run: () => unknown): StoreCorruptError => {
    const error = thrown(run);
    expect(error).toBeInstanceOf(StoreCorruptError);
    return error as StoreCorruptError;
  };

  it('still finds a record lost before a later commit: the commit adds to the head, it does not count again', () => {
    const sessions = store();
    sessions.commit('s1', {
      session: sessionRow('s1'),
      journal: [['m1', 'one']],
      events: events('s1', 0, 2),
    });
    // A page lost with the journal entry on it (no checksum can see a record that is gone).
    raw().exec(`DELETE FROM journal WHERE session_id = 's1'`);
    sessions.commit('s1', { journal: [['m2', 'two']], events: events('s1', 2, 1) });
    const error = corruptOf(() => sessions.load('s1'));
    expect(error.sessionId).toBe('s1');
    expect(error.message).toContain('journal records: 1, but its head says 2');
  });

  it('counts a record written again once, and a deleted one no more', () => {
    const sessions = store();
    sessions.commit('s1', {
      session: sessionRow('s1'),
      runs: [
        ['a', checkpoint()],
        ['b', checkpoint()],
      ],
      journal: [['m1', 'one']],
      approvals: [approval('s1', 'call_2')],
    });
    sessions.commit('s1', {
      runs: [
        ['a', checkpoint({ step: 3 })],
        ['b', null],
        ['c', null],
      ],
      journal: [
        ['m1', 'again'],
        ['m2', 'two'],
      ],
      approvals: [
        approval('s1', 'call_2', { status: 'approved', decision: { type: 'approve' }, decidedAt: 5 }),
      ],
    });
    const state = sessions.load('s1');
    expect([...(state?.runs.keys() ?? [])]).toEqual(['a']);
    expect(state?.runs.get('a')?.step).toBe(3);
    expect([...(state?.journal ?? [])]).toEqual([
      ['m1', 'again'],
      ['m2', 'two'],
    ]);
    expect(state?.approvals.map((record) => record.status)).toEqual(['approved']);
    sessions.commit('s1', { session: idleRow('s1'), clearTurn: true });
    expect(sessions.load('s1')?.journal.size).toBe(0);
    expect(sessions.load('s1')?.runs.size).toBe(0);
  });

  it('writes a commit of many events (several INSERT statements) whole and in order', () => {
    const sessions = store();
    sessions.commit('s1', { session: sessionRow('s1'), events: events('s1', 0, 19) });
    sessions.commit('s1', { events: events('s1', 19, 8) });
    expect(sessions.readEvents('s1', -1)).toEqual(events('s1', 0, 27));
    expect(sessions.load('s1')?.lastSeq).toBe(26);
    // A gap after them is still refused.
    expect(() => sessions.commit('s1', { events: events('s1', 28, 1) })).toThrow(StoreCommitError);
  });

  it('refuses a commit to a session whose head is damaged or gone, naming the session', () => {
    const sessions = store();
    sessions.commit('s1', { session: sessionRow('s1'), events: events('s1', 0, 1) });
    sessions.commit('s2', { session: sessionRow('s2'), events: events('s2', 0, 1) });
    const db = raw();
    db.exec(`UPDATE heads SET last_seq = 7 WHERE session_id = 's1'`);
    expect(corruptOf(() => sessions.commit('s1', { events: events('s1', 1, 1) })).sessionId).toBe('s1');
    db.exec(`DELETE FROM heads WHERE session_id = 's2'`);
    expect(corruptOf(() => sessions.commit('s2', { events: events('s2', 1, 1) })).message).toContain(
      'its head',
    );
  });

  it('refuses a commit of the session row when the row is gone but its head is there (a loss, not a new session)', () => {
    const sessions = store();
    sessions.commit('s1', { session: sessionRow('s1'), events: events('s1', 0, 1) });
    // Without foreign keys the row goes alone, as damage would take it.
    raw().exec(`PRAGMA foreign_keys = OFF; DELETE FROM sessions WHERE id = 's1'`);
    const error = corruptOf(() => sessions.commit('s1', { session: sessionRow('s1', { updatedAt: 2_000 }) }));
    expect(error.sessionId).toBe('s1');
    expect(error.message).toContain('its session row is lost');
  });
});

describe('createSqliteStore: several connections', () => {
  it('a second store on the same file sees the first one’s commits, and the seq check sees the other’s events', () => {
    const first = store();
    const second = store();
    first.commit('s1', {
      session: sessionRow('s1'),
      events: events('s1', 0, 2),
      approvals: [approval('s1', 'c')],
    });
    expect(second.load('s1')?.session).toEqual(sessionRow('s1'));
    expect(second.readEvents('s1', -1)).toEqual(events('s1', 0, 2));
    expect(second.list().map((summary) => summary.sessionId)).toEqual(['s1']);
    expect(second.approvals({ status: ['pending'] })).toHaveLength(1);

    second.commit('s1', { events: events('s1', 2, 1) });
    const stale = thrown(() => first.commit('s1', { events: events('s1', 2, 1) }));
    expect((stale as StoreCommitError).reason).toBe('event_sequence');
    expect(first.load('s1')?.lastSeq).toBe(2);
  });

  it('waits for another writer up to the busy timeout, then fails with a busy StoreIoError and writes nothing', () => {
    const sessions = store({ busyTimeoutMs: 50 });
    sessions.commit('s1', { session: idleRow('s1') });
    const other = raw();
    other.exec('BEGIN IMMEDIATE');
    const error = thrown(() => sessions.commit('s1', { events: events('s1', 0, 1) }));
    expect(error).toBeInstanceOf(StoreIoError);
    expect((error as StoreIoError).busy).toBe(true);
    expect((error as Error).message).toContain(file);
    // Readers do not wait for the writer in WAL mode.
    expect(sessions.load('s1')?.lastSeq).toBe(-1);
    other.exec('COMMIT');
    sessions.commit('s1', { events: events('s1', 0, 1) });
    expect(sessions.load('s1')?.lastSeq).toBe(0);
  });
});

describe('createSqliteStore: commits', () => {
  it('refuses values that are not JSON before writing anything', () => {
    const sessions = store();
    sessions.commit('s1', { session: idleRow('s1') });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const refused = [
      { journal: [['k', cyclic]] },
      { journal: [['k', 10n]] },
      { journal: [['k', undefined]] },
      { session: idleRow('s1', { turns: 2 }), events: [{ ...events('s1', 0, 1)[0]!, data: { big: 1n } }] },
      // The events of a commit are serialized together: each is still refused by name, whatever its place.
      ...[{ big: 1n }, cyclic, undefined, { toJSON: () => undefined }, () => 1].map((data) => ({
        events: [...events('s1', 0, 2), { ...events('s1', 2, 1)[0]!, data }],
      })),
    ] as unknown as Parameters<SqliteSessionStore['commit']>[1][];
    for (const batch of refused) {
      const error = thrown(() => sessions.commit('s1', batch));
      expect(error).toBeInstanceOf(StoreCommitError);
      expect((error as StoreCommitError).reason).toBe('invalid_value');
      if (batch.events?.length === 3)
        expect((error as Error).message).toContain('the data of event 2 is not JSON');
    }
    const state = sessions.load('s1');
    expect(state?.session).toEqual(idleRow('s1'));
    expect(state?.journal.size).toBe(0);
    expect(state?.lastSeq).toBe(-1);
  });

  it('keeps an event’s own sessionId when it differs from the session it is logged in (a nested run’s)', () => {
    const sessions = store();
    const nested = { ...events('s1', 0, 1)[0]!, sessionId: 's1:call_7' };
    sessions.commit('s1', { session: idleRow('s1'), events: [nested] });
    expect(sessions.readEvents('s1', -1)).toEqual([nested]);
  });

  it('throws StoreClosedError after close, also from settings()', () => {
    const sessions = store();
    sessions.close();
    expect(() => sessions.settings()).toThrow(StoreClosedError);
    expect(() => sessions.load('s1')).toThrow(StoreClosedError);
  });

  it('leaves only the database file once closed (the -wal and -shm files go with the last connection)', () => {
    const sessions = store();
    sessions.commit('s1', { session: idleRow('s1'), events: events('s1', 0, 3) });
    sessions.close();
    expect(readdirSync(directory)).toEqual(['sessions.db']);
  });
});

describe('createSqliteStore: the conversation is written once per row', () => {
  it('stores each shared message once and gives every list back, sharing message objects again', () => {
    const sessions = store();
    const row = sessionRow('s1');
    sessions.commit('s1', { session: row });
    const text = raw().prepare('SELECT doc FROM sessions WHERE id = ?').get('s1') as { doc: string };
    const doc = JSON.parse(text.doc) as { messages: number; tail: unknown[] };
    const lists = [
      row.transcript,
      row.turn?.session.transcript,
      row.turn?.session.agentHistory,
      row.turn?.agent?.checkpoint.history,
    ];
    const distinct = new Set(lists.flatMap((list) => list ?? []));
    // A short conversation stays in the row (its tail); the rows of the messages table hold none of it.
    expect(doc.messages).toBe(0);
    expect(doc.tail).toHaveLength(distinct.size);
    const loaded = sessions.load('s1');
    expect(loaded?.session).toEqual(row);
    // Lists that shared messages share them again (not copies of each other's text).
    const back = loaded?.session;
    expect(back?.turn?.session.transcript[0]).toBe(back?.transcript[0]);
  });
});
