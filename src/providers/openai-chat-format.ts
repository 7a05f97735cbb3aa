import type {
  ChatCompletionContentPart,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionFunctionTool,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions/completions';
import type { JsonObject, JsonValue } from '../core/json.ts';
import type { AssistantMessage, ContentPart, Message, ReasoningBlock } from '../core/messages.ts';
import type { ModelRequest } from '../core/model.ts';
import type { ChatRequestOptions } from './openai-chat.ts';
import { openaiChatProviderName } from './provider-names.ts';
import { withoutSchemaKeyword } from './schema-keyword.ts';

export { openaiChatProviderName };

/**
 * The `data` of a reasoning block that carries a tool call's `extra_content` (Gemini's OpenAI endpoint puts the
 * thought signature there, `extra_content.google.thought_signature`, and wants it back on the same call).
 */
export interface ChatToolCallExtra {
  type: 'tool_call_extra';
  toolCallId: string;
  extra_content: JsonValue;
}

/**
 * Formats a provider-neutral history as Chat Completions messages:
 * - system messages stay `role: system`;
 * - user content parts become `text` / `image_url` parts (base64 images as data URLs);
 * - an assistant turn becomes one message with its text (null when it only calls tools) and `tool_calls`
 *   (arguments as JSON text; arguments that never parsed go back as the raw text the model sent); reasoning
 *   blocks of this provider that carry a call's `extra_content` are put back on that call, others are dropped;
 * - tool results become `role: tool` messages with their `tool_call_id`.
 * `providerName` says which reasoning blocks are ours (a compatible server is named by its user).
 */
export function toChatMessages(
  history: readonly Message[],
  providerName: string = openaiChatProviderName,
): ChatCompletionMessageParam[] {
  const messages: ChatCompletionMessageParam[] = [];
  for (const message of history) {
    switch (message.role) {
      case 'system':
        messages.push({ role: 'system', content: message.content });
        break;
      case 'user':
        messages.push({
          role: 'user',
          content: typeof message.content === 'string' ? message.content : message.content.map(toContentPart),
        });
        break;
      case 'assistant':
        messages.push(assistantMessage(message, providerName));
        break;
      case 'tool':
        messages.push({ role: 'tool', tool_call_id: message.toolCallId, content: message.content });
        break;
    }
  }
  return messages;
}

function assistantMessage(message: AssistantMessage, providerName: string): ChatCompletionMessageParam {
  const calls = message.toolCalls ?? [];
  if (calls.length === 0) return { role: 'assistant', content: message.content };
  const extras = toolCallExtras(message.reasoning ?? [], providerName);
  return {
    role: 'assistant',
    content: message.content.length > 0 ? message.content : null,
    tool_calls: calls.map((call) => {
      const toolCall: ChatCompletionMessageFunctionToolCall = {
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: argumentsText(call.args) },
      };
      const extra = extras.get(call.id);
      // Not in the SDK's types: Gemini's OpenAI endpoint reads it back from the call it sent it on.
      if (extra !== undefined) Object.assign(toolCall, { extra_content: extra });
      return toolCall;
    }),
  };
}

function toolCallExtras(blocks: readonly ReasoningBlock[], providerName: string): Map<string, JsonValue> {
  const extras = new Map<string, JsonValue>();
  for (const block of blocks) {
    if (block.provider !== providerName) continue;
    const data = block.data;
    if (typeof data !== 'object' || data === null || Array.isArray(data)) continue;
    if (data.type !== 'tool_call_extra' || typeof data.toolCallId !== 'string') continue;
    if (data.extra_content !== undefined) extras.set(data.toolCallId, data.extra_content);
  }
  return extras;
}

/** Parsed arguments go back as JSON text; raw text (arguments that did not parse) goes back as it came. */
function argumentsText(args: JsonValue): string {
  return typeof args === 'string' ? args : JSON.stringify(args);
}

