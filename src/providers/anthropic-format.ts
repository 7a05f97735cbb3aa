import type {
  ContentBlockParam,
  ImageBlockParam,
  MessageCreateParamsStreaming,
  MessageParam,
  TextBlockParam,
  Tool,
  ToolResultBlockParam,
  ToolUnion,
} from '@anthropic-ai/sdk/resources/messages';
import { ConfigError } from '../core/errors.ts';
import type { JsonObject, JsonValue } from '../core/json.ts';
import type { AssistantMessage, ContentPart, Message, ReasoningBlock, ToolCall } from '../core/messages.ts';
import type { ModelRequest } from '../core/model.ts';
import { anthropicProviderName } from './provider-names.ts';
import { isDeferred, providerToolsFor, rawToolsOf } from './provider-tools.ts';
import { joinTextSegments } from './text-segments.ts';

/** The Messages API requires `max_tokens`; this is what we send when neither the request nor the options say. */
export const defaultAnthropicMaxTokens = 4096;

export { anthropicProviderName };

type ImageMediaType = 'image/jpeg' | 'image/png' | 'image/gif' | 'image/webp';
const imageMediaTypes: readonly string[] = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];

/** `system` plus `messages` in the Messages API shape, from the provider-neutral history. */
export interface AnthropicConversation {
  system: string | undefined;
  messages: MessageParam[];
}

/**
 * Formats a provider-neutral history for the Messages API:
 * - system messages (wherever they are) are joined into the top-level `system` string;
 * - assistant turns become content blocks in the order the API wants them back: this provider's thinking and
 *   redacted_thinking blocks first (unchanged, with their signatures), then the text, then `tool_use` blocks;
 *   a turn kept whole (server tool calls and their results, text with citations, several text blocks) goes
 *   back block for block, as it came. Blocks of other providers are dropped;
 * - tool results become user-role `tool_result` blocks, consecutive ones merged into one user message (the API
 *   wants every result of a turn in the message right after it);
 * - images become `image` blocks (base64, or url for http(s); a data: URL goes as base64); a media type the
 *   API does not take, or another URL scheme, is a ConfigError.
 * Assistant turns with nothing in them are dropped: the API rejects empty content. Assistant messages that follow
 * each other (a turn continued after `pause_turn`) go as one turn.
 */
export function toAnthropicConversation(history: readonly Message[]): AnthropicConversation {
  const systemParts: string[] = [];
  const messages: MessageParam[] = [];
  let pendingResults: ToolResultBlockParam[] = [];

  const flushResults = (): void => {
    if (pendingResults.length === 0) return;
    messages.push({ role: 'user', content: pendingResults });
    pendingResults = [];
  };

  for (const message of history) {
    switch (message.role) {
      case 'system':
        systemParts.push(message.content);
        break;
      case 'tool': {
        const block: ToolResultBlockParam = {
          type: 'tool_result',
          tool_use_id: message.toolCallId,
          content: message.content,
        };
        if (message.isError) block.is_error = true;
        pendingResults.push(block);
        break;
      }
      case 'user':
        flushResults();
        messages.push({
          role: 'user',
          content: typeof message.content === 'string' ? message.content : message.content.map(toUserBlock),
        });
        break;
      case 'assistant': {
        flushResults();
        const content = assistantBlocks(message);
        if (content.length === 0) break;
        // A turn continued after a pause (pause_turn) is two assistant messages here: the API takes one turn.
        const last = messages[messages.length - 1];
        if (last?.role === 'assistant' && Array.isArray(last.content)) last.content.push(...content);
        else messages.push({ role: 'assistant', content });
        break;
      }
    }
  }
  flushResults();
  return { system: systemParts.length > 0 ? systemParts.join('\n\n') : undefined, messages };
}

