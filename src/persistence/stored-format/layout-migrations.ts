import type * as Sqlite from 'node:sqlite';
import { leasesTable } from '../session-lease.ts';
import { storeLayoutVersion } from '../store.ts';
import { eventRowsTable, eventsTable, journalTable } from './append-only-tables.ts';
import { checksummedColumns, eventRowColumns, recordChecksum } from './record-checksum.ts';
import { headsTable, prepareHeads } from './session-head.ts';
import { storedEventText } from './stored-events.ts';
import { messageChecksum, messagesTable } from './stored-messages.ts';

/**
 * How a SQLite store of an earlier layout is brought to this one. Each step takes a file from layout N to N + 1
 * and says what changed; opening a store runs the steps from its layout up, all in one transaction (a crash
 * mid-way leaves the file as it was). A file of a layout newer than the code is refused, never changed.
 *
 * Layout 1 was the key-value snapshot store that came before session stores: no SQLite session store has it.
 */
export interface LayoutMigration {
  from: number;
  to: number;
  /** What changed, for the storage guide's table and for error messages. */
  change: string;
  migrate(db: Sqlite.DatabaseSync): void;
}

/** The layout the code writes. */
export const currentLayout = storeLayoutVersion;

/** The oldest layout a file can be migrated from. */
export const oldestMigratableLayout = 2;

