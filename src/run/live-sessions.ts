import { ConfigError } from '../core/errors.ts';

/**
 * The session ids of the runs and sessions running in this process. Two runs under one id would share its stored
 * records, its idempotency keys and its budget scope, so a second start under a running id is refused.
 */
const running = new Set<string>();

/** Claims `sessionId` for a run or session about to start; throws a ConfigError when it is running already. */
export function claimSessionId(sessionId: string, who: string): void {
  // One lookup in the set of running ids (thousands when many runs are in flight), not a test and then an add.
  const before = running.size;
  running.add(sessionId);
  if (running.size === before)
    throw new ConfigError(`${who}: a run or session with id "${sessionId}" is already running.`);
}

/** Gives a claimed id back; its owner calls it once, when it has ended. */
export function releaseSessionId(sessionId: string): void {
  running.delete(sessionId);
}

/** Whether a run or session with this id is running in this process. */
export function sessionIdRunning(sessionId: string): boolean {
  return running.has(sessionId);
}
