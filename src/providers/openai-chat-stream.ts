import type { ChatCompletionChunk } from 'openai/resources/chat/completions/completions';
import { ModelError } from '../core/errors.ts';
import type { JsonObject, JsonValue } from '../core/json.ts';
import type { ReasoningBlock, ToolCall } from '../core/messages.ts';
import type { ModelDelta, ModelResponse, ModelStopReason } from '../core/model.ts';
import type { Usage } from '../core/usage.ts';
import { openaiChatProviderName } from './openai-chat-format.ts';

/**
 * Chat Completions finish_reason → the stop reason every provider reports. Tool calls are checked first:
 * compatible servers (Gemini's among them) answer `stop`, or nothing at all, while calling tools. A refusal with
 * no text is a refusal. `length` stays max_tokens even with calls: a truncated turn is never a normal end.
 */
export function chatStopReason(
  finishReason: string | undefined,
  hasToolCalls: boolean,
  refusedOnly: boolean,
): ModelStopReason {
  switch (finishReason) {
    case 'length':
      return 'max_tokens';
    case 'content_filter':
      return 'content_filter';
    case 'tool_calls':
    case 'function_call':
      return hasToolCalls ? 'tool_use' : 'unknown';
    case 'stop':
      if (hasToolCalls) return 'tool_use';
      return refusedOnly ? 'refusal' : 'end_turn';
    default:
      if (hasToolCalls) return 'tool_use';
      return refusedOnly ? 'refusal' : 'unknown';
  }
}

interface StreamedCall {
  /** Position among this response's calls, whatever index the server used (some start at 1). */
  ordinal: number;
  id: string;
  name: string;
  args: string;
  extra?: JsonValue;
}

/** Fields some servers add to a delta or a tool call that the SDK's types do not list. */
interface LooseDelta {
  reasoning_content?: unknown;
  reasoning?: unknown;
}
interface LooseToolCallDelta {
  index?: number;
  extra_content?: JsonValue;
}

/**
 * Folds Chat Completions chunks into one normalized response, forwarding text, reasoning and tool-argument deltas
 * as they come. Handles what compatible servers do: no finish_reason, a first tool call at index 1 (or no index),
 * ids that are empty or "0" (replaced by generated ones, the same in the deltas and the response), arguments split
 * anywhere, usage in a chunk with no choices or in the last choice chunk.
 */
export class ChatStreamReducer {
  private readonly calls: StreamedCall[] = [];
  private readonly callsByIndex = new Map<number, StreamedCall>();
  private readonly usedIds = new Set<string>();
  private text = '';
  private refusal = '';
  private finishReason: string | undefined;
  private usage: ChatCompletionChunk['usage'];
  private id: string | undefined;
  private modelName: string | undefined;
  private chunks = 0;
  emittedDelta = false;

  constructor(
    private readonly generateId: () => string,
    private readonly onDelta?: (delta: ModelDelta) => void,
    private readonly providerName: string = openaiChatProviderName,
  ) {}

  push(chunk: ChatCompletionChunk): void {
    this.chunks++;
    if (chunk.id) this.id = chunk.id;
    if (chunk.model) this.modelName = chunk.model;
    if (chunk.usage) this.usage = chunk.usage;
    // We never ask for n > 1: the first choice is the answer.
    const choice = chunk.choices?.find((candidate) => (candidate.index ?? 0) === 0);
    if (!choice) return;
    const delta = choice.delta ?? {};
    const loose = delta as LooseDelta;
    const reasoning = typeof loose.reasoning_content === 'string' ? loose.reasoning_content : loose.reasoning;
    if (typeof reasoning === 'string' && reasoning.length > 0)
      this.emit({ type: 'reasoning', text: reasoning });
    if (typeof delta.content === 'string' && delta.content.length > 0) {
      this.text += delta.content;
      this.emit({ type: 'text', text: delta.content });
    }
    if (typeof delta.refusal === 'string') this.refusal += delta.refusal;
    for (const callDelta of delta.tool_calls ?? []) this.pushToolCall(callDelta);
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
  }

