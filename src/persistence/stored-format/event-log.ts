/**
 * The event logs of all sessions in one append-only table: a row's key (`id`) grows with every event written, so
 * that a group of commits of many sessions writes at the end of the table, not into a page of each session's log
 * (layout 6). A session's log is read through the index by (session, seq), which also refuses a seq written twice.
 */
export const eventsTable = `CREATE TABLE IF NOT EXISTS events (
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
