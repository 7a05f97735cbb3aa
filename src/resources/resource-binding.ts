import type { ModelRequest, ToolSpec } from '../core/model.ts';
import { defaultOutputEstimate } from './output-estimates.ts';

export { defaultOutputEstimate };

/** Rough tokens per image part (providers bill a few hundred to a couple of thousand). */
const imageTokens = 1000;
/** Framing tokens per message (role, separators). */
const messageOverhead = 4;

/**
 * A cheap, deliberately rough estimate of a request's size: about four characters per token for text, tool
 * specs and the output schema, plus what the call is expected to write (`expectedOutput`, the running mean the
 * manager learned, else a small default), never more than its `maxOutputTokens`. It is only a reservation: the
 * settlement replaces it with the provider's count. Under a budget the call's output is capped, so what a prompt is
 * under-estimated by is what a call can pass the budget by.
 *
 * It never throws: it runs before the model call, outside the call's error handling, so whatever a message holds
 * (inputs are checked before a run starts, but a custom history filter or provider may hand over anything) counts
 * as what it can be measured as, and a value that cannot be measured counts as nothing.
 */
export function estimateRequest(
  request: ModelRequest,
  expectedOutput: number = defaultOutputEstimate,
): { input: number; output: number } {
  let chars = 0;
  let extra = 0;
  for (const message of request.messages) {
    extra += messageOverhead;
    if (typeof message !== 'object' || message === null) continue;
    const { content } = message as { content?: unknown };
    if (typeof content === 'string') chars += content.length;
    else if (Array.isArray(content)) {
      for (const part of content as unknown[]) {
        if (typeof part !== 'object' || part === null) continue;
        const { type, text } = part as { type?: unknown; text?: unknown };
        if (type === 'text' && typeof text === 'string') chars += text.length;
        else if (type === 'image') extra += imageTokens;
      }
    }
    if (message.role === 'assistant' && Array.isArray(message.toolCalls)) {
      for (const call of message.toolCalls as unknown[]) {
        if (typeof call !== 'object' || call === null) continue;
        const { name, args } = call as { name?: unknown; args?: unknown };
        chars += (typeof name === 'string' ? name.length : 0) + jsonLength(args ?? null);
      }
    }
  }
  for (const tool of request.tools) chars += specChars(tool);
  if (request.output) chars += jsonLength(request.output.schema);
  const maxOutputTokens = request.settings?.maxOutputTokens;
  return {
    input: Math.ceil(chars / 4) + extra,
    output:
      typeof maxOutputTokens === 'number' && Number.isFinite(maxOutputTokens) && maxOutputTokens > 0
        ? Math.min(expectedOutput, maxOutputTokens)
        : expectedOutput,
  };
}

/** Tool specs are the same objects call after call (the registry builds them once): measure each once. */
const specSizes = new WeakMap<ToolSpec, number>();

function specChars(tool: ToolSpec): number {
  let size = specSizes.get(tool);
  if (size === undefined) {
    size = tool.name.length + tool.description.length + jsonLength(tool.parameters);
    specSizes.set(tool, size);
  }
  return size;
}

/** The length of a value's JSON text; 0 for what JSON cannot hold (a cycle, a bigint, nesting too deep). */
function jsonLength(value: unknown): number {
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return 0;
  }
}
