import type { GenerateContentResponse } from '@google/genai';
import { ModelError } from '../core/errors.ts';
import type { JsonObject, JsonValue } from '../core/json.ts';
import type { ReasoningBlock, ToolCall } from '../core/messages.ts';
import type { ModelDelta, ModelResponse, ModelStopReason } from '../core/model.ts';
import type { Usage } from '../core/usage.ts';
import { geminiProviderName } from './gemini-format.ts';

const contentFilterReasons = new Set([
  'SAFETY',
  'RECITATION',
  'PROHIBITED_CONTENT',
  'BLOCKLIST',
  'SPII',
  'IMAGE_SAFETY',
  'IMAGE_PROHIBITED_CONTENT',
  'IMAGE_RECITATION',
]);

/**
 * Gemini finishReason → the stop reason every provider reports. Gemini says STOP even when it returned
 * function calls (sometimes the calls come in an earlier chunk than the STOP), so any function call makes it
 * `tool_use`.
 */
export function geminiStopReason(
  raw: string | undefined,
  hasFunctionCalls: boolean,
): ModelStopReason | undefined {
  if (raw === undefined) return hasFunctionCalls ? 'tool_use' : undefined;
  if (raw === 'STOP') return hasFunctionCalls ? 'tool_use' : 'end_turn';
  if (raw === 'MAX_TOKENS') return 'max_tokens';
  if (contentFilterReasons.has(raw)) return 'content_filter';
  return 'unknown';
}

/**
 * Folds `generateContentStream` chunks into one normalized response, forwarding deltas as they come. Function
 * calls without an id (older models) get a synthesized unique one; thought signatures become reasoning blocks
 * tied to their part so they can be sent back unchanged.
 */
export class GeminiStreamReducer {
  private text = '';
  private readonly toolCalls: ToolCall[] = [];
  private readonly reasoning: ReasoningBlock[] = [];
  private thoughtText = '';
  private finishReason: string | undefined;
  private finishMessage: string | undefined;
  private blockReason: string | undefined;
  private usage: Usage = { input: 0, output: 0, cached: 0, reasoning: 0 };
  private responseId: string | undefined;
  private modelVersion: string | undefined;
  emittedDelta = false;

  constructor(
    private readonly newId: () => string,
    private readonly onDelta?: (delta: ModelDelta) => void,
  ) {}

  push(chunk: GenerateContentResponse): void {
    this.responseId = chunk.responseId ?? this.responseId;
    this.modelVersion = chunk.modelVersion ?? this.modelVersion;
    if (chunk.promptFeedback?.blockReason) this.blockReason = chunk.promptFeedback.blockReason;
    const meta = chunk.usageMetadata;
    if (meta) {
      // Each chunk carries the running totals, so the latest one wins. Output counts thoughts too.
      const thoughts = meta.thoughtsTokenCount ?? 0;
      this.usage = {
        input: (meta.promptTokenCount ?? 0) + (meta.toolUsePromptTokenCount ?? 0),
        output: (meta.candidatesTokenCount ?? 0) + thoughts,
        cached: meta.cachedContentTokenCount ?? 0,
        reasoning: thoughts,
      };
    }
    const candidate = chunk.candidates?.[0];
    if (!candidate) return;
    if (candidate.finishReason) this.finishReason = candidate.finishReason;
    if (candidate.finishMessage) this.finishMessage = candidate.finishMessage;
    for (const part of candidate.content?.parts ?? []) {
      let functionCallId: string | null = null;
      if (part.functionCall) {
        const call = part.functionCall;
        const id = call.id && call.id.length > 0 ? call.id : this.newId();
        const name = call.name ?? '';
        const args = (call.args ?? {}) as JsonValue;
        const index = this.toolCalls.length;
        this.toolCalls.push({ id, name, args });
        functionCallId = id;
        // Gemini sends each call whole: one delta with all its arguments.
        this.emit({ type: 'tool_call', index, id, name, argsDelta: JSON.stringify(args) });
      } else if (typeof part.text === 'string' && part.text.length > 0) {
        if (part.thought) {
          this.thoughtText += part.text;
          this.emit({ type: 'reasoning', text: part.text });
        } else {
          this.text += part.text;
          this.emit({ type: 'text', text: part.text });
        }
      }
      if (part.thoughtSignature) {
        this.reasoning.push({
          provider: geminiProviderName,
          data: { type: 'thought_signature', signature: part.thoughtSignature, functionCallId },
        });
      }
    }
  }

  private emit(delta: ModelDelta): void {
    this.emittedDelta = true;
    this.onDelta?.(delta);
  }

  /**
   * The normalized response. A stream that ended with neither a finishReason nor a prompt block was cut off:
   * that throws a retryable `truncated_stream` ModelError.
   */
  finish(): ModelResponse {
    if (this.finishReason === undefined && this.blockReason === undefined) {
      throw new ModelError('truncated_stream', 'Gemini stream ended without a finishReason.', {
        retryable: true,
      });
    }
    const reasoning = [...this.reasoning];
    if (this.thoughtText.length > 0) {
      reasoning.unshift({ provider: geminiProviderName, text: this.thoughtText, data: { type: 'thought' } });
    }
    const stopReason =
      this.blockReason !== undefined && this.finishReason === undefined
        ? 'content_filter'
        : geminiStopReason(this.finishReason, this.toolCalls.length > 0);
    const raw: JsonObject = {
      responseId: this.responseId ?? null,
      modelVersion: this.modelVersion ?? null,
      finishReason: this.finishReason ?? null,
    };
    if (this.finishMessage !== undefined) raw.finishMessage = this.finishMessage;
    if (this.blockReason !== undefined) raw.blockReason = this.blockReason;
    const response: ModelResponse = {
      text: this.text,
      toolCalls: this.toolCalls,
      stopReason,
      usage: this.usage,
      rawStopReason: this.finishReason ?? this.blockReason,
      raw,
    };
    if (reasoning.length > 0) response.reasoning = reasoning;
    return response;
  }
}
