import type { RunResult } from '../core/result.ts';

/** A sub-run that did not complete; the caller's model gets its message as the tool's error result. */
export class SubAgentError extends Error {
  readonly result: RunResult<unknown>;
  constructor(agent: string, result: RunResult<unknown>) {
    super(
      `agent "${agent}" ${result.status} (${result.stopReason})${result.error ? `: ${result.error.message}` : ''}`,
    );
    this.name = 'SubAgentError';
    this.result = result;
  }
}
