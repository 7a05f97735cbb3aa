import type { AgentContext, EffectCommand, ModelPhase } from '../machines/agent.ts';
import type { SessionContext, SessionRestore } from '../machines/session.ts';
import {
  fromStoredCheckpoint,
  type StoredAgentCheckpoint,
  toStoredCheckpoint,
} from '../persistence/stored-format/stored-checkpoint.ts';
import {
  fromStoredRestore,
  type StoredSessionRestore,
  toStoredRestore,
} from '../persistence/stored-format/stored-restore.ts';
import { checkpointOf } from '../run/agent-checkpoint.ts';

/**
 * Where a session's checkpoints meet the store: the machines' state is mapped to the stored format when a checkpoint
 * is taken, and back when one is resumed from. Nothing else in the runtime reads or writes a stored checkpoint.
 */

/** The agent's checkpoint, as the store keeps it. */
export function storedCheckpointOf(context: AgentContext, phase: ModelPhase): StoredAgentCheckpoint {
  return toStoredCheckpoint(checkpointOf(context, phase));
}

/** The session around the agent, as the store keeps it. */
export function storedRestoreOf(context: SessionContext): StoredSessionRestore {
  return toStoredRestore(restoreOf(context));
}

export { fromStoredCheckpoint as resumableCheckpoint, fromStoredRestore as resumableRestore };

/** The session around the agent holding the conversation: what a recovered session machine starts from. */
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
    turns: context.turns,
  };
}

/** The phase a command is asked from: a final-output model call resumes in the final-output phase. */
export function phaseOfCommand(command: EffectCommand): ModelPhase {
  return command.type === 'model.call' ? command.phase : 'toolUse';
}
