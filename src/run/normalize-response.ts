import { type JsonValue, plainJsonProblem } from '../core/json.ts';
import type { ToolCall } from '../core/messages.ts';
import { type ModelResponse, modelStopReasons } from '../core/model.ts';
import { normalizeUsage } from '../core/usage.ts';

/**
 * Defends the loop against a provider (possibly a user's own) that returns a loose response: text must be a
 * string, tool calls need unique non-empty ids (some servers send '' or '0'), arguments default to {}, usage is
 * filled in, an unrecognized stop reason becomes 'unknown', arguments that are not plain JSON (a cycle, a
 * function) become a string naming the problem, so the tool's schema rejects them and the model is told. `call` makes synthetic ids unique across the run.
 */
export function normalizeResponse(response: ModelResponse, call: number): ModelResponse {
  const given = Array.isArray(response.toolCalls) ? response.toolCalls : [];
  // Duplicate ids are only possible with several calls: no set for the usual zero or one.
  const seen = given.length > 1 ? new Set<string>() : undefined;
  const toolCalls: ToolCall[] = given.map((toolCall, k) => {
    let id = typeof toolCall.id === 'string' && toolCall.id !== '' && toolCall.id !== '0' ? toolCall.id : '';
    if (id === '' || seen?.has(id)) id = `call_${call}_${k}`;
    seen?.add(id);
    return {
      id,
      name: String(toolCall.name),
      args: argsOf(toolCall.args),
    };
  });
  const stopReason =
    response.stopReason === undefined || modelStopReasons.includes(response.stopReason)
      ? response.stopReason
      : 'unknown';
  const normalized: ModelResponse = {
    text: typeof response.text === 'string' ? response.text : '',
    toolCalls,
    stopReason,
    usage: normalizeUsage(response.usage),
  };
  if (response.refusal !== undefined) normalized.refusal = response.refusal;
  if (response.reasoning !== undefined && response.reasoning.length > 0)
    normalized.reasoning = response.reasoning;
  if (response.rawStopReason !== undefined) normalized.rawStopReason = response.rawStopReason;
  return normalized;
}

function argsOf(args: unknown): JsonValue {
  if (args === undefined) return {};
  const problem = plainJsonProblem(args);
  return problem === undefined ? (args as JsonValue) : `(arguments that are not JSON: ${problem})`;
}
