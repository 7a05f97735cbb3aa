/**
 * The event logs and the effect journals of all sessions, each in one append-only table: a row's key (`id`) grows
 * with every record written, so that a group of commits of many sessions writes at the end of the table, not into a
 * page of each session's records. A session's records are read through the index by session (and seq, or key),
 * which also refuses a seq or a key written twice. The key `id` is not checksummed: a record is the same wherever it
 * lies.
 *
 * The event logs: one row per commit's events (each event's columns a JSON array in `doc`, in order, the first
 * event's seq in `first_seq` and the last one's in `seq`), read through the index by session and last seq. A row
 * holds `seq - first_seq + 1` events; the rows of a session follow each other without gaps or overlaps.
 */
export const eventsTable = `CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  first_seq INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  doc TEXT NOT NULL,
  sum INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS events_by_session ON events (session_id, seq);`;

/** The event logs of layouts 6 and 7: one row per event, each column of the event a column of its row. */
export const eventRowsTable = `CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  time REAL NOT NULL,
  agent TEXT NOT NULL,
  route TEXT NOT NULL,
  depth INTEGER NOT NULL,
  type TEXT NOT NULL,
  origin TEXT,
  data TEXT NOT NULL,
  sum INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS events_by_session ON events (session_id, seq);`;

export const journalTable = `CREATE TABLE IF NOT EXISTS journal (
  id INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  doc TEXT NOT NULL,
  sum INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS journal_by_session ON journal (session_id, key);`;
