import type { ApprovalRecord } from '../core/approvals.ts';
import type { RunEvent } from '../core/events.ts';
import type { JsonValue } from '../core/json.ts';
import type { AgentCheckpoint } from '../machines/agent.ts';
import type { SessionStore, SessionSummary, StoredSession, StoredSessionState } from './store.ts';

interface Entry {
  session: StoredSession | undefined;
  runs: Map<string, AgentCheckpoint>;
  journal: Map<string, JsonValue>;
  approvals: Map<string, ApprovalRecord>;
  events: RunEvent[];
  lastSeq: number;
}

/** A SessionStore in this process's memory (placeholder until the full implementation lands). */
export function createMemoryStore(options: { maxEventsPerSession?: number } = {}): SessionStore {
  const max = options.maxEventsPerSession ?? 10_000;
  const entries = new Map<string, Entry>();
  const entryOf = (id: string): Entry => {
    let entry = entries.get(id);
    if (!entry) {
      entry = {
        session: undefined,
        runs: new Map(),
        journal: new Map(),
        approvals: new Map(),
        events: [],
        lastSeq: -1,
      };
      entries.set(id, entry);
    }
    return entry;
  };
  return {
    load(id): StoredSessionState | undefined {
      const entry = entries.get(id);
      if (!entry?.session) return undefined;
      return {
        session: entry.session,
        runs: new Map(entry.runs),
        journal: new Map(entry.journal),
        approvals: [...entry.approvals.values()],
        lastSeq: entry.lastSeq,
      };
    },
    commit(id, batch) {
      const entry = entryOf(id);
      if (batch.events && batch.events.length > 0 && batch.events[0]?.seq !== entry.lastSeq + 1)
        throw new Error(`events of session ${id} must continue at seq ${entry.lastSeq + 1}`);
      if (batch.session) entry.session = batch.session;
      if (batch.clearTurn) {
        entry.runs.clear();
        entry.journal.clear();
      }
      for (const [route, checkpoint] of batch.runs ?? []) {
        if (checkpoint === null) entry.runs.delete(route);
        else entry.runs.set(route, checkpoint);
      }
      for (const [key, value] of batch.journal ?? []) entry.journal.set(key, value);
      for (const record of batch.approvals ?? []) entry.approvals.set(record.callId, record);
      for (const event of batch.events ?? []) {
        entry.events.push(event);
        entry.lastSeq = event.seq;
      }
      if (entry.events.length > max) entry.events.splice(0, entry.events.length - max);
    },
    readEvents(id, after, limit) {
      const events = (entries.get(id)?.events ?? []).filter((event) => event.seq > after);
      return limit === undefined ? events : events.slice(0, limit);
    },
    list(query) {
      const out: SessionSummary[] = [];
      for (const entry of entries.values()) {
        const session = entry.session;
        if (!session) continue;
        if (query?.status && !query.status.includes(session.status)) continue;
        out.push({
          id: session.id,
          status: session.status,
          entry: session.entry,
          agent: session.agent,
          turns: session.turns,
          updatedAt: session.updatedAt,
          pendingApprovals: [...entry.approvals.values()].filter((record) => record.status === 'pending')
            .length,
        });
      }
      return out.sort((a, b) => a.updatedAt - b.updatedAt);
    },
    approvals(query) {
      const out: ApprovalRecord[] = [];
      for (const [id, entry] of entries) {
        if (query?.sessionId !== undefined && query.sessionId !== id) continue;
        for (const record of entry.approvals.values())
          if (!query?.status || query.status.includes(record.status)) out.push(record);
      }
      return out;
    },
    delete(id) {
      entries.delete(id);
    },
    close() {
      entries.clear();
    },
  };
}
