import { TroupeError } from '../core/errors.ts';
import type { SessionStatus } from './session.ts';

/** A session that can no longer take messages. */
export class SessionClosedError extends TroupeError {
  constructor(sessionId: string, status: SessionStatus) {
    super('session_closed', `Session ${sessionId} is ${status}; start a new session to continue.`);
  }
}

/**
 * The system is shutting down (or has shut down): it starts, restores and recovers no session. Create a new system
 * to go on.
 */
export class SystemClosedError extends TroupeError {
  constructor(what: string) {
    super('system_closed', `${what}: the system is shutting down; it starts no more sessions.`);
  }
}
