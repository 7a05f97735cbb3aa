import { ConfigError } from '../core/errors.ts';

/**
 * The session ids of the runs and sessions running in this process. Two runs under one id would share its stored
 * records, its idempotency keys and its budget scope, so a second start under a running id is refused.
 */
const running = new Set<string>();

/** Claims `sessionId` for a run or session about to start; throws a ConfigError when it is running already. */
export function claimSessionId(sessionId: string, who: string): () => void {
  if (running.has(sessionId))
    throw new ConfigError(`${who}: a run or session with id "${sessionId}" is already running.`);
  running.add(sessionId);
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    running.delete(sessionId);
  };
}

/** Whether a run or session with this id is running in this process. */
export function sessionIdRunning(sessionId: string): boolean {
  return running.has(sessionId);
}
