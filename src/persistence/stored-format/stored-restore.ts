import type { Message } from '../../core/messages.ts';
import type { Usage } from '../../core/usage.ts';
import type { SessionRestore } from '../../machines/session.ts';
import type { SameKeys } from './stored-checkpoint.ts';

/**
 * The session around the agent holding a turn, as a store keeps it: what a recovered session machine starts from.
 * Like StoredAgentCheckpoint, it is the stored format, mapped to and from the session machine's context below.
 */
export interface StoredSessionRestore {
  /** The agent holding the conversation. */
  current: string;
  /** The whole conversation so far, and where the turn in progress starts in it. */
  transcript: Message[];
  turnStart: number;
  /** The history the current agent was given, and where its own part starts. */
  agentHistory: Message[];
  agentBase: number;
  /** The agents of this turn, in handoff order, ending with `current`. */
  path: string[];
  /** Handoffs refused in this turn. */
  refusals: number;
  /** What the turn spent before the current agent. */
  spent: { usage: Usage; modelCalls: number; toolCallsRun: number };
  /** How many agents held the session so far (checkpoints of an earlier holder do not apply). */
  segment: number;
  /** Turns finished before this one. */
  turns: number;
}

export function toStoredRestore(restore: SessionRestore): StoredSessionRestore {
  return {
    current: restore.current,
    transcript: restore.transcript,
    turnStart: restore.turnStart,
    agentHistory: restore.agentHistory,
    agentBase: restore.agentBase,
    path: restore.path,
    refusals: restore.refusals,
    spent: restore.spent,
    segment: restore.segment,
    turns: restore.turns,
  };
}

export function fromStoredRestore(stored: StoredSessionRestore): SessionRestore {
  return {
    current: stored.current,
    transcript: stored.transcript,
    turnStart: stored.turnStart,
    agentHistory: stored.agentHistory,
    agentBase: stored.agentBase,
    path: stored.path,
    refusals: stored.refusals,
    spent: stored.spent,
    segment: stored.segment,
    turns: stored.turns,
  };
}

/** A field added to the session's restore does not compile until the stored format has it too. */
const restoreKeysMatch: SameKeys<SessionRestore, StoredSessionRestore> = true;
void restoreKeysMatch;
