import type OpenAI from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions/completions';
import { abortError } from '../core/abort.ts';
import type { ModelRequest, ModelResponse } from '../core/model.ts';
import type { ChatRequestOptions } from './openai-chat.ts';
import { chatModelError } from './openai-chat-errors.ts';
import { toChatRequest } from './openai-chat-format.ts';
import { ChatStreamReducer } from './openai-chat-stream.ts';
import { providerToolsFor } from './provider-tools.ts';
import type { OpenAISdk } from './sdk-loader.ts';

export interface ChatCallOptions {
  requestOptions: ChatRequestOptions;
  generateId: () => string;
  providerName: string;
  /** The adapter as the user wrote it, e.g. `openai("gpt-5-mini")`, for configuration errors. */
  label: string;
}

/**
 * One streamed call, no retries. The SDK ends its iteration quietly when the connection drops after a whole
 * event, so the response body is watched for the `[DONE]` line: a stream that stops without it, and without a
 * finish_reason or usage chunk, is reported as truncated (and retried by the wrapper when nothing was emitted).
 */
export async function streamChatOnce(
  sdk: OpenAISdk,
  client: OpenAI,
  model: string,
  request: ModelRequest,
  options: ChatCallOptions,
): Promise<ModelResponse> {
  providerToolsFor(request.settings, { family: undefined, label: options.label });
  const body = toChatRequest(request, model, options.requestOptions, options.providerName);
  const reducer = new ChatStreamReducer(options.generateId, request.onDelta, options.providerName);
  const watch: DoneWatch = { done: false };
  // The SDK passes per-request fetchOptions through to fetch, where doneWatchingFetch picks the watcher up.
  const fetchOptions = { [doneWatchKey]: watch } as SdkFetchOptions;
  let streaming = false;
  try {
    if (request.signal.aborted) throw abortError(request.signal);
    const stream = await client.chat.completions.create(body, { signal: request.signal, fetchOptions });
    streaming = true;
    for await (const chunk of stream as AsyncIterable<ChatCompletionChunk>) reducer.push(chunk);
    if (request.signal.aborted) throw abortError(request.signal);
    return reducer.finish(watch.done);
  } catch (error) {
    if (request.signal.aborted) throw abortError(request.signal);
    throw chatModelError(error, options.providerName, sdk, streaming);
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
export function doneWatchingFetch(baseFetch: typeof fetch): typeof fetch {
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
