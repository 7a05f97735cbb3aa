import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions/completions';
import { abortError } from '../core/abort.ts';
import { ConfigError } from '../core/errors.ts';
import type { ModelProvider, ModelRequest, ModelResponse, ModelSettings } from '../core/model.ts';
import { chatModelError } from './openai-chat-errors.ts';
import { type ChatRequestOptions, openaiChatProviderName, toChatRequest } from './openai-chat-format.ts';
import { ChatStreamReducer } from './openai-chat-stream.ts';
import { openaiResponses } from './openai-responses.ts';
import { withDefaultSettings } from './request-defaults.ts';
import { type RetryOptions, withRetries } from './retry.ts';

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
  const apiKey = options.apiKey ?? process.env.OPENAI_API_KEY;
  if (!apiKey) {
    throw new ConfigError(
      'The OpenAI provider needs an API key: pass { apiKey } or set the OPENAI_API_KEY environment variable.',
    );
  }
  return chatProvider(model, { ...options, apiKey }, openaiChatProviderName);
}

/**
 * The Chat Completions adapter behind `openai()` and `openaiCompatible()`. `providerName` names the provider in
 * responses, errors and reasoning blocks.
 */
export function chatProvider(
  model: string,
  options: OpenAIChatOptions & { apiKey: string },
  providerName: string,
): ModelProvider {
  const clientOptions: ConstructorParameters<typeof OpenAI>[0] = { apiKey: options.apiKey, maxRetries: 0 };
  if (options.baseURL !== undefined) clientOptions.baseURL = options.baseURL;
  if (options.organization !== undefined) clientOptions.organization = options.organization;
  if (options.headers !== undefined) clientOptions.defaultHeaders = options.headers;
  // One client for every call; the fetch wrapper learns each call's [DONE] watcher from its fetchOptions.
  clientOptions.fetch = doneWatchingFetch(options.fetch ?? globalThis.fetch);
  const client = new OpenAI(clientOptions);
  const generateId = options.generateId ?? (() => `call_${randomUUID().replaceAll('-', '')}`);
  const requestOptions: ChatRequestOptions = {};
  if (options.strictSchemas !== undefined) requestOptions.strictSchemas = options.strictSchemas;
  if (options.includeUsage !== undefined) requestOptions.includeUsage = options.includeUsage;
  if (options.maxTokensField !== undefined) requestOptions.maxTokensField = options.maxTokensField;

  const once: ModelProvider = {
    provider: providerName,
    model,
    generate(request: ModelRequest): Promise<ModelResponse> {
      return streamChatOnce(client, model, withDefaultSettings(request, options.settings), {
        requestOptions,
        generateId,
        providerName,
      });
    },
  };
  return withRetries(once, options);
}

export interface ChatCallOptions {
  requestOptions: ChatRequestOptions;
  generateId: () => string;
  providerName: string;
}

/**
 * One streamed call, no retries. The SDK ends its iteration quietly when the connection drops after a whole
 * event, so the response body is watched for the `[DONE]` line: a stream that stops without it, and without a
 * finish_reason or usage chunk, is reported as truncated (and retried by the wrapper when nothing was emitted).
 */
export async function streamChatOnce(
  client: OpenAI,
  model: string,
  request: ModelRequest,
  options: ChatCallOptions,
): Promise<ModelResponse> {
  const body = toChatRequest(request, model, options.requestOptions, options.providerName);
  const reducer = new ChatStreamReducer(options.generateId, request.onDelta, options.providerName);
  const watch: DoneWatch = { done: false };
  // The SDK passes per-request fetchOptions through to fetch, where doneWatchingFetch picks the watcher up.
  const fetchOptions = { [doneWatchKey]: watch } as SdkFetchOptions;
  try {
    if (request.signal.aborted) throw abortError(request.signal);
    const stream = await client.chat.completions.create(body, { signal: request.signal, fetchOptions });
    for await (const chunk of stream as AsyncIterable<ChatCompletionChunk>) reducer.push(chunk);
    if (request.signal.aborted) throw abortError(request.signal);
    return reducer.finish(watch.done);
  } catch (error) {
    if (request.signal.aborted) throw abortError(request.signal);
    throw chatModelError(error, options.providerName);
  }
}

type SdkFetchOptions = NonNullable<
  NonNullable<Parameters<OpenAI['chat']['completions']['create']>[1]>['fetchOptions']
>;

const doneLine = 'data: [DONE]';
const doneWatchKey = Symbol('troupe.doneWatch');

interface DoneWatch {
  done: boolean;
}

/**
 * A fetch that passes the body through unchanged and, for a call that brought a watcher in its init, notes
 * whether the SSE `[DONE]` line went by (the SDK does not tell).
 */
function doneWatchingFetch(baseFetch: typeof fetch): typeof fetch {
  return async (input, init) => {
    const watch = (init as Record<symbol, DoneWatch | undefined> | undefined)?.[doneWatchKey];
    const response = await baseFetch(input, init);
    if (watch === undefined || !response.ok || response.body === null) return response;
    const decoder = new TextDecoder();
    let tail = '';
    const watcher = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        if (!watch.done) {
          tail = (tail + decoder.decode(chunk, { stream: true })).slice(-64);
          if (tail.includes(doneLine)) watch.done = true;
        }
        controller.enqueue(chunk);
      },
    });
    return new Response(response.body.pipeThrough(watcher), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

/** `openai(model)` is Chat Completions; `openai.responses(model)` the Responses API; `openai.chat` an alias. */
export interface OpenAIFactory {
  (model: string, options?: OpenAIChatOptions): ModelProvider;
  chat: typeof openaiChat;
  responses: typeof openaiResponses;
}

export const openai: OpenAIFactory = Object.assign(
  (model: string, options?: OpenAIChatOptions) => openaiChat(model, options),
  { chat: openaiChat, responses: openaiResponses },
);
