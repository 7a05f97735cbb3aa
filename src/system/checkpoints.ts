import type { AgentCheckpoint, AgentContext, EffectCommand, ModelPhase } from '../machines/agent.ts';
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

/** The agent's state that decided its next effect: what it resumes from after a crash, a suspend or a restart. */
export function checkpointOf(context: AgentContext, phase: ModelPhase): AgentCheckpoint {
  return {
    history: context.history,
    step: context.step,
    modelCalls: context.modelCalls,
    retryCount: context.retryCount,
    toolCallsRun: context.toolCallsRun,
    toolCallCounts: context.toolCallCounts,
    callSignatures: context.callSignatures,
    degradedTools: context.degradedTools,
    usage: context.usage,
    openCalls: context.openCalls,
    decision: context.decision,
    forcedFinalAnswer: context.forcedFinalAnswer,
    approvals: context.approvals,
    phase,
  };
}
