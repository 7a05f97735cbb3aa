import type { Message } from '../core/messages.ts';
import type { ModelRequest, ToolSpec } from '../core/model.ts';
import { defaultOutputEstimate } from './output-estimates.ts';
import type { ResourceManager } from './resource-manager.ts';

/**
 * Which resource manager a running session asks before each model call. Looked up by session id, like the run
 * runtime, so the machine's context stays plain data and runs without budgets pay nothing.
 */
const bindings = new Map<string, ResourceManager>();

export function bindResources(sessionId: string, manager: ResourceManager): void {
  bindings.set(sessionId, manager);
}

export function resourcesOf(sessionId: string): ResourceManager | undefined {
  return bindings.get(sessionId);
}

export function unbindResources(sessionId: string): void {
  bindings.delete(sessionId);
}

export { defaultOutputEstimate };

/** Rough tokens per image part (providers bill a few hundred to a couple of thousand). */
const imageTokens = 1000;
/** Framing tokens per message (role, separators). */
const messageOverhead = 4;

/**
 * A cheap, deliberately rough estimate of a request's size: about four characters per token for text, tool
 * specs and the output schema, plus what the call is expected to write (`expectedOutput`, the running mean the
 * manager learned, else a small default), never more than its `maxOutputTokens`. It is only a reservation: the
 * settlement replaces it with the provider's count, and a budget can be exceeded by at most one call.
 */
export function estimateRequest(
  request: ModelRequest,
  expectedOutput: number = defaultOutputEstimate,
): { input: number; output: number } {
  let chars = 0;
  let extra = 0;
  for (const message of request.messages) {
    extra += messageOverhead;
    chars += contentChars(message);
    if (message.role === 'assistant' && message.toolCalls) {
      for (const call of message.toolCalls)
        chars += call.name.length + JSON.stringify(call.args ?? null).length;
    }
  }
  for (const tool of request.tools) chars += specChars(tool);
  if (request.output) chars += JSON.stringify(request.output.schema).length;
  for (const message of request.messages) {
    if (typeof message.content !== 'string')
      for (const part of message.content) if (part.type === 'image') extra += imageTokens;
  }
  return {
    input: Math.ceil(chars / 4) + extra,
    output: Math.min(expectedOutput, request.settings.maxOutputTokens ?? expectedOutput),
  };
}

/** Tool specs are the same objects call after call (the registry builds them once): measure each once. */
const specSizes = new WeakMap<ToolSpec, number>();

function specChars(tool: ToolSpec): number {
  let size = specSizes.get(tool);
  if (size === undefined) {
    size = tool.name.length + tool.description.length + JSON.stringify(tool.parameters).length;
    specSizes.set(tool, size);
  }
  return size;
}

function contentChars(message: Message): number {
  if (typeof message.content === 'string') return message.content.length;
  let chars = 0;
  for (const part of message.content) if (part.type === 'text') chars += part.text.length;
  return chars;
}
