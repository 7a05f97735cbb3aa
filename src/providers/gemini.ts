import { randomUUID } from 'node:crypto';
import { GoogleGenAI, type GoogleGenAIOptions } from '@google/genai';
import { abortError } from '../core/abort.ts';
import { ConfigError } from '../core/errors.ts';
import type { ModelProvider, ModelRequest, ModelResponse, ModelSettings } from '../core/model.ts';
import { geminiModelError, unreadableGeminiChunk } from './gemini-errors.ts';
import { geminiProviderName, toGeminiRequest } from './gemini-format.ts';
import { GeminiStreamReducer } from './gemini-stream.ts';
import { withDefaultSettings } from './request-defaults.ts';
import { type RetryOptions, withRetries } from './retry.ts';
import { retryAfterMs } from './retry-after.ts';

export interface GeminiOptions extends RetryOptions {
  /** Defaults to GEMINI_API_KEY, then GOOGLE_API_KEY. */
  apiKey?: string | undefined;
  /** The API root, e.g. `http://127.0.0.1:1234` (the SDK appends `/v1beta/models/...`). */
  baseURL?: string | undefined;
  /** A fetch implementation for the SDK (tests, proxies). */
  fetch?: typeof fetch | undefined;
  headers?: Record<string, string> | undefined;
  /** Defaults for every request; the request's own settings win. */
  settings?: ModelSettings | undefined;
  /** Ids for function calls the model sent without one (older models). Default: `call_<uuid>`. */
  generateId?: (() => string) | undefined;
}

/**
 * A ModelProvider for the Gemini API through the official `@google/genai` SDK, always streaming
 * (`generateContentStream`, `?alt=sse`). The SDK's retries and automatic continuation stay off: retries are ours.
 */
export function gemini(model: string, options: GeminiOptions = {}): ModelProvider {
  const apiKey = options.apiKey ?? process.env.GEMINI_API_KEY ?? process.env.GOOGLE_API_KEY;
  if (!apiKey) {
    throw new ConfigError(
      'The Gemini provider needs an API key: pass { apiKey } or set the GEMINI_API_KEY (or GOOGLE_API_KEY) environment variable.',
    );
  }
  const clientOptions: GoogleGenAIOptions = { apiKey };
  const httpOptions: NonNullable<GoogleGenAIOptions['httpOptions']> = {};
  if (options.baseURL !== undefined) httpOptions.baseUrl = options.baseURL;
  if (options.headers !== undefined) httpOptions.headers = options.headers;
  if (Object.keys(httpOptions).length > 0) clientOptions.httpOptions = httpOptions;
  const client = new GoogleGenAI(clientOptions);
  const generateId = options.generateId ?? (() => `call_${randomUUID().replaceAll('-', '')}`);
  const baseFetch = options.fetch;

  return withRetries(
    {
      provider: geminiProviderName,
      model,
      generate(request: ModelRequest): Promise<ModelResponse> {
        return streamGeminiOnce(
          client,
          model,
          withDefaultSettings(request, options.settings),
          generateId,
          baseFetch,
        );
      },
    },
    options,
  );
}

/** One streamed call, no retries. */
export async function streamGeminiOnce(
  client: GoogleGenAI,
  model: string,
  request: ModelRequest,
  generateId: () => string,
  baseFetch?: typeof fetch,
): Promise<ModelResponse> {
  const params = toGeminiRequest(request, model);
  // The SDK's ApiError drops the response headers; a per-call fetch wrapper keeps retry-after for us.
  let retryAfterHeader: number | undefined;
  const fetchImpl = baseFetch ?? globalThis.fetch;
  const watchingFetch: typeof fetch = async (input, init) => {
    const response = await fetchImpl(input, init);
    if (!response.ok) retryAfterHeader = retryAfterMs(response.headers);
    return response;
  };
  params.config = {
    ...params.config,
    abortSignal: request.signal,
    httpOptions: { ...params.config?.httpOptions, fetch: watchingFetch },
  };
  const reducer = new GeminiStreamReducer(generateId, request.onDelta);
  let streaming = false;
  try {
    if (request.signal.aborted) throw abortError(request.signal);
    const stream = await client.models.generateContentStream(params);
    streaming = true;
    for await (const chunk of stream) {
      try {
        reducer.push(chunk);
      } catch (error) {
        throw unreadableGeminiChunk(error);
      }
    }
    if (request.signal.aborted) throw abortError(request.signal);
    return reducer.finish();
  } catch (error) {
    if (request.signal.aborted) throw abortError(request.signal);
    throw geminiModelError(error, retryAfterHeader, streaming);
  }
}
