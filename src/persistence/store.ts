import type { ApprovalRecord } from '../core/approvals.ts';
import type { RunEvent } from '../core/events.ts';
import type { JsonValue } from '../core/json.ts';
import type { Message, RunInput } from '../core/messages.ts';
import type { SupervisionPolicy } from '../machines/session.ts';
import type { StoredAgentCheckpoint } from './stored-format/stored-checkpoint.ts';
import type { StoredSessionRestore } from './stored-format/stored-restore.ts';

/**
 * Where a system keeps what must survive a crash, a deploy or a Ctrl-C: every session's conversation, the turn in
 * progress (the state that decided the next model or tool call, committed before that call starts), the results of
 * the calls that finished since, the decisions people took on approvals, and the session's event log.
 *
 * Two implementations ship: `createSqliteStore(path)` (the durable default: one SQLite file, WAL mode, one
 * transaction per commit) and `createMemoryStore()` (for tests and for sessions that need not outlive the process).
 * A store may answer synchronously or with a promise; the runtime waits either way before the next effect starts.
 */
export interface SessionStore {
  /** Everything the store holds for a session, or undefined. A damaged record throws a StoreCorruptError naming it. */
  load(sessionId: string): MaybePromise<StoredSessionState | undefined>;
  /** Applies one batch of changes to a session atomically: all of it is committed, or none of it. */
  commit(sessionId: string, batch: CommitBatch): MaybePromise<void>;
  /** The session's events with `seq > after`, in order, at most `limit` of them (all without a limit). */
  readEvents(sessionId: string, after: number, limit?: number): MaybePromise<RunEvent[]>;
  /** The sessions the store holds, optionally only those in the given statuses; oldest update first. */
  list(query?: SessionQuery): MaybePromise<SessionSummary[]>;
  /** Approval records across sessions (e.g. every pending one). */
  approvals(query?: ApprovalQuery): MaybePromise<ApprovalRecord[]>;
  /** Removes a session, its events, journal and approvals. */
  delete(sessionId: string): MaybePromise<void>;
  /** Releases the store (closes the database). Further calls throw. */
  close(): MaybePromise<void>;
  /**
   * Takes the session's lease for this process before it resumes the session (`recover()`, `restore()`): throws
   * SessionLeasedError when another live process holds it (unless `takeOver`). A store without leases lets every
   * process resume every session.
   */
  acquireLease?: ((sessionId: string, options?: LeaseOptions) => MaybePromise<void>) | undefined;
  /** Gives up this process's lease of the session (another process's lease is left as it is). */
  releaseLease?: ((sessionId: string) => MaybePromise<void>) | undefined;
}

/** The options of taking a session's lease. */
export interface LeaseOptions {
  /**
   * Take the lease even from a live process: that process's next commit of the session is refused with
   * SessionFencedError and its run ends.
   */
  takeOver?: boolean | undefined;
}

export type MaybePromise<T> = T | Promise<T>;

/**
 * Where a session stands:
 * - `running`: a turn is in progress (or was, when the process died): `recover()` resumes it;
 * - `awaiting`: a turn is paused until people decide its pending approvals;
 * - `suspended`: a turn was in progress when the system shut down with `mode: 'suspend'`: `recover()` resumes it;
 * - `idle`: the last turn finished; new input starts the next turn;
 * - `closed`: the session was stopped (its record stays; new input can still continue it);
 * - `failed`: a failure was escalated and ended the session.
 */
export type StoredSessionStatus = 'running' | 'awaiting' | 'suspended' | 'idle' | 'closed' | 'failed';

export const storedSessionStatuses: readonly StoredSessionStatus[] = [
  'running',
  'awaiting',
  'suspended',
  'idle',
  'closed',
  'failed',
];

/** Statuses of sessions whose turn was interrupted and can be resumed. */
export const resumableStatuses: readonly StoredSessionStatus[] = ['running', 'awaiting', 'suspended'];

