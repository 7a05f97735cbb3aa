import type { ApprovalRecord } from '../core/approvals.ts';
import type { ErrorInfo } from '../core/errors.ts';
import type { JsonValue } from '../core/json.ts';
import type { Message, RunInput } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';
import type { RunStatus, StopReason } from '../core/stop-reason.ts';
import type { Usage } from '../core/usage.ts';

/**
 * What a session keeps in its virtual object's K/V state. The exclusive handlers write it; the shared handlers
 * read it, also while a turn runs or waits for people (Restate shows them what the running turn wrote so far).
 */
export const stateKeys = {
  /** StoredConversation: written when a turn ends. */
  conversation: 'conversation',
  /** StoredTurn: the turn in progress, or the last one. */
  turn: 'turn',
  /**
   * StoredApproval[]: every call of the session's turns that waited or waits for people, in the order asked. A
   * request still pending when its turn ends is withdrawn.
   */
  approvals: 'approvals',
  /** RunEvent[]: the current (or last) turn's events, written when it waits for people and when it ends. */
  events: 'events',
  /** The decision on one waiting call, under the key `<session>!<awakeableId>` (see the `decide` handler). */
  decision: 'decision',
} as const;

export interface StoredConversation {
  /** The agent holding the conversation: the next turn starts with it. */
  agent: string;
  /** Turns finished so far. */
  turns: number;
  /** The whole conversation up to the end of the last finished turn. */
  transcript: Message[];
  /** The seq the next event gets (events are numbered across the session's turns). */
  nextSeq: number;
}

/** Where a turn stands: running (model and tool calls), waiting for people, or done. */
export type TurnStatus = 'running' | 'waiting' | 'done';

export interface StoredTurn {
  /** The turn's number in the session, from 1. */
  number: number;
  status: TurnStatus;
  input: RunInput;
  /** Journaled time the turn started, in milliseconds since the epoch. */
  startedAt: number;
  /** How the turn ended, once it is done. */
  outcome?: TurnSummary;
}

/** The RunResult of a turn without the conversation (that is in `history`). */
export interface TurnSummary {
  agent: string;
  status: RunStatus;
  stopReason: StopReason;
  text: string;
  output?: JsonValue;
  error?: ErrorInfo;
  usage: Usage;
  modelCalls: number;
  toolCallCount: number;
  path?: string[];
}

/** A call that waited for people, with the awakeable its decision resolves. */
export interface StoredApproval extends ApprovalRecord {
  /** Resolving it (POST /restate/awakeables/<id>/resolve with an ApprovalDecision) decides the call. */
  awakeableId: string;
  /** The number of the turn that asked. */
  turn: number;
}

/** What the `status` handler answers. */
export interface SessionStatusView {
  /** The object key: the session id. */
  sessionId: string;
  /** The agent holding the conversation (the next turn starts with it). */
  agent: string;
  turns: number;
  /** The turn in progress or the last one; null before the first turn. */
  turn: StoredTurn | null;
  /** Calls of the current turn that wait for a decision. */
  pendingApprovals: number;
}

export function summaryOf(result: RunResult<unknown>): TurnSummary {
  const summary: TurnSummary = {
    agent: result.agent,
    status: result.status,
    stopReason: result.stopReason,
    text: result.text,
    usage: result.usage,
    modelCalls: result.modelCalls,
    toolCallCount: result.toolCallCount,
  };
  if (result.output !== undefined) summary.output = result.output as JsonValue;
  if (result.error) summary.error = result.error;
  if (result.path) summary.path = result.path;
  return summary;
}
