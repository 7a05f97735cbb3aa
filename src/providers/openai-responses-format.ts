import type {
  FunctionTool,
  ResponseCreateParamsStreaming,
  ResponseInputContent,
  ResponseInputItem,
} from 'openai/resources/responses/responses';
import { ConfigError } from '../core/errors.ts';
import type { JsonValue } from '../core/json.ts';
import type { AssistantMessage, ContentPart, Message, ReasoningBlock } from '../core/messages.ts';
import type { ModelRequest } from '../core/model.ts';

export const openaiResponsesProviderName = 'openai-responses';

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
 *   item per tool call (without the `fc_` item id: with store=false only the call_id matters);
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
  const items: ResponseInputItem[] = [];
  for (const block of message.reasoning ?? []) {
    const item = responsesReasoningItem(block);
    if (item) items.push(item);
  }
  if (message.content.length > 0) items.push({ role: 'assistant', content: message.content });
  for (const call of message.toolCalls ?? []) {
    items.push({
      type: 'function_call',
      call_id: call.id,
      name: call.name,
      arguments: argumentsText(call.args),
    });
  }
  return items;
}

function responsesReasoningItem(block: ReasoningBlock): ResponseInputItem | undefined {
  if (block.provider !== openaiResponsesProviderName) return undefined;
  const data = block.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return undefined;
  if (data.type !== 'reasoning' || typeof data.id !== 'string') return undefined;
  return data as unknown as ResponseInputItem;
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

export interface ResponsesRequestOptions {
  /**
   * Ask for reasoning items' encrypted_content so they can be carried back without server-side state
   * (default true). Turn it off for a server that rejects the `include` value.
   */
  includeReasoning?: boolean | undefined;
  /** Send tool and output schemas with `strict: true` (default false: strict mode needs every property required). */
  strictSchemas?: boolean | undefined;
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
  if (request.tools.length > 0) {
    body.tools = request.tools.map(
      (tool): FunctionTool => ({
        type: 'function',
        name: tool.name,
        description: tool.description,
        parameters: tool.parameters,
        strict,
      }),
    );
  }
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
