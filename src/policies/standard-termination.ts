import type { ToolCall } from '../core/messages.ts';
import type { TerminationDecision, TerminationPolicy } from './decision.ts';

/**
 * The standard termination policy: what the loop does after a response, one row per normalized stop reason:
 *
 * | stop reason    | decision                                                                 |
 * |----------------|--------------------------------------------------------------------------|
 * | tool_use       | tool calls -> continue with tools; none -> text ? output : terminate     |
 * | end_turn       | tool calls FIRST (Gemini says STOP with function calls) -> tools; else output (text may be empty) |
 * | max_tokens     | text -> output (flagged truncated); no text -> terminate (error)         |
 * | stop_sequence  | text -> output; no text -> output '' (completed)                         |
 * | refusal, content_filter | terminate (guardrail_blocked)                                   |
 * | pause_turn     | tool calls -> tools; else continue the turn (call again with it, within the step limit) |
 * | none / unknown | fallback: tools, then text, then reasoning-only -> continue thinking, then empty output |
 *
 * tool_use without tool calls is a provider inconsistency. Rather than end the run and lose the reply, we keep any
 * text as the answer, and end with an error otherwise, so the caller learns what happened.
 */
export const standardTerminationPolicy: TerminationPolicy = (response) => {
  const hasTools = response.toolCalls.length > 0;
  const hasText = response.text.length > 0;
  switch (response.stopReason) {
    case 'tool_use':
      if (hasTools) return tools(response.toolCalls);
      if (hasText) return output(response.text, false);
      return {
        kind: 'terminate',
        reason: 'error',
        message: 'The model reported tool_use but returned no tool call and no text.',
      };
    case 'end_turn':
      return hasTools ? tools(response.toolCalls) : output(response.text, false);
    case 'max_tokens':
      if (hasText) return output(response.text, true);
      return {
        kind: 'terminate',
        reason: 'error',
        message: hasTools
          ? 'The model hit max_tokens in the middle of a tool call; the call is incomplete and was not run.'
          : 'The model hit max_tokens before producing any text.',
      };
    case 'stop_sequence':
      return output(response.text, false);
    case 'refusal':
    case 'content_filter':
      return {
        kind: 'terminate',
        reason: 'guardrail_blocked',
        message: `The model ${response.stopReason === 'refusal' ? 'refused' : 'was stopped by a content filter'}${
          response.refusal ? `: ${response.refusal}` : '.'
        }`,
      };
    case 'pause_turn':
      // A long turn the provider paused (server tools at work): its content goes back as it is and the model is
      // called again to finish it. The partial text is not the answer.
      return hasTools ? tools(response.toolCalls) : { kind: 'continue_thinking', continuesTurn: true };
    default:
      if (hasTools) return tools(response.toolCalls);
      if (hasText) return output(response.text, false);
      if (response.reasoning && response.reasoning.length > 0) return { kind: 'continue_thinking' };
      return output('', false);
  }
};

function tools(calls: ToolCall[]): TerminationDecision {
  return { kind: 'continue_with_tools', calls };
}

function output(text: string, truncated: boolean): TerminationDecision {
  return { kind: 'terminate_with_output', text, truncated };
}