function toContentPart(part: ContentPart): ChatCompletionContentPart {
  if (part.type === 'text') return { type: 'text', text: part.text };
  const url = 'data' in part ? `data:${part.mediaType};base64,${part.data}` : part.url;
  const imageUrl: { url: string; detail?: 'low' | 'high' | 'auto' } = { url };
  if (part.detail !== undefined) imageUrl.detail = part.detail;
  return { type: 'image_url', image_url: imageUrl };
}

/**
 * The whole streaming request. Tools become function tools; the output schema becomes
 * `response_format: json_schema` (sent only when the request has one, which the loop does only with tools off).
 * `settings.providerOptions` are spread in first (for example `reasoning_effort`), so the fields we own win.
 */
export function toChatRequest(
  request: ModelRequest,
  model: string,
  options: ChatRequestOptions = {},
  providerName: string = openaiChatProviderName,
): ChatCompletionCreateParamsStreaming {
  const settings = request.settings;
  const strictAllowed = options.strictSchemas ?? true;
  const body: ChatCompletionCreateParamsStreaming = {
    ...(settings.providerOptions as Partial<ChatCompletionCreateParamsStreaming> | undefined),
    model,
    messages: toChatMessages(request.messages, providerName),
    stream: true,
  };
  if (options.includeUsage ?? true) body.stream_options = { include_usage: true };
  if (request.tools.length > 0) {
    body.tools = request.tools.map((tool): ChatCompletionFunctionTool => {
      const strict = strictAllowed && isStrictCompatible(tool.parameters);
      const definition: ChatCompletionFunctionTool['function'] = {
        name: tool.name,
        description: tool.description,
        parameters: strict ? withoutSchemaKeyword(tool.parameters) : tool.parameters,
      };
      if (strict) definition.strict = true;
      return { type: 'function', function: definition };
    });
  }
  if (request.output) {
    const strict = strictAllowed && isStrictCompatible(request.output.schema);
    body.response_format = {
      type: 'json_schema',
      json_schema: { name: request.output.name, schema: request.output.schema, strict },
    };
  }
  if (settings.maxOutputTokens !== undefined) {
    body[options.maxTokensField ?? 'max_completion_tokens'] = settings.maxOutputTokens;
  }
  if (settings.temperature !== undefined) body.temperature = settings.temperature;
  if (settings.topP !== undefined) body.top_p = settings.topP;
  if (settings.stopSequences !== undefined && settings.stopSequences.length > 0) {
    body.stop = settings.stopSequences;
  }
  return body;
}

/**
 * Whether OpenAI's strict mode accepts a JSON Schema: an object at the root, every object closed
 * (`additionalProperties: false`) with all its properties required, and no `allOf` / `oneOf` / `not`.
 * A schema with optional properties is sent non-strict rather than rejected by the API.
 */
export function isStrictCompatible(schema: JsonObject): boolean {
  if (schema.type !== 'object') return false;
  return strictNode(schema);
}

function strictNode(node: JsonValue): boolean {
  if (Array.isArray(node)) return node.every(strictNode);
  if (typeof node !== 'object' || node === null) return true;
  if ('allOf' in node || 'oneOf' in node || 'not' in node) return false;
  const isObject = node.type === 'object' || (node.properties !== undefined && node.type === undefined);
  if (isObject) {
    if (node.additionalProperties !== false) return false;
    const properties = node.properties;
    const keys =
      typeof properties === 'object' && properties !== null && !Array.isArray(properties)
        ? Object.keys(properties)
        : [];
    const required = Array.isArray(node.required) ? node.required : [];
    if (!keys.every((key) => required.includes(key))) return false;
  }
  for (const [key, value] of Object.entries(node)) {
    if (key === 'enum' || key === 'const' || key === 'default' || key === 'examples') continue;
    if (key === 'properties' || key === '$defs' || key === 'definitions') {
      if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
        if (!Object.values(value).every(strictNode)) return false;
      }
      continue;
    }
    if (typeof value === 'object' && value !== null && !strictNode(value)) return false;
  }
  return true;
}
