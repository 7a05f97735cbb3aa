import type { ToolCall } from '../core/messages.ts';
import type { ModelResponse } from '../core/model.ts';
import type { StopReason } from '../core/stop-reason.ts';

/**
 * What the loop does after a model response: run tool calls, call the model again, take the text as the answer,
 * or end the run with a stop reason.
 */
export type TerminationDecision =
  /** Run these tool calls and call the model again. */
  | { kind: 'continue_with_tools'; calls: ToolCall[] }
  /**
   * Nothing to run and nothing to answer yet (reasoning only, no stop signal, a paused turn): call the model again.
   * `continuesTurn`: the response was a paused turn; the next response continues it, and its text follows this one's
   * in the answer.
   */
  | { kind: 'continue_thinking'; continuesTurn?: boolean }
  /** The text is the answer (to decode, when the agent has an output schema). `truncated` when cut by max_tokens. */
  | { kind: 'terminate_with_output'; text: string; truncated: boolean }
  /** End the run now with this stop reason. */
  | { kind: 'terminate'; reason: StopReason; message: string };

/** What a policy may look at besides the response: counts kept by the loop. Plain data, no functions. */
export interface PolicyState {
  /** Calls already run per tool name in this run. */
  toolCallCounts: Readonly<Record<string, number>>;
  /** Calls already run per tool-call signature (name + canonical arguments hash). */
  callSignatures: Readonly<Record<string, number>>;
}

/** A termination policy: a pure function from a response and the loop's counts to a decision. */
export type TerminationPolicy = (response: ModelResponse, state: PolicyState) => TerminationDecision;