/** The session row: one per session, replaced whole by each commit that carries it. */
export interface StoredSession {
  id: string;
  status: StoredSessionStatus;
  /** The agent the session was started with. */
  entry: string;
  /** The agent holding the conversation. */
  agent: string;
  /** Turns finished so far. */
  turns: number;
  /** The whole conversation up to the end of the last finished turn. */
  transcript: Message[];
  /** The turn in progress (status running, awaiting or suspended), or null. */
  turn: TurnCheckpoint | null;
  /** Messages sent while a turn was running, not started yet: a crash loses none of them. */
  queued: RunInput[];
  /** The session's options that shape how it runs (restored with it). */
  options: StoredSessionOptions;
  /** Clock time of the last commit, in milliseconds since the epoch. */
  updatedAt: number;
}

/** The options a restored session runs with again. */
export interface StoredSessionOptions {
  maxHandoffDepth: number;
  maxHandoffRevisits: number;
  supervision: SupervisionPolicy;
  tenant?: string;
  parentScope?: string;
  budget?: {
    tokens?: number | undefined;
    usd?: number | undefined;
    windowMs?: number | undefined;
    warnAt?: number | undefined;
  };
}

/**
 * The turn in progress: the session around the agent and the agent's own checkpoint, taken at the last point where
 * the agent was about to start an effect (a model call, a batch of tool calls) or waited for people.
 */
export interface TurnCheckpoint {
  /** The turn's number in the session, from 1. */
  number: number;
  /** The input that started the turn (re-shown by events and results after a restore). */
  input: RunInput;
  /** Seq of the turn's run_start event, when it is in the log: a restored turn's events() start there. */
  firstSeq?: number;
  session: StoredSessionRestore;
  /** The agent holding the conversation, and its state; null before its first checkpoint. */
  agent: { name: string; segment: number; checkpoint: StoredAgentCheckpoint } | null;
}

/** One atomic commit. Every field is optional; absent means unchanged. */
export interface CommitBatch {
  /** The session row, replaced whole (created when absent). */
  session?: StoredSession;
  /**
   * Checkpoints of nested runs (agents used as tools), by route (`support>call_7/researcher`); null deletes one.
   * A nested run that restarts after a crash resumes from its route's checkpoint.
   */
  runs?: readonly (readonly [route: string, checkpoint: StoredAgentCheckpoint | null])[];
  /**
   * Results of effects that finished since the turn's last checkpoint, by journal key (a finished tool call,
   * a model response): after a crash they are replayed from here instead of being run again.
   */
  journal?: readonly (readonly [key: string, value: JsonValue])[];
  /** Drops the session's nested-run checkpoints and journal (the turn they belong to has ended). */
  clearTurn?: boolean;
  /** Events appended to the log. Their `seq` continue the log's without gaps. */
  events?: readonly RunEvent[];
  /** Approval records, created or replaced by call id. */
  approvals?: readonly ApprovalRecord[];
  /**
   * The commit need not wait for the disk: it survives a crash of the process but a power loss may drop it until the
   * next commit that is not relaxed. The runtime relaxes commits that only carry events (streamed text, mostly):
   * what decides effects (checkpoints, results, decisions) is never relaxed.
   */
  relaxed?: boolean;
}

/** What `load` returns: the session row and what belongs to its turn in progress. */
export interface StoredSessionState {
  session: StoredSession;
  runs: Map<string, StoredAgentCheckpoint>;
  journal: Map<string, JsonValue>;
  approvals: ApprovalRecord[];
  /** Seq of the last event in the log, -1 when it is empty. */
  lastSeq: number;
}

export interface SessionQuery {
  status?: readonly StoredSessionStatus[];
}

export interface SessionSummary {
  sessionId: string;
  status: StoredSessionStatus;
  entry: string;
  agent: string;
  turns: number;
  updatedAt: number;
  /** Approvals still waiting for a decision. */
  pendingApprovals: number;
}

export interface ApprovalQuery {
  sessionId?: string;
  status?: readonly ApprovalRecord['status'][];
}

/**
 * The version of the layout this code writes. A store of an earlier layout is migrated when it is opened; one of a
 * later layout is refused with StoreLayoutError.
 */
export const storeLayoutVersion = 8;
