import type { JsonValue } from '../core/json.ts';
import type { Message } from '../core/messages.ts';
import type { AgentCheckpoint, AgentContext } from '../machines/agent.ts';
import type { SessionCommand, SessionContext, SessionRestore } from '../machines/session.ts';
import { checkpointKey, type SnapshotStore, sessionKey } from './snapshot-store.ts';

/**
 * What a session keeps in its store: after each completed step a checkpoint of the active agent (with the session
 * around it, so another process can recover the turn), and at the end of each turn a record of the conversation.
 */

export interface StoredCheckpoint {
  agent: string;
  segment: number;
  checkpoint: AgentCheckpoint;
  /** The session around the agent, to recover the turn in another process (AgentSystem.restore). */
  session: SessionRestore;
}

export function restoreOf(context: SessionContext): SessionRestore {
  return {
    current: context.current,
    transcript: context.transcript,
    turnStart: context.turnStart,
    agentHistory: context.agentHistory,
    agentBase: context.agentBase,
    path: context.path,
    refusals: context.refusals,
    spent: context.spent,
    segment: context.segment,
  };
}

/** What `restore` found in the store for a session: an interrupted turn, or the record of a finished one. */
export type StoredSession =
  | { kind: 'interrupted'; restore: SessionRestore }
  | { kind: 'finished'; agent: string; transcript: Message[] };

/** Reads a session's checkpoint (a turn in progress when the process stopped) or its last record. */
export async function loadStoredSession(
  store: SnapshotStore,
  sessionId: string,
): Promise<StoredSession | undefined> {
  const checkpoint = (await store.get(checkpointKey(sessionId))) as unknown as StoredCheckpoint | undefined;
  if (checkpoint?.session) return { kind: 'interrupted', restore: checkpoint.session };
  const record = (await store.get(sessionKey(sessionId))) as unknown as
    | { agent: string; transcript: Message[] }
    | undefined;
  if (record?.transcript) return { kind: 'finished', agent: record.agent, transcript: record.transcript };
  return undefined;
}

export function checkpointFor(
  stored: JsonValue | undefined,
  command: SessionCommand,
): AgentCheckpoint | null {
  if (typeof stored !== 'object' || stored === null || Array.isArray(stored)) return null;
  const record = stored as unknown as StoredCheckpoint;
  return record.agent === command.agent && record.segment === command.segment ? record.checkpoint : null;
}

/** The agent's context after its last completed step: what a restart resumes from. */
export function checkpointOf(context: AgentContext): AgentCheckpoint {
  return {
    history: context.history,
    step: context.step,
    modelCalls: context.modelCalls,
    toolCallsRun: context.toolCallsRun,
    toolCallCounts: context.toolCallCounts,
    callSignatures: context.callSignatures,
    degradedTools: context.degradedTools,
    usage: context.usage,
    openCalls: context.openCalls,
    decision: context.decision,
    retryCount: context.retryCount,
    forcedFinalAnswer: context.forcedFinalAnswer,
    approvals: context.approvals,
    phase: 'toolUse',
  };
}

/** What the store keeps about a session at the end of each turn. */
export function sessionRecord(context: SessionContext): JsonValue {
  return {
    sessionId: context.config.sessionId,
    agent: context.current,
    turns: context.turns,
    transcript: context.transcript,
    lastTurn: context.lastTurn,
  } as unknown as JsonValue;
}
