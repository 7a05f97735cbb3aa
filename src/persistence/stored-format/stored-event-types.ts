import type { RunEventType } from '../../core/events.ts';

/**
 * The closed set of event types a session's log can hold. A stored event of another type is damage (a changed byte
 * in its type column), refused on read. Written as a record over RunEventType so that a new event type does not
 * compile until it is listed here.
 */
const eventTypes: Record<RunEventType, true> = {
  run_start: true,
  run_end: true,
  phase: true,
  delta: true,
  reasoning_delta: true,
  tool_call_delta: true,
  model_response: true,
  tool_call: true,
  tool_response: true,
  approval_requested: true,
  approval_decided: true,
  resumed: true,
  tool_retry: true,
  usage: true,
  decode_retry: true,
  error: true,
  budget_warning: true,
  budget_wait: true,
  quota_wait: true,
  spend: true,
  handoff: true,
  supervisor: true,
  guardrail: true,
  permission: true,
  redaction: true,
  breaker: true,
  mcp_sampling: true,
  mcp_server_unavailable: true,
};

export const storedEventTypes: ReadonlySet<string> = new Set(Object.keys(eventTypes));