export const layoutMigrations: readonly LayoutMigration[] = [
  {
    from: 2,
    to: 3,
    change:
      'the session row writes every distinct message once (`{ row, messages }`, message lists as positions)',
    migrate(db) {
      const update = db.prepare('UPDATE sessions SET doc = ? WHERE id = ?');
      for (const row of db.prepare('SELECT id, doc FROM sessions').all()) {
        // A list that is not a `{ "$messages": [...] }` reference is read as it is: no message is moved.
        update.run(`{"row":${String(row.doc)},"messages":[]}`, row.id as string);
      }
    },
  },
  {
    from: 3,
    to: 4,
    change: 'the audit log table (`audit_log`)',
    migrate(db) {
      db.exec('CREATE TABLE IF NOT EXISTS audit_log (seq INTEGER PRIMARY KEY, doc TEXT NOT NULL);');
    },
  },
  {
    from: 4,
    to: 5,
    change:
      'a checksum per record (`sum` in sessions, runs, journal, events, approvals), the layout in each session row, a head per session (`heads`: its last event seq and how many runs, journal entries and approvals it holds), and the lease of each session a process runs (`leases`)',
    migrate(db) {
      // The heads are written in this code's form, which counts the messages of layout 7 (none yet).
      db.exec(messagesTable);
      db.exec(headsTable);
      db.exec(leasesTable);
      for (const table of Object.keys(checksummedColumns))
        if (table !== 'heads') db.exec(`ALTER TABLE ${table} ADD COLUMN sum INTEGER NOT NULL DEFAULT 0`);
      for (const row of db.prepare('SELECT rowid, * FROM sessions').all()) {
        const doc = withRecordLayout(String(row.doc), 5);
        db.prepare('UPDATE sessions SET doc = ?, sum = ? WHERE rowid = ?').run(
          doc,
          recordChecksum('sessions', { ...row, doc }),
          row.rowid as number,
        );
      }
      // The other tables are WITHOUT ROWID (approvals has one): each is updated by its primary key.
      const keys = { runs: 'route', journal: 'key', events: 'seq', approvals: 'call_id' } as const;
      for (const [table, key] of Object.entries(keys) as [keyof typeof keys, string][]) {
        const update = db.prepare(`UPDATE ${table} SET sum = ? WHERE session_id = ? AND ${key} = ?`);
        for (const row of db.prepare(`SELECT * FROM ${table}`).all())
          update.run(
            // Events are checksummed as the rows of layouts 5 to 7 (one per event); 7 -> 8 verifies them so.
            table === 'events' ? recordChecksum(table, row, eventRowColumns) : recordChecksum(table, row),
            row.session_id as Sqlite.SQLInputValue,
            row[key] as Sqlite.SQLInputValue,
          );
      }
      const heads = prepareHeads(db);
      for (const row of db.prepare('SELECT id FROM sessions').all()) heads.record(String(row.id));
    },
  },
  {
    from: 5,
    to: 6,
    change:
      'the event logs and the effect journals in append-only tables (`events` and `journal` keyed by an increasing `id`, read through the indexes `events_by_session` by session and seq and `journal_by_session` by session and key)',
    migrate(db) {
      // The records keep their columns and checksums (the key `id` is not checksummed): they are copied in each
      // session's order into the new tables, then the old ones go.
      const copies = [
        [
          'events',
          eventRowsTable,
          'session_id, seq, time, agent, route, depth, type, origin, data, sum',
          'seq',
        ],
        ['journal', journalTable, 'session_id, key, doc, sum', 'key'],
      ] as const;
      for (const [table, create, columns, order] of copies) {
        db.exec(`ALTER TABLE ${table} RENAME TO ${table}_layout_5`);
        db.exec(create);
        db.exec(
          `INSERT INTO ${table} (${columns}) SELECT ${columns} FROM ${table}_layout_5 ORDER BY session_id, ${order}`,
        );
        db.exec(`DROP TABLE ${table}_layout_5`);
      }
      relabelSessionRows(db, 5, 6);
    },
  },
  {
    from: 6,
    to: 7,
    change:
      "the conversations in an append-only table (`messages`: one row per distinct message of a session, keyed by an increasing `id`, read through `messages_by_session` by session and idx, each checksum continuing the one before it) and, for the last messages of a conversation up to 2 KB of JSON, in the session row (`tail`); the session row refers to them by ranges of positions and says how many are in rows; the head keeps their count and the last one's checksum (`messages`, `messages_sum`); the index `sessions_by_status` by status alone",
    migrate(db) {
      db.exec(messagesTable);
      db.exec(
        'DROP INDEX IF EXISTS sessions_by_status; CREATE INDEX sessions_by_status ON sessions (status);',
      );
      const headColumns = new Set(
        db
          .prepare('PRAGMA table_info(heads)')
          .all()
          .map((column) => String(column.name)),
      );
      for (const column of ['messages', 'messages_sum'])
        if (!headColumns.has(column))
          db.exec(`ALTER TABLE heads ADD COLUMN ${column} INTEGER NOT NULL DEFAULT 0`);
      const insert = db.prepare('INSERT INTO messages (session_id, idx, doc, sum) VALUES (?, ?, ?, ?)');
      const update = db.prepare('UPDATE sessions SET doc = ?, sum = ? WHERE rowid = ?');
      const selectHead = db.prepare('SELECT * FROM heads WHERE session_id = ?');
      const updateHead = db.prepare(
        'UPDATE heads SET messages = ?, messages_sum = ?, sum = ? WHERE session_id = ?',
      );
      for (const row of db.prepare('SELECT rowid, * FROM sessions ORDER BY rowid').all()) {
        const id = String(row.id);
        const doc = String(row.doc);
        const head = selectHead.get(id);
        // A row or a head that is not as layout 6 wrote it is left as it is: it is damaged, and reading the session
        // refuses it (a new checksum would make the damage pass for a record). A head written by the 4 -> 5 step
        // of this code already covers the new columns.
        if (
          !doc.startsWith(layoutSix) ||
          row.sum !== recordChecksum('sessions', row) ||
          head === undefined ||
          (head.sum !== recordChecksum('heads', head, layoutSixHeadColumns) &&
            head.sum !== recordChecksum('heads', head))
        )
          continue;
        let parsed: { row?: unknown; messages?: unknown };
        try {
          parsed = JSON.parse(doc) as { row?: unknown; messages?: unknown };
        } catch {
          continue;
        }
        if (!Array.isArray(parsed.messages)) continue;
        let sum = 0;
        for (const [idx, message] of parsed.messages.entries()) {
          const text = JSON.stringify(message);
          sum = messageChecksum(id, idx, text, sum);
          insert.run(id, idx, text, sum);
        }
        const migrated = JSON.stringify({
          layout: 7,
          row: withRanges(parsed.row),
          messages: parsed.messages.length,
          tail: [],
        });
        update.run(migrated, recordChecksum('sessions', { ...row, doc: migrated }), row.rowid as number);
        const count = parsed.messages.length;
        updateHead.run(
          count,
          sum,
          recordChecksum('heads', { ...head, messages: count, messages_sum: sum }),
          id,
        );
      }
    },
  },
  {
    from: 7,
    to: 8,
    change:
      'the events of a commit in one row (`events`: the first and last seq, `first_seq` and `seq`, and the events as one JSON array, `doc`, one checksum for them all), read through `events_by_session` by session and last seq',
    migrate(db) {
      db.exec('ALTER TABLE events RENAME TO events_layout_7');
      db.exec('DROP INDEX IF EXISTS events_by_session');
      db.exec(eventsTable);
      // Each event becomes a row of one event, in each session's order. An event that no longer matches its
      // layout-7 checksum, or whose data is not JSON, is written with a checksum that does not verify: it is damaged,
      // and reading the log refuses it (a new checksum would make the damage pass for a record).
      const insert = db.prepare(
        'INSERT INTO events (session_id, first_seq, seq, doc, sum) VALUES (?, ?, ?, ?, ?)',
      );
      for (const row of db.prepare('SELECT * FROM events_layout_7 ORDER BY session_id, seq').iterate()) {
        const data = String(row.data);
        let intact = row.sum === recordChecksum('events', row, eventRowColumns);
        try {
          JSON.parse(data);
        } catch {
          intact = false;
        }
        const doc = `[${storedEventText(row.time, row.agent, row.route, row.depth, row.type, row.origin, data)}]`;
        const migrated = { session_id: row.session_id, first_seq: row.seq, seq: row.seq, doc };
        const sum = recordChecksum('events', migrated);
        insert.run(
          row.session_id as Sqlite.SQLInputValue,
          row.seq as Sqlite.SQLInputValue,
          row.seq as Sqlite.SQLInputValue,
          doc,
          intact ? sum : (sum ^ 1) >>> 0,
        );
      }
      db.exec('DROP TABLE events_layout_7');
      relabelSessionRows(db, 7, 8);
    },
  },
];

