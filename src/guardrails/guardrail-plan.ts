import type { GuardrailPlan } from '../machines/agent.ts';
import type { AgentGuardrails } from './guardrail.ts';

/**
 * The agent machine's input field for an agent's guardrails: which guardrail states its runs enter. Empty for an
 * agent without guardrails, so its machine input (and a stored session's) is what it was before they existed.
 */
export function guardrailInput(guardrails: AgentGuardrails | undefined): { guardrails?: GuardrailPlan } {
  if (!guardrails) return {};
  return {
    guardrails: {
      input: guardrails.input.length > 0,
      parallelInput: guardrails.parallelInput.length > 0,
      output: guardrails.output.length > 0,
      tools: guardrails.toolInput.length > 0 || guardrails.toolOutput.length > 0,
    },
  };
}
