import type { JsonValue } from './json.ts';

/**
 * What a person is asked: to approve (or reject) a tool call before it runs, or to answer a question an agent
 * delegated to them (the `askHuman` tool).
 */
export type HumanRequestKind = 'approval' | 'question';

/** A tool call waiting for a person. The run stays paused (and persisted) until every such call is decided. */
export interface ApprovalRequest {
  sessionId: string;
  /** The model's id for the call (unique within the session's history). Pass it to approve / reject / answer. */
  callId: string;
  /** The agent that asked for the call. */
  agent: string;
  /**
   * Where the agent runs in the session: its name for the agent holding the conversation, or the chain of calls
   * that started a nested agent (`support>call_7/researcher`).
   */
  route: string;
  tool: string;
  /** The call's arguments, with arguments declared secret replaced by "[redacted]". */
  args: JsonValue;
  kind: HumanRequestKind;
  /** For a question: what the agent asks. */
  question?: string;
  /** Clock time of the request, in milliseconds since the epoch. */
  requestedAt: number;
}

/** A person's decision on an ApprovalRequest. */
export type ApprovalDecision =
  | { type: 'approve' }
  | { type: 'reject'; reason: string }
  | { type: 'answer'; text: string };

/**
 * Where a request stands. `withdrawn`: nobody waits for it any more (the turn that asked ended other than by a
 * suspension, or the tool call that asked ended); its decision is the rejection the agent got, saying why, and a
 * decision given afterwards is refused.
 */
export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'answered' | 'withdrawn';

/** A request with its decision, as a store keeps it. */
export interface ApprovalRecord extends ApprovalRequest {
  status: ApprovalStatus;
  decision?: ApprovalDecision;
  decidedAt?: number;
}

/** Why a request is withdrawn when the turn that asked ended without a decision on it. */
export const turnEndedReason = 'the turn ended before a decision';

/** A request nobody waits for any more: withdrawn, with the rejection its agent got. */
export function withdrawnRecord(record: ApprovalRecord, reason: string, at: number): ApprovalRecord {
  return { ...record, status: 'withdrawn', decision: { type: 'reject', reason }, decidedAt: at };
}

/** Why a request takes no decision: it was decided, or withdrawn. */
export function whyNotWaiting(record: ApprovalRecord | undefined): string {
  if (record === undefined) return 'no call waits under this id';
  if (record.status !== 'withdrawn') return `it was already ${record.status}`;
  const reason = record.decision?.type === 'reject' ? record.decision.reason : 'it was withdrawn';
  return `it is no longer waiting: ${reason}`;
}

export function statusOfDecision(decision: ApprovalDecision): ApprovalStatus {
  return decision.type === 'approve' ? 'approved' : decision.type === 'reject' ? 'rejected' : 'answered';
}

/**
 * Decides on a call that waits for people, for `run()` and `stream()` (which have no session to approve through):
 * return the decision, or a promise of it. If it throws, the call is rejected with the error as the reason.
 */
export type ApprovalHandler = (request: ApprovalRequest) => ApprovalDecision | Promise<ApprovalDecision>;
