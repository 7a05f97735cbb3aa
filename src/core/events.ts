import type { ErrorInfo } from './errors.ts';
import type { JsonValue } from './json.ts';
import type { ModelStopReason } from './model.ts';
import type { RunStatus, StopReason } from './stop-reason.ts';
import type { Usage } from './usage.ts';

/** The loop phase and the sub-state within it, as the statechart names them. */
export type Phase = 'toolUse' | 'finalOutput' | 'completed' | 'stopped' | 'failed' | 'handingOff';

/** Payloads of every event type. One union serves the stream, SSE, traces and tests (ARCHITECTURE "Events"). */
export interface RunEventData {
  run_start: { input: JsonValue; historyLength: number; model: string; provider: string };
  run_end: {
    status: RunStatus;
    stopReason: StopReason;
    iterationsUsed: number;
    toolCalls: number;
    usage: Usage;
  };
  phase: { phase: Phase; state: string; step: number; retryCount: number };
  /** A streamed piece of assistant text. */
  delta: { content: string };
  /** A streamed piece of reasoning text. */
  reasoning_delta: { content: string };
  /** A streamed piece of a tool call's arguments. */
  tool_call_delta: { index: number; id?: string; name?: string; argsDelta: string };
  /** One whole model response, as the loop received it. */
  model_response: {
    step: number;
    text: string;
    toolCalls: number;
    stopReason: ModelStopReason | null;
    usage: Usage;
  };
  /** A tool call about to be answered. Calls of one turn come out as call1, result1, call2, result2 (L7). */
  tool_call: { id: string; function: { name: string; arguments: string }; args: JsonValue };
  tool_response: {
    tool_call_id: string;
    name: string;
    content_preview: string;
    content: string;
    isError: boolean;
    attempts: number;
    durationMs: number;
  };
  /** A failed tool attempt that will be retried. */
  tool_retry: { tool_call_id: string; name: string; attempt: number; error: string };
  /** Usage of one model call, plus the run's running total. */
  usage: {
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    usage: Usage;
    cumulative: Usage;
  };
  /** The final output did not decode; the model is asked again (L6). */
  decode_retry: { retryCount: number; error: string };
  error: { message: string; type: string; code: string };
  /** A budget this run draws on (its own, a caller's or its tenant's) crossed its warning threshold (R1). */
  budget_warning: {
    scope: string;
    dimension: 'tokens' | 'usd';
    spent: number;
    limit: number;
    threshold: number;
  };
  /** A model call waits for a quota (requests or tokens per minute, calls in flight, a 429's retry-after) (R3). */
  quota_wait: { quota: string; position: number };
  /** One settled model call: actual tokens and USD (null without a price), and what the reservation gave back. */
  spend: {
    model: string;
    tokens: number;
    usd: number | null;
    usage: Usage;
    returnedTokens: number;
    returnedUsd: number | null;
  };
  /**
   * A handoff the model asked for (REQUIREMENTS M2): accepted (the conversation moves to `to`), refused (a revisit
   * beyond maxHandoffRevisits; the model gets an error result) or over the limit (the turn ends with handoff_limit).
   */
  handoff: {
    from: string;
    to: string;
    outcome: 'accepted' | 'refused' | 'limit';
    depth: number;
    path: string[];
    reason?: string;
  };
  /** A supervision decision after an agent actor failed (REQUIREMENTS M4). */
  supervisor: {
    decision: 'restart' | 'stop' | 'escalate';
    agent: string;
    error: ErrorInfo;
    restarts: number;
    /** Back-off before the restart, in milliseconds. */
    delayMs?: number;
  };
}

export type RunEventType = keyof RunEventData;

export interface RunEventOf<T extends RunEventType> {
  /** Milliseconds since the epoch, from the run's clock. */
  time: number;
  /** Name of the agent that produced the event. */
  agent: string;
  sessionId: string;
  /** Position in the session, from 0, without gaps. */
  seq: number;
  type: T;
  data: RunEventData[T];
}

export type RunEvent = { [T in RunEventType]: RunEventOf<T> }[RunEventType];

export type { ErrorInfo };

/**
 * Reference 003's SSE chunk: `event: <type>` and one JSON `data:` line of {time (ISO 8601), agent, type, data,
 * seq}, plus the session id.
 */
export function toSSE(event: RunEvent): string {
  const chunk = {
    time: new Date(event.time).toISOString(),
    agent: event.agent,
    sessionId: event.sessionId,
    type: event.type,
    data: event.data,
    seq: event.seq,
  };
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(chunk)}\n\n`;
}
