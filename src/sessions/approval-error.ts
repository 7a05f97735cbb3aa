import { TroupeError } from '../core/errors.ts';

/** A decision for a call that is not waiting for one (unknown id, already decided, or the wrong kind of decision). */
export class ApprovalError extends TroupeError {
  readonly sessionId: string;
  readonly callId: string;
  constructor(sessionId: string, callId: string, why: string) {
    super('approval_invalid', `Session "${sessionId}": cannot decide on call "${callId}": ${why}.`);
    this.sessionId = sessionId;
    this.callId = callId;
  }
}
