import type {
  FunctionTool,
  ResponseCreateParamsStreaming,
  ResponseInputContent,
  ResponseInputItem,
  Tool,
} from 'openai/resources/responses/responses';
import { ConfigError } from '../core/errors.ts';
import type { JsonObject, JsonValue } from '../core/json.ts';
import type { AssistantMessage, ContentPart, Message, ReasoningBlock, ToolCall } from '../core/messages.ts';
import type { ModelRequest } from '../core/model.ts';
import type { ResponsesRequestOptions } from './openai-responses.ts';
import { openaiResponsesProviderName } from './provider-names.ts';
import { providerToolsFor, rawToolsOf } from './provider-tools.ts';
import { withoutSchemaKeyword } from './schema-keyword.ts';
import { paragraphBreak } from './text-segments.ts';

export { openaiResponsesProviderName };

/** `instructions` plus `input` items, from the provider-neutral history. */
export interface ResponsesConversation {
  instructions: string | undefined;
  input: ResponseInputItem[];
}

/**
 * Formats a provider-neutral history as Responses API input items, statelessly (no previous_response_id):
 * - system messages are joined into `instructions`;
 * - an assistant turn becomes its reasoning items first (this provider's only, sent back exactly as received,
 *   with their ids and encrypted_content), then an assistant message with its text, then one `function_call`
 *   item per tool call (without the `fc_` item id: with store=false only the call_id matters); a turn kept
 *   whole (messages with their phase, built-in tool calls) goes back item for item, as it came;
 * - tool results become `function_call_output` items;
 * - images become `input_image` parts (URLs as they are, base64 as data URLs).
 */
export function toResponsesConversation(history: readonly Message[]): ResponsesConversation {
  const instructions: string[] = [];
  const input: ResponseInputItem[] = [];
  for (const message of history) {
    switch (message.role) {
      case 'system':
        instructions.push(message.content);
        break;
      case 'user':
        input.push({
          role: 'user',
          content:
            typeof message.content === 'string' ? message.content : message.content.map(toInputContent),
        });
        break;
      case 'assistant':
        input.push(...assistantItems(message));
        break;
      case 'tool':
        input.push({ type: 'function_call_output', call_id: message.toolCallId, output: message.content });
        break;
    }
  }
  return { instructions: instructions.length > 0 ? instructions.join('\n\n') : undefined, input };
}

function assistantItems(message: AssistantMessage): ResponseInputItem[] {
  const kept: JsonObject[] = [];
  for (const block of message.reasoning ?? []) {
    const data = keptItemData(block);
    if (data) kept.push(data);
  }
  const calls = message.toolCalls ?? [];
  const messages = kept.filter((data) => data.type === 'message');
  const whole = kept.some((data) => data.type === 'message' || data.type === 'function_call');
  if (whole && textStillFits(messages, message.content)) {
    return wholeTurn(kept, calls, messages.length === 1 ? message.content : undefined);
  }
  // The usual turn, or one whose text was changed since (a filter, a redaction): the kept items in their
  // order, then the message's own text (with the phase it had) and calls.
  const items: ResponseInputItem[] = [];
  for (const data of kept) {
    if (data.type !== 'message' && data.type !== 'function_call') items.push(asInputItem(data));
  }
  const phase = messages.at(-1)?.phase;
  if (message.content.length > 0) items.push(assistantText(message.content, phase));
  for (const call of calls) items.push(functionCallItem(call));
  return items;
}

/**
 * A turn kept whole: every item goes back where it stood; a message with its phase (and its own text, or the
 * assistant message's when the turn had one message), each call from the message's own tool calls (by call id;
 * a call the loop dropped is left out, one the turn did not mark goes at the end).
 */
function wholeTurn(
  kept: readonly JsonObject[],
  calls: readonly ToolCall[],
  onlyText: string | undefined,
): ResponseInputItem[] {
  const byId = new Map(calls.map((call) => [call.id, call]));
  const placed = new Set<string>();
  const items: ResponseInputItem[] = [];
  for (const data of kept) {
    if (data.type === 'function_call') {
      const id = typeof data.call_id === 'string' ? data.call_id : '';
      const call = byId.get(id);
      if (call !== undefined && !placed.has(id)) {
        placed.add(id);
        items.push(functionCallItem(call));
      }
    } else if (data.type === 'message') {
      const text = onlyText ?? (typeof data.content === 'string' ? data.content : '');
      if (text.length > 0) items.push(assistantText(text, data.phase));
    } else {
      items.push(asInputItem(data));
    }
  }
  for (const call of calls) if (!placed.has(call.id)) items.push(functionCallItem(call));
  return items;
}

/**
 * Whether the kept messages still carry the assistant message's text: one message carries whatever it is now;
 * none, only no text; several, exactly their texts.
 */
