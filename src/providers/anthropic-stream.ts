import type { RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import { ModelError } from '../core/errors.ts';
import type { JsonObject, JsonValue } from '../core/json.ts';
import type { ReasoningBlock, ToolCall } from '../core/messages.ts';
import type { ModelDelta, ModelResponse, ModelStopReason } from '../core/model.ts';
import type { Usage } from '../core/usage.ts';
import { anthropicProviderName } from './anthropic-format.ts';
import { joinTextSegments, TextSegmenter } from './text-segments.ts';

/** Anthropic stop_reason → normalized stop reason. */
export function anthropicStopReason(raw: string | null | undefined): ModelStopReason | undefined {
  switch (raw) {
    case 'end_turn':
      return 'end_turn';
    case 'tool_use':
      return 'tool_use';
    case 'max_tokens':
    // The context window ran out before max_tokens did: for the loop it is the same "cut off" situation.
    case 'model_context_window_exceeded':
      return 'max_tokens';
    case 'stop_sequence':
      return 'stop_sequence';
    case 'refusal':
      return 'refusal';
    // A long turn paused by the API (server tools): the loop sends the content back and calls again.
    case 'pause_turn':
      return 'pause_turn';
    case null:
    case undefined:
      return undefined;
    default:
      // Anything newer: the loop treats it as unknown.
      return 'unknown';
  }
}

type OpenBlock =
  | { kind: 'text'; text: string; citations: JsonValue[] | undefined }
  | { kind: 'thinking'; thinking: string; signature: string }
  | { kind: 'redacted_thinking'; data: string }
  | { kind: 'tool_use'; id: string; name: string; json: string; ordinal: number; closed: boolean }
  /** A block Anthropic ran or made itself (server_tool_use, web_search_tool_result...), kept as it came. */
  | { kind: 'server'; block: JsonObject; json: string };

interface UsageCounters {
  input: number;
  cacheRead: number;
  cacheCreation: number;
  output: number;
  thinking: number;
}

/** A tool call cut off by max_tokens: never reported as a call, kept here for diagnostics. */
export interface IncompleteToolCall {
  id: string;
  name: string;
  rawArgs: string;
}

/**
 * Folds the raw Messages stream events into one normalized response, forwarding deltas as they come.
 * Kept apart from the SDK call so the same reduction serves live streams and recorded transcripts.
 */
export class AnthropicStreamReducer {
  private readonly blocks = new Map<number, OpenBlock>();
  private readonly order: number[] = [];
  private readonly segments = new TextSegmenter();
  private toolCount = 0;
  private stopRaw: string | null = null;
  private stopSequence: string | null = null;
  private started = false;
  private stopped = false;
  private messageId: string | undefined;
  private modelName: string | undefined;
  private readonly usage: UsageCounters = {
    input: 0,
    cacheRead: 0,
    cacheCreation: 0,
    output: 0,
    thinking: 0,
  };
  /** True once a delta has been forwarded: from then on a failure must not be retried silently. */
  emittedDelta = false;

  constructor(private readonly onDelta?: (delta: ModelDelta) => void) {}

  push(event: RawMessageStreamEvent): void {
    switch (event.type) {
      case 'message_start': {
        this.started = true;
        this.messageId = event.message.id;
        this.modelName = event.message.model;
        const usage = event.message.usage;
        this.usage.input = usage.input_tokens ?? 0;
        this.usage.cacheRead = usage.cache_read_input_tokens ?? 0;
        this.usage.cacheCreation = usage.cache_creation_input_tokens ?? 0;
        this.usage.output = usage.output_tokens ?? 0;
        this.usage.thinking = usage.output_tokens_details?.thinking_tokens ?? 0;
        break;
      }
      case 'content_block_start':
        this.startBlock(event.index, event.content_block);
        break;
      case 'content_block_delta':
        this.applyDelta(event.index, event.delta);
        break;
      case 'content_block_stop': {
        const block = this.blocks.get(event.index);
        if (block?.kind === 'tool_use') block.closed = true;
        break;
      }
      case 'message_delta': {
        this.stopRaw = event.delta.stop_reason ?? this.stopRaw;
        this.stopSequence = event.delta.stop_sequence ?? this.stopSequence;
        // message_delta usage is cumulative; null means "unchanged since message_start".
        const usage = event.usage;
        if (usage.input_tokens != null) this.usage.input = usage.input_tokens;
        if (usage.cache_read_input_tokens != null) this.usage.cacheRead = usage.cache_read_input_tokens;
        if (usage.cache_creation_input_tokens != null)
          this.usage.cacheCreation = usage.cache_creation_input_tokens;
        if (usage.output_tokens != null) this.usage.output = usage.output_tokens;
        if (usage.output_tokens_details?.thinking_tokens != null) {
          this.usage.thinking = usage.output_tokens_details.thinking_tokens;
        }
        break;
      }
      case 'message_stop':
        this.stopped = true;
        break;
    }
  }

  private startBlock(index: number, start: { type: string }): void {
    const block = start as { type: string } & Record<string, unknown>;
    let open: OpenBlock;
    switch (block.type) {
      case 'text': {
        open = {
          kind: 'text',
          text: '',
          citations: Array.isArray(block.citations) ? (block.citations as JsonValue[]) : undefined,
        };
        if (typeof block.text === 'string') this.appendText(open, block.text);
        break;
      }
      case 'thinking':
        open = {
          kind: 'thinking',
          thinking: typeof block.thinking === 'string' ? block.thinking : '',
          signature: typeof block.signature === 'string' ? block.signature : '',
        };
        break;
      case 'redacted_thinking':
        open = { kind: 'redacted_thinking', data: typeof block.data === 'string' ? block.data : '' };
        break;
      case 'tool_use': {
        const ordinal = this.toolCount++;
        open = {
          kind: 'tool_use',
          id: typeof block.id === 'string' ? block.id : '',
          name: typeof block.name === 'string' ? block.name : '',
          json: '',
          ordinal,
          closed: false,
        };
        // Announce the call (id and name) before its arguments stream in.
        this.emit({ type: 'tool_call', index: ordinal, id: open.id, name: open.name, argsDelta: '' });
        break;
      }
      default:
        // Server tool calls, their results and anything newer: not ours to run, but the API wants them back.
        open = { kind: 'server', block: { ...(block as JsonObject) }, json: '' };
    }
    if (open.kind !== 'text') this.segments.breakHere();
    if (!this.blocks.has(index)) this.order.push(index);
    this.blocks.set(index, open);
  }

  /** Text goes out after the paragraph break that separates it from text before another block. */
  private appendText(block: OpenBlock & { kind: 'text' }, piece: string): void {
    if (piece === '') return;
    const separator = this.segments.separatorBefore(piece);
    if (separator !== '') this.emit({ type: 'text', text: separator });
    block.text += piece;
    this.emit({ type: 'text', text: piece });
  }

  private applyDelta(index: number, raw: { type: string }): void {
    const delta = raw as { type: string } & Record<string, unknown>;
    const block = this.blocks.get(index);
    if (!block) return;
    if (delta.type === 'text_delta' && block.kind === 'text' && typeof delta.text === 'string') {
      this.appendText(block, delta.text);
    } else if (delta.type === 'citations_delta' && block.kind === 'text' && isJsonObject(delta.citation)) {
      block.citations ??= [];
      block.citations.push(delta.citation);
    } else if (
      delta.type === 'input_json_delta' &&
      block.kind === 'server' &&
      typeof delta.partial_json === 'string'
    ) {
      block.json += delta.partial_json;
    } else if (
      delta.type === 'thinking_delta' &&
      block.kind === 'thinking' &&
      typeof delta.thinking === 'string'
    ) {
      block.thinking += delta.thinking;
      this.emit({ type: 'reasoning', text: delta.thinking });
    } else if (
      delta.type === 'signature_delta' &&
      block.kind === 'thinking' &&
      typeof delta.signature === 'string'
    ) {
      block.signature += delta.signature;
    } else if (
      delta.type === 'input_json_delta' &&
      block.kind === 'tool_use' &&
      typeof delta.partial_json === 'string'
    ) {
      block.json += delta.partial_json;
      // An empty fragment (sent for no-argument tools) carries nothing worth an event.
      if (delta.partial_json.length > 0) {
        this.emit({ type: 'tool_call', index: block.ordinal, argsDelta: delta.partial_json });
      }
    }
  }

  private emit(delta: ModelDelta): void {
    this.emittedDelta = true;
    this.onDelta?.(delta);
  }

  /**
   * The normalized response. Throws a retryable `truncated_stream` ModelError when the stream ended before
   * `message_stop`: a half response must never pass for a whole one.
   */
  finish(): ModelResponse {
    if (!this.started || !this.stopped) {
      throw new ModelError(
        'truncated_stream',
        `Anthropic stream ended before ${this.started ? 'message_stop' : 'message_start'}.`,
        { retryable: true },
      );
    }
    const stopReason = anthropicStopReason(this.stopRaw);
    const toolCalls: ToolCall[] = [];
    const incomplete: IncompleteToolCall[] = [];
    // Every block that counts, in order, as it goes back to the API; a cut-off tool call does not count.
    const turn: AnthropicTurnBlock[] = [];
    for (const index of this.order) {
      const block = this.blocks.get(index);
      if (!block) continue;
      switch (block.kind) {
        case 'text': {
          const data: JsonObject = { type: 'text', text: block.text };
          if (block.citations !== undefined && block.citations.length > 0) data.citations = block.citations;
          turn.push({ data });
          break;
        }
        case 'thinking':
          turn.push({
            data: { type: 'thinking', thinking: block.thinking, signature: block.signature },
            text: block.thinking,
          });
          break;
        case 'redacted_thinking':
          turn.push({ data: { type: 'redacted_thinking', data: block.data } });
          break;
        case 'tool_use': {
          const parsed = parseToolInput(block.json);
          // Cut off by max_tokens (no block stop, or JSON that does not parse): not a call anyone may run.
          if (stopReason === 'max_tokens' && (!block.closed || parsed === undefined)) {
            incomplete.push({ id: block.id, name: block.name, rawArgs: block.json });
            break;
          }
          toolCalls.push({ id: block.id, name: block.name, args: parsed ?? block.json });
          turn.push({ data: { type: 'tool_use', id: block.id, name: block.name } });
          break;
        }
        case 'server': {
          const data = block.block;
          if (block.json.trim() !== '') {
            const input = parseToolInput(block.json);
            if (input !== undefined) data.input = input;
          }
          turn.push({ data });
          break;
        }
      }
    }
    const text = joinTextSegments(turn.map((block) => textOf(block.data)));
    const reasoning = keptBlocks(turn);
    const usage: Usage = {
      input: this.usage.input + this.usage.cacheRead + this.usage.cacheCreation,
      output: this.usage.output,
      cached: this.usage.cacheRead,
      reasoning: this.usage.thinking,
    };
    const raw: JsonObject = {
      id: this.messageId ?? null,
      model: this.modelName ?? null,
      stop_reason: this.stopRaw,
      stop_sequence: this.stopSequence,
    };
    if (incomplete.length > 0) raw.incompleteToolCalls = incomplete as unknown as JsonValue;
    const response: ModelResponse = { text, toolCalls, stopReason, usage, raw };
    if (this.stopRaw !== null) response.rawStopReason = this.stopRaw;
    if (reasoning.length > 0) response.reasoning = reasoning;
    if (stopReason === 'refusal') {
      response.refusal = text.length > 0 ? text : 'The model declined to answer (stop_reason "refusal").';
    }
    return response;
  }
}

/** One block of the turn as the API wants it back (`data`), with its human-readable thinking, if any. */
interface AnthropicTurnBlock {
  data: JsonObject;
  text?: string;
}

/**
 * The blocks the assistant message keeps for the next turn, in `reasoning`. A turn of the usual shape (thinking,
 * then at most one plain text block, then tool calls) keeps only its thinking blocks: the text and the calls are
 * on the message already, and the history formatter puts them back in that order. Any other turn (server tool
 * calls and their results, text with citations, several text blocks, thinking between them) keeps every block
 * in order, with a `{ type: 'tool_use', id, name }` marker where each call stood, so it goes back exactly as it
 * came (anthropic-format.ts).
 */
function keptBlocks(turn: readonly AnthropicTurnBlock[]): ReasoningBlock[] {
  const kept = isUsualShape(turn)
    ? turn.filter((block) => block.data.type === 'thinking' || block.data.type === 'redacted_thinking')
    : turn.filter((block) => block.data.type !== 'text' || block.data.text !== '');
  return kept.map((block) => {
    const out: ReasoningBlock = { provider: anthropicProviderName, data: block.data };
    if (block.text !== undefined) out.text = block.text;
    return out;
  });
}

/** Thinking blocks, then at most one text block without citations, then tool calls; empty text ignored. */
function isUsualShape(turn: readonly AnthropicTurnBlock[]): boolean {
  let stage: 'thinking' | 'text' | 'tools' = 'thinking';
  for (const { data } of turn) {
    switch (data.type) {
      case 'thinking':
      case 'redacted_thinking':
        if (stage !== 'thinking') return false;
        break;
      case 'text':
        if (data.text === '') break;
        if (stage !== 'thinking' || data.citations !== undefined) return false;
        stage = 'text';
        break;
      case 'tool_use':
        stage = 'tools';
        break;
      default:
        return false;
    }
  }
  return true;
}

function textOf(block: JsonObject): string | undefined {
  return block.type === 'text' && typeof block.text === 'string' ? block.text : undefined;
}

function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Streamed tool input: empty text means a tool called with no arguments; invalid JSON gives undefined. */
function parseToolInput(json: string): JsonValue | undefined {
  if (json.trim() === '') return {};
  try {
    return JSON.parse(json) as JsonValue;
  } catch {
    return undefined;
  }
}
