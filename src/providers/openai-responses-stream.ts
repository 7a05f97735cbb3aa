import type { Response, ResponseOutputItem, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { ModelError } from '../core/errors.ts';
import type { JsonObject, JsonValue } from '../core/json.ts';
import type { ReasoningBlock, ToolCall } from '../core/messages.ts';
import type { ModelDelta, ModelResponse, ModelStopReason } from '../core/model.ts';
import type { Usage } from '../core/usage.ts';
import { openaiResponsesProviderName } from './openai-responses-format.ts';
import { paragraphBreak, TextSegmenter } from './text-segments.ts';

/**
 * Responses status → normalized stop reason. `completed` with function calls is tool_use; with only a
 * refusal it is refusal; `incomplete` says why in incomplete_details.
 */
export function responsesStopReason(
  status: string | undefined,
  incompleteReason: string | undefined,
  hasToolCalls: boolean,
  refusedOnly: boolean,
): ModelStopReason | undefined {
  switch (status) {
    case 'completed':
      if (hasToolCalls) return 'tool_use';
      return refusedOnly ? 'refusal' : 'end_turn';
    case 'incomplete':
      if (incompleteReason === 'max_output_tokens') return 'max_tokens';
      if (incompleteReason === 'content_filter') return 'content_filter';
      return 'unknown';
    case undefined:
      return undefined;
    default:
      return 'unknown';
  }
}

interface StreamedCall {
  ordinal: number;
  callId: string;
  name: string;
  args: string;
}

/**
 * Folds Responses stream events into one normalized response, forwarding deltas as they come. The terminal
 * event (`response.completed` / `response.incomplete`) carries the whole output, which is authoritative; the
 * items seen in `response.output_item.done` stand in when it is missing.
 */
export class ResponsesStreamReducer {
  private readonly calls = new Map<number, StreamedCall>();
  private readonly doneItems = new Map<number, ResponseOutputItem>();
  private callCount = 0;
  private final: Response | undefined;
  private responseId: string | undefined;
  private readonly segments = new TextSegmenter();
  emittedDelta = false;

  constructor(private readonly onDelta?: (delta: ModelDelta) => void) {}

  push(event: ResponseStreamEvent): void {
    switch (event.type) {
      case 'response.created':
      case 'response.in_progress':
        this.responseId = event.response.id;
        break;
      case 'response.output_item.added':
        // Each item is its own paragraph: the text of a second message starts after a break.
        this.segments.breakHere();
        if (event.item.type === 'function_call') {
          const call: StreamedCall = {
            ordinal: this.callCount++,
            callId: event.item.call_id,
            name: event.item.name,
            args: event.item.arguments ?? '',
          };
          this.calls.set(event.output_index, call);
          this.emit({
            type: 'tool_call',
            index: call.ordinal,
            id: call.callId,
            name: call.name,
            argsDelta: call.args,
          });
        }
        break;
      case 'response.function_call_arguments.delta': {
        const call = this.calls.get(event.output_index);
        if (call && event.delta.length > 0) {
          call.args += event.delta;
          this.emit({ type: 'tool_call', index: call.ordinal, argsDelta: event.delta });
        }
        break;
      }
      case 'response.function_call_arguments.done': {
        const call = this.calls.get(event.output_index);
        if (call) call.args = event.arguments;
        break;
      }
      case 'response.output_text.delta': {
        const separator = this.segments.separatorBefore(event.delta);
        if (separator !== '') this.emit({ type: 'text', text: separator });
        this.emit({ type: 'text', text: event.delta });
        break;
      }
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta':
        this.emit({ type: 'reasoning', text: event.delta });
        break;
      case 'response.output_item.done':
        this.doneItems.set(event.output_index, event.item);
        break;
      case 'response.completed':
      case 'response.incomplete':
        this.final = event.response;
        break;
      case 'response.failed':
        throw failedResponseError(event.response);
      case 'error':
        throw new ModelError(
          event.code === 'rate_limit_exceeded' ? 'rate_limited' : 'server',
          `OpenAI Responses stream error${event.code ? ` (${event.code})` : ''}: ${event.message}`,
          { retryable: true },
        );
      default:
        break;
    }
  }

  private emit(delta: ModelDelta): void {
    this.emittedDelta = true;
    this.onDelta?.(delta);
  }

  /** The normalized response; a stream without a terminal event throws a retryable `truncated_stream`. */
  finish(): ModelResponse {
    const final = this.final;
    if (!final) {
      throw new ModelError('truncated_stream', 'OpenAI Responses stream ended before response.completed.', {
        retryable: true,
      });
    }
    const output =
      final.output && final.output.length > 0
        ? final.output
        : [...this.doneItems.entries()].sort(([a], [b]) => a - b).map(([, item]) => item);
    const texts: string[] = [];
    let refusal = '';
    const toolCalls: ToolCall[] = [];
    // Every item that goes back to the API, in order, as it goes back (see keptItems).
    const turn: ReasoningBlock[] = [];
    for (const item of output) {
      if (item.type === 'message') {
        let text = '';
        for (const part of item.content) {
          if (part.type === 'output_text') text += part.text;
          else if (part.type === 'refusal') refusal += part.refusal;
        }
        texts.push(text);
        const entry: JsonObject = { type: 'message', role: 'assistant', content: text };
        if (item.phase != null) entry.phase = item.phase;
        turn.push({ provider: openaiResponsesProviderName, data: entry });
      } else if (item.type === 'function_call') {
        toolCalls.push({ id: item.call_id, name: item.name, args: parseArguments(item.arguments) });
        turn.push({
          provider: openaiResponsesProviderName,
          data: { type: 'function_call', call_id: item.call_id, name: item.name },
        });
      } else if (item.type === 'reasoning') {
        const summary = item.summary.map((part) => part.text).join('\n\n');
        const block: ReasoningBlock = {
          provider: openaiResponsesProviderName,
          data: reasoningPayload(item),
        };
        if (summary.length > 0) block.text = summary;
        turn.push(block);
      } else {
        // A built-in tool's call (web_search_call, file_search_call...): the API wants it back as it came.
        turn.push({ provider: openaiResponsesProviderName, data: item as unknown as JsonObject });
      }
    }
    const text = texts.filter((part) => part !== '').join(paragraphBreak);
    const reasoning = keptItems(turn);
    const incompleteReason = final.incomplete_details?.reason ?? undefined;
    const stopReason = responsesStopReason(
      final.status ?? undefined,
      incompleteReason,
      toolCalls.length > 0,
      refusal.length > 0 && text.length === 0,
    );
    const usage: Usage = {
      input: final.usage?.input_tokens ?? 0,
      output: final.usage?.output_tokens ?? 0,
      cached: final.usage?.input_tokens_details?.cached_tokens ?? 0,
      reasoning: final.usage?.output_tokens_details?.reasoning_tokens ?? 0,
    };
    const raw: JsonObject = {
      id: final.id ?? this.responseId ?? null,
      model: final.model ?? null,
      status: final.status ?? null,
    };
    if (incompleteReason !== undefined) raw.incomplete_reason = incompleteReason;
    const response: ModelResponse = { text, toolCalls, stopReason, usage, raw };
    const rawStop = incompleteReason ?? final.status;
    if (rawStop) response.rawStopReason = rawStop;
    if (refusal.length > 0) response.refusal = refusal;
    if (reasoning.length > 0) response.reasoning = reasoning;
    return response;
  }
}

/**
 * The items the assistant message keeps for the next turn, in `reasoning`. A turn of the usual shape (reasoning
 * items, then at most one message without a phase, then function calls) keeps only its reasoning items: the text
 * and the calls are on the message already, and the history formatter puts them back in that order. Any other
 * turn (a message with its `phase`, several messages, a built-in tool's call) keeps every item in order, so it
 * goes back exactly as it came: a message as `{ type: 'message', role, phase }` (with its `content` only when the
 * turn had several messages; otherwise the message's text is the assistant message's own), a function call as a
 * `{ type: 'function_call', call_id, name }` marker where it stood (openai-responses-format.ts).
 */
function keptItems(turn: readonly ReasoningBlock[]): ReasoningBlock[] {
  if (isUsualShape(turn)) return turn.filter((block) => dataOf(block).type === 'reasoning');
  const messages = turn.filter((block) => dataOf(block).type === 'message').length;
  if (messages > 1) return [...turn];
  return turn.map((block) => {
    const data = dataOf(block);
    if (data.type !== 'message') return block;
    const { content: _content, ...entry } = data;
    return { provider: block.provider, data: entry };
  });
}

/** Reasoning items, then at most one message without a phase, then function calls. */
function isUsualShape(turn: readonly ReasoningBlock[]): boolean {
  let stage: 'reasoning' | 'message' | 'calls' = 'reasoning';
  for (const block of turn) {
    const data = dataOf(block);
    switch (data.type) {
      case 'reasoning':
        if (stage !== 'reasoning') return false;
        break;
      case 'message':
        if (stage !== 'reasoning' || data.phase !== undefined) return false;
        stage = 'message';
        break;
      case 'function_call':
        stage = 'calls';
        break;
      default:
        return false;
    }
  }
  return true;
}

function dataOf(block: ReasoningBlock): JsonObject {
  return block.data as JsonObject;
}

/** The reasoning item as the API wants it back: id, summary, encrypted content; never the output-only status. */
function reasoningPayload(item: ResponseOutputItem & { type: 'reasoning' }): JsonObject {
  const payload: JsonObject = {
    type: 'reasoning',
    id: item.id,
    summary: item.summary.map((part) => ({ type: part.type, text: part.text })),
  };
  if (item.encrypted_content != null) payload.encrypted_content = item.encrypted_content;
  if (item.content && item.content.length > 0) payload.content = item.content as unknown as JsonValue;
  return payload;
}

function parseArguments(text: string): JsonValue {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return text;
  }
}

function failedResponseError(response: Response): ModelError {
  const code = response.error?.code;
  const message = `OpenAI Responses failed${code ? ` (${code})` : ''}: ${response.error?.message ?? 'no message'}`;
  if (code === 'rate_limit_exceeded') return new ModelError('rate_limited', message, { retryable: true });
  if (code === 'server_error' || code === 'vector_store_timeout') {
    return new ModelError('server', message, { retryable: true });
  }
  return new ModelError('invalid_response', message);
}
