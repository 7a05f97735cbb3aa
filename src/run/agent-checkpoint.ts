import type { AgentCheckpoint, AgentContext, ModelPhase } from '../machines/agent.ts';

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
