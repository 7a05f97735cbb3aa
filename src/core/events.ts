import type { ApprovalDecision, ApprovalRequest } from './approvals.ts';
import type { ErrorInfo } from './errors.ts';
import type { JsonValue } from './json.ts';
import type { ModelStopReason } from './model.ts';
import type { RunStatus, StopReason } from './stop-reason.ts';
import type { Usage } from './usage.ts';

/** The loop phase and the sub-state within it, as the statechart names them. */
export type Phase = 'toolUse' | 'finalOutput' | 'completed' | 'stopped' | 'failed' | 'handingOff';

/** Payloads of every event type. One union serves the stream, SSE, traces and tests. */
export interface RunEventData {
  run_start: { input: JsonValue; historyLength: number; model: string; provider: string };
  run_end: {
    status: RunStatus;
    stopReason: StopReason;
    modelCalls: number;
    toolCallCount: number;
    usage: Usage;
  };
  phase: { phase: Phase; state: string; step: number; retryCount: number };
  /** A streamed piece of assistant text. */
  delta: { content: string };
  /** A streamed piece of reasoning text. */
  reasoning_delta: { content: string };
  /** A streamed piece of a tool call's arguments. */
  tool_call_delta: { index: number; callId?: string; name?: string; argsDelta: string };
  /** One whole model response, as the loop received it. */
  model_response: {
    step: number;
    text: string;
    toolCallCount: number;
    stopReason: ModelStopReason | null;
    usage: Usage;
  };
  /**
   * A tool call starting (its arguments with secrets redacted). Its `tool_response` follows when it finishes, so
   * calls of one batch may interleave; `steps()` puts them back in call order.
   */
  tool_call: { callId: string; name: string; args: JsonValue };
  /** A tool call's result; `callId` is its `tool_call`'s. */
  tool_response: {
    callId: string;
    name: string;
    /** The content's first 200 characters. */
    contentPreview: string;
    content: string;
    isError: boolean;
    attempts: number;
    durationMs: number;
  };
  /** A tool call waits for a person: an approval, or an answer to a question (`askHuman`). The run is paused. */
  approval_requested: ApprovalRequest;
  /** A person decided on a waiting call. */
  approval_decided: { callId: string; tool: string; decision: ApprovalDecision };
  /**
   * A session's turn picked up again in this process: after a crash or a suspend (`recover()`), from the last
   * committed checkpoint. Calls that had finished are not run again; text streamed by a call that was in flight
   * before the interruption is streamed again by its re-run.
   */
  resumed: { turn: number; from: 'running' | 'awaiting' | 'suspended'; agent: string };
  /** A failed tool attempt that will be retried. */
  tool_retry: { callId: string; name: string; attempt: number; error: string };
  /** Usage of one model call, plus the run's running total. */
  usage: { usage: Usage; cumulative: Usage };
  /** The final output did not decode against the output schema; the model is asked again. */
  decode_retry: { retryCount: number; error: string };
  error: { message: string; type: string; code: string };
  /** A budget this run draws on (its own, a caller's or its tenant's) crossed its warning threshold. */
  budget_warning: {
    scope: string;
    dimension: 'tokens' | 'usd';
    spent: number;
    limit: number;
    threshold: number;
  };
  /**
   * A model call waits because calls in flight hold the rest of a budget: it is granted once they settle (or denied
   * if their spend used the budget up).
   */
  budget_wait: { scope: string; dimension: 'tokens' | 'usd' };
  /** A model call waits for a quota (requests or tokens per minute, calls in flight, a 429's retry-after). */
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
   * A handoff the model asked for: accepted (the conversation moves to `to`), refused (a revisit beyond
   * maxHandoffRevisits; the model gets an error result) or over the limit (the turn ends with handoff_limit).
   */
  handoff: {
    from: string;
    to: string;
    outcome: 'accepted' | 'refused' | 'limit';
    depth: number;
    path: string[];
    reason?: string;
  };
  /** A supervision decision after an agent actor failed: restart it (with back-off), stop it, or escalate. */
  supervisor: {
    decision: 'restart' | 'stop' | 'escalate';
    agent: string;
    error: ErrorInfo;
    restarts: number;
    /** Back-off before the restart, in milliseconds. */
    delayMs?: number;
  };
  /**
   * A guardrail's decision on the run's input, its final answer (whole, or streamed text as it arrives), or one tool
   * call's arguments or result. `block` ends the run with guardrail_blocked; `warn` lets it go on.
   */
  guardrail: {
    guardrail: string;
    stage: GuardrailStage;
    decision: GuardrailDecisionKind;
    message?: string;
    /** The tool call checked, for the tool_input and tool_output stages. */
    callId?: string;
    tool?: string;
  };
  /**
   * A tool-permission policy decided on one call: it runs, it is denied (the model gets an error result saying so)
   * or a person is asked (the run waits as for an approval).
   */
  permission: { tool: string; callId: string; decision: 'allow' | 'deny' | 'ask'; reason?: string };
  /**
   * Personal data or secrets were masked before text reached `target`: how many of each kind, never the values.
   */
  redaction: { target: RedactionTarget; counts: Record<string, number> };
  /** A circuit breaker of a model or a tool changed state: open calls fail fast, half-open lets one probe through. */
  breaker: {
    breaker: string;
    scope: 'model' | 'tool';
    state: 'open' | 'half_open' | 'closed';
    reason?: string;
  };
  /**
   * An MCP server asked this agent's model for a completion (`sampling/createMessage`) while a tool call of it ran:
   * answered (with the usage, on this run's budgets), or refused (`reason` says why: no approval, a spent budget, a
   * failed model call). Never the messages or the answer.
   */
  mcp_sampling: {
    server: string;
    /** The tool call during which the server asked. */
    callId: string;
    model: string;
    outcome: 'answered' | 'refused';
    usage: Usage | null;
    reason?: string;
  };
  /**
   * An MCP server declared `required: false` could not be reached: the model call goes on without its tools, and
   * the server is tried again at a model call after `retryInMs`.
   */
  mcp_server_unavailable: { server: string; error: ErrorInfo; retryInMs: number };
}

