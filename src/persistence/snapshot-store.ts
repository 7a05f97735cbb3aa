import type { JsonValue } from '../core/json.ts';

/**
 * Where a system keeps what must survive an agent actor's failure or a process restart: each session's latest
 * checkpoint (the agent's history and counters after its last completed step) and its record at the end of each
 * turn. Keys are `<sessionId>/checkpoint` and `<sessionId>/session`. Values are JSON. A store may be synchronous
 * (the in-memory default) or asynchronous (files, a database).
 */
export interface SnapshotStore {
  get(key: string): JsonValue | undefined | Promise<JsonValue | undefined>;
  set(key: string, value: JsonValue): void | Promise<void>;
  delete(key: string): void | Promise<void>;
  /** Keys starting with `prefix` (all keys without one). */
  keys(prefix?: string): string[] | Promise<string[]>;
}

export const checkpointKey = (sessionId: string): string => `${sessionId}/checkpoint`;
export const sessionKey = (sessionId: string): string => `${sessionId}/session`;
