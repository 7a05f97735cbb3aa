import type { ApprovalDecision, HumanRequestKind } from '../../core/approvals.ts';
import type { Message, ToolCall } from '../../core/messages.ts';
import type { StopReason } from '../../core/stop-reason.ts';
import type { NestedSpend, Usage } from '../../core/usage.ts';
import type { AgentCheckpoint } from '../../machines/agent.ts';

/**
 * An agent's checkpoint as a store keeps it (the turn's agent in the session row, an agent used as a tool in the
 * nested-run table). It is the stored format, not the machine's context: the agent machine may rename or regroup its
 * context, and only the two mappings below change with it; what is stored, and every store already written, stays
 * readable. A field added later is optional here, and a checkpoint stored before it lacks it.
 */
export interface StoredAgentCheckpoint {
  /** The agent's conversation, ending with the tool calls still open. */
  history: Message[];
  step: number;
  modelCalls: number;
  /** Decode retries of the current answer (absent in checkpoints stored before it was kept: 0). */
  retryCount?: number;
  toolCallsRun: number;
  toolCallCounts: Record<string, number>;
  callSignatures: Record<string, number>;
  degradedTools: string[];
  /**
   * The agent's own spend; `nested` is what agents it used as tools and MCP sampling spent (absent in checkpoints
   * stored before it was kept, and when there was none).
   */
  usage: Usage & { nested?: NestedSpend };
  /** The tool calls asked for and not answered yet. */
  openCalls: ToolCall[];
  decision: StoredDecision | null;
  /** A last answer was asked for: false, true (the step limit) or the limit that asked for it. */
  forcedFinalAnswer: 'max_steps' | 'duplicate_tool_call' | 'tool_call_limit' | boolean;
  /** People's decisions on the batch in progress (null or absent when none is asked for). */
  approvals?: StoredApprovalState | null;
  /** The phase the checkpoint was taken in. */
  phase: 'toolUse' | 'finalOutput';
}

/** What the agent decided after its last model response. */
export type StoredDecision =
  | { kind: 'continue_with_tools'; calls: ToolCall[] }
  | { kind: 'continue_thinking'; continuesTurn?: boolean }
  | { kind: 'terminate_with_output'; text: string; truncated: boolean }
  | { kind: 'terminate'; reason: StopReason; message: string };

export interface StoredApprovalState {
  pending: { callId: string; kind: HumanRequestKind }[];
  decided: { callId: string; decision: ApprovalDecision }[];
}

/** The machine's checkpoint as stored: every field named, so a context change cannot reach the store unnoticed. */
export function toStoredCheckpoint(checkpoint: AgentCheckpoint): StoredAgentCheckpoint {
  return {
    history: checkpoint.history,
    step: checkpoint.step,
    modelCalls: checkpoint.modelCalls,
    retryCount: checkpoint.retryCount,
    toolCallsRun: checkpoint.toolCallsRun,
    toolCallCounts: checkpoint.toolCallCounts,
    callSignatures: checkpoint.callSignatures,
    degradedTools: checkpoint.degradedTools,
    usage: checkpoint.usage,
    openCalls: checkpoint.openCalls,
    decision: checkpoint.decision,
    forcedFinalAnswer: checkpoint.forcedFinalAnswer,
    approvals: checkpoint.approvals,
    phase: checkpoint.phase,
  };
}

/** A stored checkpoint as the agent machine resumes from it; what older records lack gets its default. */
export function fromStoredCheckpoint(stored: StoredAgentCheckpoint): AgentCheckpoint {
  return {
    history: stored.history,
    step: stored.step,
    modelCalls: stored.modelCalls,
    retryCount: stored.retryCount ?? 0,
    toolCallsRun: stored.toolCallsRun,
    toolCallCounts: stored.toolCallCounts,
    callSignatures: stored.callSignatures,
    degradedTools: stored.degradedTools,
    usage: stored.usage,
    openCalls: stored.openCalls,
    decision: stored.decision,
    forcedFinalAnswer: stored.forcedFinalAnswer,
    approvals: stored.approvals ?? null,
    phase: stored.phase,
  };
}

/**
 * True when two types have the same keys. A field added to the machine's checkpoint does not compile until the
 * stored format has it too (optional, so that records stored before it still load) and the mappings above copy it.
 */
export type SameKeys<A, B> = [Exclude<keyof A, keyof B>, Exclude<keyof B, keyof A>] extends [never, never]
  ? true
  : false;
const checkpointKeysMatch: SameKeys<AgentCheckpoint, StoredAgentCheckpoint> = true;
void checkpointKeysMatch;