/** Where a guardrail looks: the run's input, its final answer, a tool call's arguments, a tool's result. */
export type GuardrailStage = 'input' | 'output' | 'tool_input' | 'tool_output';

/** What a guardrail decided: go on, go on with a warning event, or end the run with guardrail_blocked. */
export type GuardrailDecisionKind = 'allow' | 'warn' | 'block';

/** Where masked text was going. */
export type RedactionTarget = 'events' | 'model' | 'store' | 'inspector' | 'trace' | 'audit';

export type RunEventType = keyof RunEventData;

export interface RunEventOf<T extends RunEventType> {
  /** Milliseconds since the epoch, from the run's clock. */
  time: number;
  /** Name of the agent that produced the event. */
  agent: string;
  sessionId: string;
  /**
   * Where the agent runs: its name for an agent holding the conversation (the entry agent or a handoff target),
   * or the chain of calls that started a nested agent (`support>call_7/researcher`).
   */
  route: string;
  /** 0 for an agent holding the conversation; 1 for an agent used as a tool by it, 2 for one nested in that... */
  depth: number;
  /** Position in the session, from 0, without gaps, continued across restores. */
  seq: number;
  type: T;
  data: RunEventData[T];
}

export type RunEvent = { [T in RunEventType]: RunEventOf<T> }[RunEventType];

export type { ErrorInfo };

/**
 * The event as a Server-Sent Events chunk: `event: <type>` and one JSON `data:` line of {time (ISO 8601),
 * agent, type, data, seq}, plus the session id.
 */
export function toSSE(event: RunEvent): string {
  const chunk = {
    time: new Date(event.time).toISOString(),
    agent: event.agent,
    sessionId: event.sessionId,
    route: event.route,
    depth: event.depth,
    type: event.type,
    data: event.data,
    seq: event.seq,
  };
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(chunk)}\n\n`;
}
