import type { ApprovalRecord } from '../core/approvals.ts';
import type { RunEvent } from '../core/events.ts';
import type {
  ApprovalQuery,
  CommitBatch,
  LeaseOptions,
  SessionQuery,
  SessionStore,
  SessionSummary,
  StoredSessionState,
} from './store.ts';

/**
 * A SessionStore that answers every call synchronously, with plain values (never a promise): both stores that ship
 * are. A method that returns has done its work (a `commit` that returns is committed); failures are thrown.
 */
export interface SyncSessionStore extends SessionStore {
  load(sessionId: string): StoredSessionState | undefined;
  commit(sessionId: string, batch: CommitBatch): void;
  readEvents(sessionId: string, after: number, limit?: number): RunEvent[];
  list(query?: SessionQuery): SessionSummary[];
  approvals(query?: ApprovalQuery): ApprovalRecord[];
  delete(sessionId: string): void;
  /** Releases the store; calling it again does nothing. Every other method then throws StoreClosedError. */
  close(): void;
  acquireLease?: ((sessionId: string, options?: LeaseOptions) => void) | undefined;
  releaseLease?: ((sessionId: string) => void) | undefined;
}
