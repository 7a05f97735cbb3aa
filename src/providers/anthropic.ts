import Anthropic from '@anthropic-ai/sdk';
import type { RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import { abortError } from '../core/abort.ts';
import { ConfigError } from '../core/errors.ts';
import type { ModelProvider, ModelRequest, ModelResponse, ModelSettings } from '../core/model.ts';
import { anthropicModelError, unreadableAnthropicEvent } from './anthropic-errors.ts';
import { anthropicProviderName, toAnthropicRequest } from './anthropic-format.ts';
import { AnthropicStreamReducer } from './anthropic-stream.ts';
import { withDefaultSettings } from './request-defaults.ts';
import { type RetryOptions, withRetries } from './retry.ts';

export interface AnthropicOptions extends RetryOptions {
  /** Defaults to the ANTHROPIC_API_KEY environment variable. */
  apiKey?: string | undefined;
  baseURL?: string | undefined;
  /** A fetch implementation for the SDK (tests, proxies). */
  fetch?: typeof fetch | undefined;
  /** Extra headers on every request (for example `anthropic-beta`). */
  headers?: Record<string, string> | undefined;
  /** `max_tokens` when the request's settings do not say (the API requires one). Default 4096. */
  maxTokens?: number | undefined;
  /** Defaults for every request; the request's own settings win. */
  settings?: ModelSettings | undefined;
}

/**
 * A ModelProvider for the Anthropic Messages API through the official SDK. Always streams; the SDK's own
 * retries are off (`maxRetries: 0`), retries are ours. Thinking blocks come back in `reasoning` and are sent
 * back unchanged by the history formatter (anthropic-format.ts).
 */
export function anthropic(model: string, options: AnthropicOptions = {}): ModelProvider {
  const apiKey = options.apiKey ?? process.env.ANTHROPIC_API_KEY;
  if (!apiKey) {
    throw new ConfigError(
      'The Anthropic provider needs an API key: pass { apiKey } or set the ANTHROPIC_API_KEY environment variable.',
    );
  }
  const clientOptions: ConstructorParameters<typeof Anthropic>[0] = { apiKey, maxRetries: 0 };
  if (options.baseURL !== undefined) clientOptions.baseURL = options.baseURL;
  if (options.fetch !== undefined) clientOptions.fetch = options.fetch;
  if (options.headers !== undefined) clientOptions.defaultHeaders = options.headers;
  const client = new Anthropic(clientOptions);

  return withRetries(
    {
      provider: anthropicProviderName,
      model,
      generate(request: ModelRequest): Promise<ModelResponse> {
        return streamAnthropicOnce(client, model, withDefaultSettings(request, options.settings), options);
      },
    },
    options,
  );
}

/** One streamed call, no retries: the deltas go out as they come, the whole response at the end. */
export async function streamAnthropicOnce(
  client: Anthropic,
  model: string,
  request: ModelRequest,
  options: Pick<AnthropicOptions, 'maxTokens'> = {},
): Promise<ModelResponse> {
  const body = toAnthropicRequest(
    request,
    model,
    options.maxTokens === undefined ? {} : { maxTokens: options.maxTokens },
  );
  const reducer = new AnthropicStreamReducer(request.onDelta);
  let streaming = false;
  try {
    if (request.signal.aborted) throw abortError(request.signal);
    const stream = await client.messages.create(body, { signal: request.signal });
    streaming = true;
    for await (const event of stream as AsyncIterable<RawMessageStreamEvent>) {
      try {
        reducer.push(event);
      } catch (error) {
        throw unreadableAnthropicEvent(error);
      }
    }
    // The SDK ends the iteration quietly when the signal aborts mid-stream: say so instead of "truncated".
    if (request.signal.aborted) throw abortError(request.signal);
    return reducer.finish();
  } catch (error) {
    if (request.signal.aborted) throw abortError(request.signal);
    throw anthropicModelError(error, streaming);
  }
}
