import type { ErrorInfo } from './errors.ts';
import type { GuardrailBlock } from './guardrail-block.ts';
import type { JsonValue } from './json.ts';
import type { Message } from './messages.ts';
import type { RunStatus, StopReason } from './stop-reason.ts';
import type { NestedSpend, Usage } from './usage.ts';

/** One tool call of a step, with what it returned. */
export interface StepToolCall {
  id: string;
  name: string;
  args: JsonValue;
  /** The tool message's content; absent when the call was never answered (it always is in a finished run). */
  result?: string;
  isError?: boolean;
}

/** One model turn of the run: what the model said (its thought), the tools it called and what they returned. */
export interface RunStep {
  /** From 1, in order. */
  index: number;
  agent: string;
  thought: string;
  toolCalls: StepToolCall[];
}

/** The one typed result every run ends with, whatever happened. */
export interface RunResult<TOutput = undefined> {
  sessionId: string;
  /** The agent that produced the final answer. */
  agent: string;
  status: RunStatus;
  stopReason: StopReason;
  /** The last text the model produced (the answer, when completed; the refusal, when the model refused). */
  text: string;
  /** The decoded structured output, when the agent has an output schema and it decoded. */
  output: TOutput | undefined;
  steps: RunStep[];
  /** Tool calls that were executed (unknown tools and invalid arguments are answered without running anything). */
  toolCallCount: number;
  /**
   * Tokens the run spent: its own model calls, plus those of the agents it used as tools and of the MCP sampling
   * calls its tools' servers asked for (see `nested`). Budgets count the same.
   */
  usage: Usage;
  /** The full conversation: the caller's history, then `historyDelta`. Pass it as the next run's `history`. */
  history: Message[];
  /** What this run appended: the user's input, the assistant turns and the tool results. */
  historyDelta: Message[];
  /** Model calls made, those of agents used as tools and of MCP sampling included (see `nested`). */
  modelCalls: number;
  /**
   * The part of `usage` and `modelCalls` spent outside the agents' own model calls: by agents used as tools and by
   * MCP sampling. The agents' own figures are `usage` and `modelCalls` minus these. Absent when there was none,
   * and on the results of session turns (handoffs included), which give the totals only.
   * `steps` lists the agents' own model turns only; a nested agent's model calls count against its caller's step
   * limit, not among its steps.
   */
  nested?: NestedSpend;
  timedOut: boolean;
  /** The answer was cut by the model's max_tokens. */
  truncated: boolean;
  /**
   * Why the run stopped or failed, as plain data (`RunStopped.is(result.error)` when a limit or policy stopped it;
   * then `code` is the stop reason). Absent when the run completed (also `tool_failure_degraded`) and when it
   * stopped at `max_steps`, whose stop reason says all there is.
   */
  error?: ErrorInfo;
  /**
   * The guardrail that blocked the run, where and why, when it stopped with guardrail_blocked because of one (a model
   * refusal, also guardrail_blocked, has none).
   */
  guardrail?: GuardrailBlock;
  /** The agents that held the conversation in this turn, in order (handoffs); absent for a single-agent run. */
  path?: string[];
}