function assistantBlocks(message: AssistantMessage): ContentBlockParam[] {
  const kept: JsonObject[] = [];
  for (const block of message.reasoning ?? []) {
    const data = keptBlockData(block);
    if (data) kept.push(data);
  }
  const calls = message.toolCalls ?? [];
  if (kept.some(isTurnMarker) && joinTextSegments(kept.map(textOf)) === message.content) {
    return wholeTurn(kept, calls);
  }
  // The usual turn, or one whose text was changed since (a filter, a redaction): the kept blocks in their
  // order, then the message's own text and calls.
  const blocks: ContentBlockParam[] = [];
  for (const data of kept) {
    if (!isTurnMarker(data)) blocks.push(data as unknown as ContentBlockParam);
  }
  if (message.content.length > 0) blocks.push({ type: 'text', text: message.content });
  for (const call of calls) blocks.push(toolUseBlock(call));
  return blocks;
}

/**
 * A turn kept whole (server tool calls, citations, several text blocks): every block goes back where it stood,
 * each call from the message's own tool calls (by id; a call the loop dropped is left out, one the turn did not
 * mark goes at the end).
 */
function wholeTurn(kept: readonly JsonObject[], calls: readonly ToolCall[]): ContentBlockParam[] {
  const byId = new Map(calls.map((call) => [call.id, call]));
  const placed = new Set<string>();
  const blocks: ContentBlockParam[] = [];
  for (const data of kept) {
    if (data.type === 'tool_use') {
      const id = typeof data.id === 'string' ? data.id : '';
      const call = byId.get(id);
      if (call !== undefined && !placed.has(id)) {
        placed.add(id);
        blocks.push(toolUseBlock(call));
      }
    } else if (data.type !== 'text' || data.text !== '') {
      blocks.push(data as unknown as ContentBlockParam);
    }
  }
  for (const call of calls) if (!placed.has(call.id)) blocks.push(toolUseBlock(call));
  return blocks;
}

function toolUseBlock(call: ToolCall): ContentBlockParam {
  return { type: 'tool_use', id: call.id, name: call.name, input: toolInput(call.args) };
}

/** Text and tool_use blocks are kept only when the whole turn is (see anthropic-stream.ts). */
function isTurnMarker(data: JsonObject): boolean {
  return data.type === 'text' || data.type === 'tool_use';
}

function textOf(data: JsonObject): string | undefined {
  return data.type === 'text' && typeof data.text === 'string' ? data.text : undefined;
}

/**
 * Only this provider's blocks go back, exactly as they came; anything else is dropped. Thinking blocks need
 * their signature; every other kept block needs a string `type`.
 */
function keptBlockData(block: ReasoningBlock): JsonObject | undefined {
  if (block.provider !== anthropicProviderName) return undefined;
  const data = block.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return undefined;
  switch (data.type) {
    case 'thinking':
      if (typeof data.thinking === 'string' && typeof data.signature === 'string') {
        return { type: 'thinking', thinking: data.thinking, signature: data.signature };
      }
      return undefined;
    case 'redacted_thinking':
      return typeof data.data === 'string' ? { type: 'redacted_thinking', data: data.data } : undefined;
    case 'text':
      return typeof data.text === 'string' ? data : undefined;
    case 'tool_use':
      return typeof data.id === 'string' ? data : undefined;
    default:
      return typeof data.type === 'string' ? data : undefined;
  }
}

/**
 * `tool_use.input` must be an object. Arguments that were not valid JSON (kept as raw text) are sent back
 * wrapped, so the history stays acceptable to the API and the model still sees what it wrote.
 */
function toolInput(args: JsonValue): JsonValue {
  if (typeof args === 'object' && args !== null && !Array.isArray(args)) return args;
  return { _raw: typeof args === 'string' ? args : JSON.stringify(args) };
}

