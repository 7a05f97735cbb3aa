/** The closed set of ways a run can end. */
export type StopReason =
  | 'completed'
  | 'max_steps'
  | 'duplicate_tool_call'
  | 'tool_call_limit'
  | 'decode_failed'
  | 'tool_failure_degraded'
  | 'budget_exhausted'
  | 'guardrail_blocked'
  | 'handoff_limit'
  | 'timed_out'
  | 'aborted'
  | 'error';

export const stopReasons: readonly StopReason[] = [
  'completed',
  'max_steps',
  'duplicate_tool_call',
  'tool_call_limit',
  'decode_failed',
  'tool_failure_degraded',
  'budget_exhausted',
  'guardrail_blocked',
  'handoff_limit',
  'timed_out',
  'aborted',
  'error',
];

/** completed: the agent answered. stopped: a limit or policy ended it. failed: something broke. */
export type RunStatus = 'completed' | 'stopped' | 'failed';

export function statusOf(reason: StopReason): RunStatus {
  switch (reason) {
    case 'completed':
    case 'tool_failure_degraded':
      return 'completed';
    case 'error':
      return 'failed';
    default:
      return 'stopped';
  }
}
