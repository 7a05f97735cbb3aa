import type { ClientOptions } from 'openai';
import { ConfigError } from '../core/errors.ts';
import type { ModelProvider, ModelRequest, ModelResponse, ModelSettings } from '../core/model.ts';
import { openaiResponses } from './openai-responses.ts';
import { openaiTools } from './openai-tools.ts';
import { openaiChatProviderName } from './provider-names.ts';
import { providerToolsFor } from './provider-tools.ts';
import { withDefaultSettings } from './request-defaults.ts';
import { type RetryOptions, withRetries } from './retry.ts';
import { assertSdkInstalled, lazySdkClient } from './sdk-loader.ts';

export interface ChatRequestOptions {
  /**
   * Send tool and output schemas with `strict: true` when the schema allows it (every object closed with
   * `additionalProperties: false` and every property required). Default true; compatible servers default false.
   */
  strictSchemas?: boolean | undefined;
  /** Ask for the usage chunk (`stream_options.include_usage`). Default true. */
  includeUsage?: boolean | undefined;
  /**
   * The field that carries `settings.maxOutputTokens`: OpenAI wants `max_completion_tokens` (reasoning models
   * reject `max_tokens`), most compatible servers only know `max_tokens`. Default `max_completion_tokens`.
   */
  maxTokensField?: 'max_completion_tokens' | 'max_tokens' | undefined;
}

export interface OpenAIChatOptions extends ChatRequestOptions, RetryOptions {
  /** Defaults to the OPENAI_API_KEY environment variable. */
  apiKey?: string | undefined;
  baseURL?: string | undefined;
  organization?: string | undefined;
  /** A fetch implementation for the SDK (tests, proxies). */
  fetch?: typeof fetch | undefined;
  headers?: Record<string, string> | undefined;
  /** Defaults for every request; the request's own settings win. */
  settings?: ModelSettings | undefined;
  /** Ids for tool calls the server sent without a usable one ('' or '0'). Default: `call_<uuid>`. */
  generateId?: (() => string) | undefined;
}

/**
 * A ModelProvider for OpenAI Chat Completions through the official `openai` package, always streaming with
 * `stream_options.include_usage`. The SDK's own retries are off; ours (retry.ts) wrap every call.
 */
export function openaiChat(model: string, options: OpenAIChatOptions = {}): ModelProvider {
  assertSdkInstalled('openai', 'openai()');
  const apiKey = options.apiKey ?? process.env.OPENAI_API_KEY;
  if (!apiKey) {
    throw new ConfigError(
      'The OpenAI provider needs an API key: pass { apiKey } or set the OPENAI_API_KEY environment variable.',
    );
  }
  return chatProvider(model, { ...options, apiKey }, openaiChatProviderName, 'openai');
}

/**
 * The Chat Completions adapter behind `openai()` and `openaiCompatible()`. `providerName` names the provider in
 * responses, errors and reasoning blocks; `factory` is the function the user called (`openai`), for error
 * messages. Provider tools (web search and the like) are refused: Chat Completions has none of them.
 */
export function chatProvider(
  model: string,
  options: OpenAIChatOptions & { apiKey: string },
  providerName: string,
  factory: string,
): ModelProvider {
  const label = `${factory}("${model}")`;
  providerToolsFor(options.settings, { family: undefined, label });
  const clientOptions: ClientOptions = { apiKey: options.apiKey, maxRetries: 0 };
  if (options.baseURL !== undefined) clientOptions.baseURL = options.baseURL;
  if (options.organization !== undefined) clientOptions.organization = options.organization;
  if (options.headers !== undefined) clientOptions.defaultHeaders = options.headers;
  const connect = lazySdkClient('openai', `${factory}()`, (sdk) => new sdk.OpenAI(clientOptions));
  const generateId = options.generateId ?? (() => `call_${crypto.randomUUID().replaceAll('-', '')}`);
  const requestOptions: ChatRequestOptions = {};
  if (options.strictSchemas !== undefined) requestOptions.strictSchemas = options.strictSchemas;
  if (options.includeUsage !== undefined) requestOptions.includeUsage = options.includeUsage;
  if (options.maxTokensField !== undefined) requestOptions.maxTokensField = options.maxTokensField;

  const once: ModelProvider = {
    provider: providerName,
    model,
    async generate(request: ModelRequest): Promise<ModelResponse> {
      // The call's code loads on the first call, with the SDK: importing troupe/providers stays light. One client
      // for every call, made after it; its fetch wrapper learns each call's [DONE] watcher from its fetchOptions.
      const { doneWatchingFetch, streamChatOnce } = await import('./openai-chat-call.ts');
      clientOptions.fetch ??= doneWatchingFetch(options.fetch ?? globalThis.fetch);
      const { sdk, client } = await connect();
      return streamChatOnce(sdk, client, model, withDefaultSettings(request, options.settings), {
        requestOptions,
        generateId,
        providerName,
        label,
      });
    },
  };
  return withRetries(once, options);
}

/**
 * OpenAI's models, one name per API as in the AI SDK: `openai.chat(model)` is Chat Completions and `openai(model)`
 * its short form; `openai.responses(model)` the Responses API; `openai.tools` builds the Responses API's built-in
 * tools (web search, file search).
 */
export interface OpenAIFactory {
  (model: string, options?: OpenAIChatOptions): ModelProvider;
  chat: typeof openaiChat;
  responses: typeof openaiResponses;
  tools: typeof openaiTools;
}

export const openai: OpenAIFactory = Object.assign(
  (model: string, options?: OpenAIChatOptions) => openaiChat(model, options),
  { chat: openaiChat, responses: openaiResponses, tools: openaiTools },
);