function toUserBlock(part: ContentPart): TextBlockParam | ImageBlockParam {
  if (part.type === 'text') return { type: 'text', text: part.text };
  if ('data' in part) return base64Image(part.mediaType, part.data);
  const dataUrl = parseDataUrl(part.url);
  if (dataUrl) return base64Image(dataUrl.mediaType, dataUrl.data);
  if (!/^https?:\/\//i.test(part.url)) {
    throw new ConfigError(
      `Anthropic takes images as http(s) URLs or base64 data; got the URL "${part.url.slice(0, 60)}".`,
    );
  }
  return { type: 'image', source: { type: 'url', url: part.url } };
}

function base64Image(mediaType: string, data: string): ImageBlockParam {
  if (!imageMediaTypes.includes(mediaType)) {
    throw new ConfigError(
      `Anthropic accepts images of type ${imageMediaTypes.join(', ')}; got "${mediaType}".`,
    );
  }
  if (data.startsWith('data:')) {
    throw new ConfigError(
      "An image part's data must be the bare base64 payload; pass a data: URL as { url } instead.",
    );
  }
  return { type: 'image', source: { type: 'base64', media_type: mediaType as ImageMediaType, data } };
}

/** `data:<media type>;base64,<payload>` split in two; undefined for any other URL. */
function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (!match) return undefined;
  return { mediaType: (match[1] ?? '').toLowerCase(), data: match[2] ?? '' };
}

export interface AnthropicRequestOptions {
  maxTokens?: number | undefined;
}

/**
 * The whole streaming request body. Structured output (`request.output`) uses the Messages API's native
 * `output_config.format` (type json_schema), which this SDK version supports: no tool trick, no prompt hack.
 * `settings.providerOptions` are spread in first (for example `thinking`), so the fields we own win; tools are
 * merged instead (see anthropicTools).
 */
export function toAnthropicRequest(
  request: ModelRequest,
  model: string,
  options: AnthropicRequestOptions = {},
): MessageCreateParamsStreaming {
  const { system, messages } = toAnthropicConversation(request.messages);
  const settings = request.settings;
  const body: MessageCreateParamsStreaming = {
    ...(settings.providerOptions as Partial<MessageCreateParamsStreaming> | undefined),
    model,
    max_tokens: settings.maxOutputTokens ?? options.maxTokens ?? defaultAnthropicMaxTokens,
    messages,
    stream: true,
  };
  if (system !== undefined) body.system = system;
  const tools = anthropicTools(request, model);
  if (tools.length > 0) body.tools = tools;
  if (request.output) {
    body.output_config = {
      ...body.output_config,
      format: { type: 'json_schema', schema: request.output.schema },
    };
  }
  // This SDK version no longer types the sampling parameters; the API still takes them for the models that do.
  const sampling = body as MessageCreateParamsStreaming & { temperature?: number; top_p?: number };
  if (settings.temperature !== undefined) sampling.temperature = settings.temperature;
  if (settings.topP !== undefined) sampling.top_p = settings.topP;
  if (settings.stopSequences && settings.stopSequences.length > 0)
    body.stop_sequences = settings.stopSequences;
  return body;
}

/**
 * The request's `tools`: the function tools (those a tool search defers marked `defer_loading`), then any raw
 * tools the user put in `settings.providerOptions.tools`, then the provider tools of `settings.providerTools`
 * (server tools such as web search). A provider tool made for another provider is a ConfigError.
 */
export function anthropicTools(request: ModelRequest, model: string): ToolUnion[] {
  const label = `anthropic("${model}")`;
  const providerTools = providerToolsFor(
    request.settings,
    { family: anthropicProviderName, label },
    request.tools,
  );
  const tools: ToolUnion[] = request.tools.map((spec): Tool => {
    const tool: Tool = {
      name: spec.name,
      description: spec.description,
      input_schema: spec.parameters as Tool['input_schema'],
    };
    if (providerTools.length > 0 && isDeferred(spec.name, providerTools)) tool.defer_loading = true;
    return tool;
  });
  for (const raw of rawToolsOf(request.settings.providerOptions, label))
    tools.push(raw as unknown as ToolUnion);
  for (const tool of providerTools) tools.push(tool.definition as unknown as ToolUnion);
  return tools;
}
