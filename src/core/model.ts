import type { RunEventData } from './events.ts';
import type { JsonObject, JsonValue } from './json.ts';
import type { Message, ReasoningBlock, ToolCall } from './messages.ts';
import type { Usage } from './usage.ts';

/**
 * Normalized stop reasons, the same for every provider. `undefined` on a response means the provider gave none, which
 * the termination policy handles with its fallback (tools, then text, then empty). `pause_turn`: the provider paused
 * a long turn (Anthropic, during server tools); the loop sends the turn back as it is and calls again to continue it.
 */
export type ModelStopReason =
  | 'tool_use'
  | 'end_turn'
  | 'max_tokens'
  | 'stop_sequence'
  | 'refusal'
  | 'content_filter'
  | 'pause_turn'
  | 'unknown';

export const modelStopReasons: readonly ModelStopReason[] = [
  'tool_use',
  'end_turn',
  'max_tokens',
  'stop_sequence',
  'refusal',
  'content_filter',
  'pause_turn',
  'unknown',
];

/** A tool as the model sees it: a name, a description and a JSON Schema for its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: JsonObject;
}

/** The structured output the model is asked for in the final phase: a JSON Schema with a name. */
export interface OutputSpec {
  name: string;
  schema: JsonObject;
}

/**
 * A tool the provider runs on its own servers (web search, code execution, file search), offered to the model
 * beside the agent's function tools. Build one with a provider's helpers (`anthropic.tools.webSearch()`,
 * `openai.tools.fileSearch({ vectorStoreIds })`) and list it in the agent's `settings.providerTools`; that
 * provider's adapter adds it to the request's tools, any other adapter refuses it with a ConfigError. Plain
 * JSON, so settings stay serializable. The loop never runs it: the provider does, and its calls and results come
 * back as blocks kept on the assistant message (`reasoning`) for the next turn.
 */
export interface ProviderTool {
  /** The adapter that runs it: `anthropic` or `openai-responses`. */
  readonly provider: string;
  /** The name the model calls it by (`web_search`, `code_execution`, `file_search`...). */
  readonly name: string;
  /** Its entry in the request's `tools`, exactly as the provider's API takes it. */
  readonly definition: JsonObject;
  /**
   * Function tools this tool loads on demand (tool search): the adapter sends them with `defer_loading`, so the
   * model sees only the ones a search returns. `'all'` defers every function tool.
   */
  readonly deferTools?: readonly string[] | 'all' | undefined;
}

export interface ModelSettings {
  maxOutputTokens?: number | undefined;
  temperature?: number | undefined;
  topP?: number | undefined;
  stopSequences?: string[] | undefined;
  /** Provider-specific extras passed through unchanged (for example reasoning effort). */
  providerOptions?: JsonObject | undefined;
  /** Tools the provider runs itself, offered beside the function tools (see ProviderTool). */
  providerTools?: readonly ProviderTool[] | undefined;
}

/** Streaming pieces. They reach the event stream directly, bypassing the statechart. */
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
  /** Called when a circuit breaker this call went through changed state (the run reports a `breaker` event). */
  onBreaker?: ((change: RunEventData['breaker']) => void) | undefined;
}

/** One whole model response, normalized across providers. */
export interface ModelResponse {
  text: string;
  toolCalls: ToolCall[];
  /** The model's refusal message, when it refused (OpenAI `refusal`, Anthropic `refusal` stop reason). */
  refusal?: string | undefined;
  /**
   * Blocks to send back unchanged on the next turn, each tagged with the provider that made it: reasoning
   * (thinking blocks, reasoning items, thought signatures), and whatever else that provider needs back in
   * order (server tool calls and their results, text blocks with citations, message phases). Other providers
   * leave them out.
   */
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
