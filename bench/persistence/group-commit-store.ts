/**
 * A bench-only prototype of group commit on SQLite: every session's commit is written at once on a connection with
 * synchronous NORMAL (so it is atomic and in order, as today), and the promise it returns resolves once one fsync
 * of the write-ahead log covers it: at most one per event-loop turn, shared by every commit of that turn. The fsync
 * is a tiny transaction on a second connection with synchronous FULL (SQLite syncs the WAL file before that commit,
 * and the file holds every frame written before it). A session waits for the promise before its next model or
 * tool call starts, so the write-ahead rule holds as with the FULL store: nothing starts before the state that
 * decided it is on disk. What changes is that K sessions committing in the same turn pay one fsync, not K.
 *
 * Not a store to ship as is: the fsync's session row shows up in list(), and a failed fsync is not reported.
 */
import {
  createSqliteStore,
  type SessionStore,
  type StoredSession,
  type SyncSessionStore,
} from '../../dist/index.js';

const syncId = '__group_commit__';

function syncRow(updatedAt: number): StoredSession {
  return {
    id: syncId,
    status: 'idle',
    entry: 'group-commit',
    agent: 'group-commit',
    turns: 0,
    transcript: [],
    turn: null,
    queued: [],
    options: {
      maxHandoffDepth: 0,
      maxHandoffRevisits: 0,
      supervision: {
        strategy: 'stop',
        maxRestarts: 0,
        onExhausted: 'escalate',
        backoffMs: 0,
        backoffFactor: 1,
        maxBackoffMs: 0,
      },
    },
    updatedAt,
  };
}

export interface GroupCommitStats {
  commits: number;
  fsyncs: number;
}

export function createGroupCommitStore(path: string): SessionStore & { stats: GroupCommitStats } {
  const writer: SyncSessionStore = createSqliteStore(path, { synchronous: 'normal' });
  const syncer: SyncSessionStore = createSqliteStore(path, { synchronous: 'full' });
  let clock = 0;
  syncer.commit(syncId, { session: syncRow(clock++) });
  let waiting: (() => void)[] = [];
  let scheduled = false;
  const stats: GroupCommitStats = { commits: 0, fsyncs: 0 };

  const sync = () => {
    scheduled = false;
    const done = waiting;
    waiting = [];
    syncer.commit(syncId, { session: syncRow(clock++) });
    stats.fsyncs++;
    for (const resolve of done) resolve();
  };

  return {
    stats,
    load: (sessionId) => writer.load(sessionId),
    readEvents: (sessionId, after, limit) => writer.readEvents(sessionId, after, limit),
    list: (query) => writer.list(query),
    approvals: (query) => writer.approvals(query),
    delete: (sessionId) => writer.delete(sessionId),
    commit(sessionId, batch) {
      writer.commit(sessionId, batch);
      stats.commits++;
      return new Promise<void>((resolve) => {
        waiting.push(resolve);
        if (!scheduled) {
          scheduled = true;
          setImmediate(sync);
        }
      });
    },
    close() {
      if (waiting.length > 0) sync();
      writer.close();
      syncer.close();
    },
  };
}
