import type { ApprovalRecord } from '../core/approvals.ts';
import { ConfigError } from '../core/errors.ts';
import type { RunEvent } from '../core/events.ts';
import type { JsonValue } from '../core/json.ts';
import { checkBatch, checkEventLimit } from './commit-rules.ts';
import type { CommitBatch, SessionSummary, StoredSession, StoredSessionState } from './store.ts';
import { StoreClosedError } from './store-errors.ts';
import type { StoredAgentCheckpoint } from './stored-format/stored-checkpoint.ts';
import type { SyncSessionStore } from './sync-store.ts';

/** Options of `createMemoryStore`. */
export interface MemoryStoreOptions {
  /**
   * Events kept per session (default 10,000). Past it the oldest are dropped: `readEvents` from a dropped seq
   * returns the events that are left, and the next commit still continues the log's seq.
   */
  maxEventsPerSession?: number;
}

const defaultMaxEvents = 10_000;

/** The stores createMemoryStore made: what they hold ends with the process. */
const memoryStores = new WeakSet<object>();

/** Whether `store` keeps everything in this process's memory (so nothing it holds survives a restart anyway). */
export function isMemoryStore(store: object): boolean {
  return memoryStores.has(store);
}

/** Everything the store holds for one session. */
interface SessionEntry {
  session: StoredSession;
  runs: Map<string, StoredAgentCheckpoint>;
  journal: Map<string, JsonValue>;
  /** By call id, each with the order it was first recorded in across the store (approvals() lists in that order). */
  approvals: Map<string, { record: ApprovalRecord; order: number }>;
  /** The retained events are `events[head..]`: dropping the oldest moves `head`, the array is compacted now and then. */
  events: RunEvent[];
  head: number;
  lastSeq: number;
}

/**
 * A SessionStore that keeps everything in the process's memory: for tests, and for sessions that need not outlive
 * the process. It answers synchronously. It keeps the values it is given by reference, without copying: the runtime
 * never changes what it has committed, and whoever else commits must not either (what `load` returns is the very
 * object that was committed; the Maps and arrays around them are fresh). Commits are checked like the SQLite
 * store's (events continue the log, rows exist), but values are not serialized, so they are not checked for being
 * JSON.
 */
export function createMemoryStore(options: MemoryStoreOptions = {}): SyncSessionStore {
  const maxEvents = options.maxEventsPerSession ?? defaultMaxEvents;
  if (maxEvents !== Number.POSITIVE_INFINITY && (!Number.isSafeInteger(maxEvents) || maxEvents < 0))
    throw new ConfigError(
      `createMemoryStore: maxEventsPerSession must be a non-negative integer (or Infinity); got ${String(maxEvents)}.`,
    );
  // Insertion order is creation order: list() sorts by update time and keeps it for ties, like the SQLite store.
  let sessions = new Map<string, SessionEntry>();
  let closed = false;
  let approvalOrder = 0;

  const open = (): Map<string, SessionEntry> => {
    if (closed) throw new StoreClosedError();
    return sessions;
  };

  const appendEvents = (entry: SessionEntry, events: readonly RunEvent[]): void => {
    for (const event of events) entry.events.push(event);
    entry.lastSeq += events.length;
    const excess = entry.events.length - entry.head - maxEvents;
    if (excess > 0) entry.head += excess;
    // Compact once the dropped prefix is most of the array, so the array stays within twice the limit.
    if (entry.head > 1024 && entry.head * 2 > entry.events.length) {
      entry.events = entry.events.slice(entry.head);
      entry.head = 0;
    }
  };

  const store: SyncSessionStore = {
    load(sessionId) {
      const entry = open().get(sessionId);
      if (entry === undefined) return undefined;
      const state: StoredSessionState = {
        session: entry.session,
        runs: new Map(entry.runs),
        journal: new Map(entry.journal),
        approvals: [...entry.approvals.values()].map(({ record }) => record),
        lastSeq: entry.lastSeq,
      };
      return state;
    },

    commit(sessionId, batch: CommitBatch) {
      const existing = open().get(sessionId);
      checkBatch(sessionId, batch, existing?.lastSeq ?? -1, existing !== undefined);
      // Checked: nothing below can throw, so the batch applies whole.
      let entry = existing;
      if (batch.session !== undefined) {
        if (entry === undefined) {
          entry = {
            session: batch.session,
            runs: new Map(),
            journal: new Map(),
            approvals: new Map(),
            events: [],
            head: 0,
            lastSeq: -1,
          };
          sessions.set(sessionId, entry);
        } else entry.session = batch.session;
      }
      if (entry === undefined) return;
      if (batch.clearTurn === true) {
        entry.runs.clear();
        entry.journal.clear();
      }
      for (const [route, checkpoint] of batch.runs ?? []) {
        if (checkpoint === null) entry.runs.delete(route);
        else entry.runs.set(route, checkpoint);
      }
      for (const [key, value] of batch.journal ?? []) entry.journal.set(key, value);
      if (batch.events !== undefined && batch.events.length > 0) appendEvents(entry, batch.events);
      for (const record of batch.approvals ?? []) {
        const known = entry.approvals.get(record.callId);
        if (known !== undefined) known.record = record;
        else entry.approvals.set(record.callId, { record, order: approvalOrder++ });
      }
    },

    readEvents(sessionId, after, limit) {
      checkEventLimit(limit);
      const entry = open().get(sessionId);
      if (entry === undefined || Number.isNaN(after)) return [];
      const retained = entry.events.length - entry.head;
      const firstSeq = entry.lastSeq - retained + 1;
      const skip = Math.max(0, Math.floor(after) + 1 - firstSeq);
      if (skip >= retained) return [];
      const start = entry.head + skip;
      return entry.events.slice(start, limit === undefined ? undefined : start + limit);
    },

    list(query) {
      const wanted = query?.status === undefined ? undefined : new Set<string>(query.status);
      const summaries: SessionSummary[] = [];
      for (const entry of open().values()) {
        const { session } = entry;
        if (wanted !== undefined && !wanted.has(session.status)) continue;
        let pendingApprovals = 0;
        for (const { record } of entry.approvals.values())
          if (record.status === 'pending') pendingApprovals++;
        summaries.push({
          sessionId: session.id,
          status: session.status,
          entry: session.entry,
          agent: session.agent,
          turns: session.turns,
          updatedAt: session.updatedAt,
          pendingApprovals,
        });
      }
      // Array.prototype.sort is stable: sessions updated at the same time stay in creation order.
      return summaries.sort((a, b) => a.updatedAt - b.updatedAt);
    },

    approvals(query) {
      const wanted = query?.status === undefined ? undefined : new Set<string>(query.status);
      const found: { record: ApprovalRecord; order: number }[] = [];
      const collect = (entry: SessionEntry): void => {
        for (const item of entry.approvals.values())
          if (wanted === undefined || wanted.has(item.record.status)) found.push(item);
      };
      if (query?.sessionId !== undefined) {
        const entry = open().get(query.sessionId);
        if (entry !== undefined) collect(entry);
      } else for (const entry of open().values()) collect(entry);
      return found.sort((a, b) => a.order - b.order).map(({ record }) => record);
    },

    delete(sessionId) {
      open().delete(sessionId);
    },

    // A memory store belongs to one process, which holds the lease of every session in it.
    acquireLease() {
      open();
    },

    releaseLease() {
      open();
    },

    close() {
      closed = true;
      sessions = new Map();
    },
  };
  memoryStores.add(store);
  return store;
}
