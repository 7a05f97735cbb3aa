import type { JsonObject, JsonValue } from './json.ts';
import type { Message, ReasoningBlock, ToolCall } from './messages.ts';
import type { Usage } from './usage.ts';

/**
 * Normalized stop reasons (REQUIREMENTS L2, P6). `undefined` on a response means the provider gave none, which
 * the termination policy handles with its fallback (tools, then text, then empty).
 */
export type ModelStopReason =
  | 'tool_use'
  | 'end_turn'
  | 'max_tokens'
  | 'stop_sequence'
  | 'refusal'
  | 'content_filter'
  | 'unknown';

export const modelStopReasons: readonly ModelStopReason[] = [
  'tool_use',
  'end_turn',
  'max_tokens',
  'stop_sequence',
  'refusal',
  'content_filter',
  'unknown',
];

/** A tool as the model sees it: a name, a description and a JSON Schema for its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: JsonObject;
}

/** The structured output the model is asked for in the final phase (L1): a JSON Schema with a name. */
export interface OutputSpec {
  name: string;
  schema: JsonObject;
}

export interface ModelSettings {
  maxOutputTokens?: number | undefined;
  temperature?: number | undefined;
  topP?: number | undefined;
  stopSequences?: string[] | undefined;
  /** Provider-specific extras passed through unchanged (for example reasoning effort). */
  providerOptions?: JsonObject | undefined;
}

/** Streaming pieces. They reach the event stream directly, bypassing the statechart (it sees whole responses). */
export type ModelDelta =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | {
      type: 'tool_call';
      index: number;
      id?: string | undefined;
      name?: string | undefined;
      argsDelta: string;
    };

export interface ModelRequest {
  /** The full conversation to send, system instructions first. */
  messages: readonly Message[];
  /** Tools the model may call now; empty in the final-output phase. */
  tools: readonly ToolSpec[];
  /** Sent only when tools are off: the final-output phase, or an agent without tools. */
  output?: OutputSpec | undefined;
  settings: ModelSettings;
  /** Aborted when the run is aborted or times out, or the call is no longer wanted. Pass it to the SDK. */
  signal: AbortSignal;
  /** Called for each streamed piece, in order, before `generate` resolves. */
  onDelta?: ((delta: ModelDelta) => void) | undefined;
}

/** One whole model response, normalized across providers. */
export interface ModelResponse {
  text: string;
  toolCalls: ToolCall[];
  /** The model's refusal message, when it refused (OpenAI `refusal`, Anthropic `refusal` stop reason). */
  refusal?: string | undefined;
  /** Blocks to send back unchanged on the next turn. */
  reasoning?: ReasoningBlock[] | undefined;
  stopReason: ModelStopReason | undefined;
  usage: Usage;
  /** The provider's own finish reason, for diagnostics. */
  rawStopReason?: string | undefined;
  /** The provider's raw response or final chunk, for diagnostics; never read by the loop. */
  raw?: JsonValue | undefined;
}

/**
 * The one interface every model implements: the scripted model and the real providers alike, so nothing in the
 * loop knows which it talks to. `generate` must honour `request.signal` and reject with an error on failure.
 */
export interface ModelProvider {
  /** Wire protocol or kind, e.g. `openai-chat`, `anthropic`, `scripted`. */
  readonly provider: string;
  /** Model name as the provider knows it. */
  readonly model: string;
  generate(request: ModelRequest): Promise<ModelResponse>;
}

export function isModelProvider(value: unknown): value is ModelProvider {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as ModelProvider).generate === 'function' &&
    typeof (value as ModelProvider).model === 'string'
  );
}

/**
 * A reserved tool name: a strategy that parses the model's text (ReAct) turns a malformed reply into a call to it,
 * with `{ error, reply }` as arguments, so the loop's policies bound retries. The tool runner answers it with the
 * parse error; no agent may define a tool by that name.
 */
export const reactInvalidReplyTool = 'react_invalid_reply';