  private pushToolCall(delta: NonNullable<ChatCompletionChunk.Choice.Delta['tool_calls']>[number]): void {
    const loose = delta as LooseToolCallDelta;
    const incomingId = typeof delta.id === 'string' && delta.id !== '' && delta.id !== '0' ? delta.id : '';
    const name = delta.function?.name ?? '';
    const argsDelta = delta.function?.arguments ?? '';
    let call = this.findCall(loose.index, incomingId, name);
    if (!call) {
      const id = incomingId !== '' && !this.usedIds.has(incomingId) ? incomingId : this.uniqueId();
      this.usedIds.add(id);
      call = { ordinal: this.calls.length, id, name, args: argsDelta };
      this.calls.push(call);
      if (typeof loose.index === 'number') this.callsByIndex.set(loose.index, call);
      if (loose.extra_content !== undefined) call.extra = loose.extra_content;
      this.emit({ type: 'tool_call', index: call.ordinal, id: call.id, name: call.name, argsDelta });
      return;
    }
    if (call.name === '' && name !== '') call.name = name;
    if (loose.extra_content !== undefined) call.extra = loose.extra_content;
    if (argsDelta.length > 0) {
      call.args += argsDelta;
      this.emit({ type: 'tool_call', index: call.ordinal, argsDelta });
    }
  }

  /**
   * The call a delta continues, or undefined for a new one. A delta at a known index continues that call unless
   * it brings a different real id, or a name after complete arguments (servers that put every call at index 0).
   * A delta with no index continues the last call unless it brings a new id, or a name after some arguments.
   */
  private findCall(index: number | undefined, id: string, name: string): StreamedCall | undefined {
    if (typeof index === 'number') {
      const known = this.callsByIndex.get(index);
      if (!known) return undefined;
      if (id !== '' && known.id !== id && !this.isGeneratedFor(known)) return undefined;
      // A name again after complete arguments: a server that sends each call whole, always at index 0.
      if (name !== '' && known.name !== '' && parseArguments(known.args) !== undefined && known.args !== '') {
        return undefined;
      }
      return known;
    }
    const last = this.calls.at(-1);
    if (!last) return undefined;
    if ((id !== '' && id !== last.id) || (name !== '' && last.name !== '' && last.args.length > 0)) {
      return undefined;
    }
    return last;
  }

  private readonly generatedIds = new Set<string>();

  private isGeneratedFor(call: StreamedCall): boolean {
    return this.generatedIds.has(call.id);
  }

  private uniqueId(): string {
    let id = this.generateId();
    while (this.usedIds.has(id)) id = this.generateId();
    this.generatedIds.add(id);
    return id;
  }

  private emit(delta: ModelDelta): void {
    this.emittedDelta = true;
    this.onDelta?.(delta);
  }

  /** Whether the stream said how it ended (a finish_reason or a usage chunk). */
  get sawEnd(): boolean {
    return this.finishReason !== undefined || this.usage != null;
  }

  /**
   * The normalized response. `complete` says whether the stream really ended (the `[DONE]` line, or a
   * finish_reason / usage chunk): a stream cut before any of those throws a retryable `truncated_stream`.
   */
  finish(complete: boolean): ModelResponse {
    if (!complete && !this.sawEnd) {
      throw new ModelError(
        'truncated_stream',
        `${this.providerName} stream ended before a finish_reason or [DONE] (${this.chunks} chunks received).`,
        { retryable: true },
      );
    }
    const truncated = this.finishReason === 'length';
    const toolCalls: ToolCall[] = [];
    const reasoning: ReasoningBlock[] = [];
    for (const call of this.calls) {
      const args = parseArguments(call.args);
      // Cut off by the token limit in the middle of its arguments: not a call anyone may run.
      if (truncated && args === undefined) continue;
      toolCalls.push({ id: call.id, name: call.name, args: args ?? call.args });
      if (call.extra !== undefined) {
        reasoning.push({
          provider: this.providerName,
          data: { type: 'tool_call_extra', toolCallId: call.id, extra_content: call.extra },
        });
      }
    }
    const stopReason = chatStopReason(
      this.finishReason,
      toolCalls.length > 0,
      this.refusal.length > 0 && this.text.length === 0,
    );
    const usage: Usage = {
      input: this.usage?.prompt_tokens ?? 0,
      output: this.usage?.completion_tokens ?? 0,
      cached: this.usage?.prompt_tokens_details?.cached_tokens ?? 0,
      reasoning: this.usage?.completion_tokens_details?.reasoning_tokens ?? 0,
    };
    const raw: JsonObject = {
      id: this.id ?? null,
      model: this.modelName ?? null,
      finish_reason: this.finishReason ?? null,
    };
    const response: ModelResponse = { text: this.text, toolCalls, stopReason, usage, raw };
    if (this.finishReason !== undefined) response.rawStopReason = this.finishReason;
    if (this.refusal.length > 0) response.refusal = this.refusal;
    if (reasoning.length > 0) response.reasoning = reasoning;
    return response;
  }
}

/**
 * Streamed arguments: empty text is a call with no arguments; invalid JSON gives undefined, and the call then
 * carries the raw text, which the tool runner sends back to the model as an invalid-arguments error (the same
 * as the other providers).
 */
function parseArguments(text: string): JsonValue | undefined {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return undefined;
  }
}
