import type { EffectCommand, ModelPhase } from '../machines/agent.ts';

export { checkpointOf } from '../run/agent-checkpoint.ts';

import type { SessionContext, SessionRestore } from '../machines/session.ts';

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