/** How a session row of layout 6 begins. */
const layoutSix = '{"layout":6,';

/** The columns a head's checksum covered in layouts 5 and 6. */
const layoutSixHeadColumns = ['session_id', 'last_seq', 'runs', 'journal', 'approvals'];

/**
 * A layout-6 row with its message lists (`{ "$messages": [positions] }`) written as layout 7's ranges
 * (`{ "$ranges": [start, end, ...] }`). Anything else is left as it is, for reading the session to refuse.
 */
function withRanges(row: unknown): unknown {
  const record = (value: unknown): Record<string, unknown> | undefined =>
    typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  const ranges = (value: unknown): unknown => {
    const positions = record(value)?.$messages;
    if (!Array.isArray(positions) || !positions.every((position) => Number.isSafeInteger(position)))
      return value;
    const out: number[] = [];
    for (const position of positions as number[]) {
      if (out.length > 0 && out[out.length - 1] === position) out[out.length - 1] = position + 1;
      else out.push(position, position + 1);
    }
    return { $ranges: out };
  };
  const session = record(row);
  if (session === undefined) return row;
  session.transcript = ranges(session.transcript);
  const turn = record(session.turn);
  const restore = record(turn?.session);
  if (restore !== undefined) {
    restore.transcript = ranges(restore.transcript);
    restore.agentHistory = ranges(restore.agentHistory);
  }
  const checkpoint = record(record(turn?.agent)?.checkpoint);
  if (checkpoint !== undefined) checkpoint.history = ranges(checkpoint.history);
  return session;
}

/**
 * Each session row names the layout it was written with: the rows of layout `from` whose contents are otherwise
 * unchanged are rewritten as `to`'s, checksummed. A row that does not start as `from` writes it (`{"layout":N,`, as
 * JSON.stringify writes `{ layout, row, messages }`), or no longer matches its checksum, is left as it is: it is
 * damaged, and reading it refuses it (a new checksum would make the damage pass for a record).
 */
function relabelSessionRows(db: Sqlite.DatabaseSync, from: number, to: number): void {
  const prefix = `{"layout":${from},`;
  const update = db.prepare('UPDATE sessions SET doc = ?, sum = ? WHERE rowid = ?');
  for (const row of db.prepare('SELECT rowid, * FROM sessions').all()) {
    const doc = String(row.doc);
    if (!doc.startsWith(prefix) || row.sum !== recordChecksum('sessions', row)) continue;
    const migrated = `{"layout":${to},${doc.slice(prefix.length)}`;
    update.run(migrated, recordChecksum('sessions', { ...row, doc: migrated }), row.rowid as number);
  }
}

/** A session row's JSON text with its record layout set (the row is `{ layout, row, messages }`). */
function withRecordLayout(doc: string, layout: number): string {
  return `{"layout":${layout},${doc.slice(doc.indexOf('{') + 1)}`;
}

/**
 * Runs the migrations from `layout` to the current one in one transaction and returns the layout the file is at
 * afterwards. Another process may migrate the same file at the same moment: the second finds it done.
 */
export function migrateLayout(db: Sqlite.DatabaseSync, layout: unknown): unknown {
  if (typeof layout !== 'number' || layout < oldestMigratableLayout || layout >= currentLayout) return layout;
  db.exec('BEGIN IMMEDIATE');
  try {
    let now = db.prepare("SELECT value FROM meta WHERE key = 'layout'").get()?.value;
    for (const step of layoutMigrations) {
      if (step.from !== now) continue;
      step.migrate(db);
      now = step.to;
    }
    db.prepare("UPDATE meta SET value = ? WHERE key = 'layout'").run(now as number);
    db.exec('COMMIT');
  } catch (error) {
    try {
      db.exec('ROLLBACK');
    } catch {
      // Nothing to roll back.
    }
    throw error;
  }
  return db.prepare("SELECT value FROM meta WHERE key = 'layout'").get()?.value;
}
