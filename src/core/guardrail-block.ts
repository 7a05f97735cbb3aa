import type { GuardrailStage } from './events.ts';

/**
 * Which guardrail blocked a run, where, and why: plain data, kept in the agent's context and on the run's result
 * (`result.guardrail`) when the run ended with guardrail_blocked.
 */
export interface GuardrailBlock {
  /** The guardrail's name. */
  name: string;
  stage: GuardrailStage;
  message: string;
  /** The tool call checked, for the tool_input and tool_output stages. */
  callId?: string;
  tool?: string;
}

/** The message of the RunStopped error a blocked run carries. */
export function blockedMessage(block: GuardrailBlock): string {
  const where = block.tool === undefined ? block.stage : `${block.stage} of tool "${block.tool}"`;
  return `Blocked by guardrail "${block.name}" (${where}): ${block.message}`;
}