function textStillFits(messages: readonly JsonObject[], content: string): boolean {
  if (messages.length === 1) return true;
  if (messages.length === 0) return content === '';
  const texts = messages.map((data) => (typeof data.content === 'string' ? data.content : ''));
  return texts.filter((text) => text !== '').join(paragraphBreak) === content;
}

/** An assistant message; with its `phase` (commentary or final answer), which the API wants back. */
function assistantText(content: string, phase: JsonValue | undefined): ResponseInputItem {
  if (phase === 'commentary' || phase === 'final_answer') return { role: 'assistant', content, phase };
  return { role: 'assistant', content };
}

function functionCallItem(call: ToolCall): ResponseInputItem {
  return { type: 'function_call', call_id: call.id, name: call.name, arguments: argumentsText(call.args) };
}

function asInputItem(data: JsonObject): ResponseInputItem {
  return data as unknown as ResponseInputItem;
}

/**
 * Only this provider's items go back, exactly as they came; anything else is dropped. A reasoning item needs
 * its id; every other kept item needs a string `type`.
 */
function keptItemData(block: ReasoningBlock): JsonObject | undefined {
  if (block.provider !== openaiResponsesProviderName) return undefined;
  const data = block.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return undefined;
  if (data.type === 'reasoning') return typeof data.id === 'string' ? data : undefined;
  return typeof data.type === 'string' ? data : undefined;
}

/** Parsed arguments go back as JSON text; raw text (arguments that did not parse) goes back as it came. */
function argumentsText(args: JsonValue): string {
  return typeof args === 'string' ? args : JSON.stringify(args);
}

function toInputContent(part: ContentPart): ResponseInputContent {
  if (part.type === 'text') return { type: 'input_text', text: part.text };
  let imageUrl: string;
  if ('data' in part) {
    if (part.data.startsWith('data:')) {
      throw new ConfigError(
        "An image part's data must be the bare base64 payload; pass a data: URL as { url } instead.",
      );
    }
    if (!part.mediaType.startsWith('image/')) {
      throw new ConfigError(`An image part needs an image/* media type; got "${part.mediaType}".`);
    }
    imageUrl = `data:${part.mediaType};base64,${part.data}`;
  } else {
    if (!/^(https?:\/\/|data:image\/)/i.test(part.url)) {
      throw new ConfigError(
        `The Responses API takes images as http(s) URLs or data:image/ URLs; got "${part.url.slice(0, 60)}".`,
      );
    }
    imageUrl = part.url;
  }
  return { type: 'input_image', image_url: imageUrl, detail: part.detail ?? 'auto' };
}

/**
 * The whole streaming request: `store: false` with `include: ['reasoning.encrypted_content']`, so every turn
 * carries its own reasoning; structured output through `text.format` (json_schema). Responses has no stop
 * sequences, so `settings.stopSequences` is not sent. `settings.providerOptions` are spread in first (for
 * example `reasoning: { effort }`), so the fields we own win.
 */
export function toResponsesRequest(
  request: ModelRequest,
  model: string,
  options: ResponsesRequestOptions = {},
): ResponseCreateParamsStreaming {
  const { instructions, input } = toResponsesConversation(request.messages);
  const settings = request.settings;
  const strict = options.strictSchemas ?? false;
  const body: ResponseCreateParamsStreaming = {
    ...(settings.providerOptions as Partial<ResponseCreateParamsStreaming> | undefined),
    model,
    input,
    stream: true,
    store: false,
  };
  if (options.includeReasoning ?? true) body.include = ['reasoning.encrypted_content'];
  if (instructions !== undefined) body.instructions = instructions;
  const label = `openai.responses("${model}")`;
  const providerTools = providerToolsFor(
    settings,
    { family: openaiResponsesProviderName, label },
    request.tools,
  );
  const tools: Tool[] = request.tools.map(
    (tool): FunctionTool => ({
      type: 'function',
      name: tool.name,
      description: tool.description,
      parameters: strict ? withoutSchemaKeyword(tool.parameters) : tool.parameters,
      strict,
    }),
  );
  // Raw tools of providerOptions and provider tools (web search, file search) go beside ours, not instead.
  for (const raw of rawToolsOf(settings.providerOptions, label)) tools.push(raw as unknown as Tool);
  for (const tool of providerTools) tools.push(tool.definition as unknown as Tool);
  if (tools.length > 0) body.tools = tools;
  if (request.output) {
    body.text = {
      ...body.text,
      format: { type: 'json_schema', name: request.output.name, schema: request.output.schema, strict },
    };
  }
  if (settings.maxOutputTokens !== undefined) body.max_output_tokens = settings.maxOutputTokens;
  if (settings.temperature !== undefined) body.temperature = settings.temperature;
  if (settings.topP !== undefined) body.top_p = settings.topP;
  return body;
}
