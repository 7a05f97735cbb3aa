import type { GoogleGenAI } from '@google/genai';
import { abortError } from '../core/abort.ts';
import type { ModelRequest, ModelResponse } from '../core/model.ts';
import { geminiModelError, unreadableGeminiChunk } from './gemini-errors.ts';
import { toGeminiRequest } from './gemini-format.ts';
import { GeminiStreamReducer } from './gemini-stream.ts';
import { providerToolsFor } from './provider-tools.ts';
import { retryAfterMs } from './retry-after.ts';
import type { GeminiSdk } from './sdk-loader.ts';

/** One streamed call, no retries. */
export async function streamGeminiOnce(
  sdk: GeminiSdk,
  client: GoogleGenAI,
  model: string,
  request: ModelRequest,
  generateId: () => string,
  baseFetch?: typeof fetch,
): Promise<ModelResponse> {
  providerToolsFor(request.settings, { family: undefined, label: `gemini("${model}")` });
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
    throw geminiModelError(error, sdk, retryAfterHeader, streaming);
  }
}
