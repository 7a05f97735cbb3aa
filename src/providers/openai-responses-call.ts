import type OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { abortError } from '../core/abort.ts';
import { ModelError, type ModelErrorKind } from '../core/errors.ts';
import type { ModelRequest, ModelResponse } from '../core/model.ts';
import { apiStatusError } from './api-status-error.ts';
import type { ResponsesRequestOptions } from './openai-responses.ts';
import { toResponsesRequest } from './openai-responses-format.ts';
import { ResponsesStreamReducer } from './openai-responses-stream.ts';
import type { OpenAISdk } from './sdk-loader.ts';

/** One streamed call, no retries. */
export async function streamResponsesOnce(
  sdk: OpenAISdk,
  client: OpenAI,
  model: string,
  request: ModelRequest,
  options: ResponsesRequestOptions = {},
): Promise<ModelResponse> {
  const body = toResponsesRequest(request, model, options);
  const reducer = new ResponsesStreamReducer(request.onDelta);
  let streaming = false;
  try {
    if (request.signal.aborted) throw abortError(request.signal);
    const stream = await client.responses.create(body, { signal: request.signal });
    streaming = true;
    for await (const event of stream as AsyncIterable<ResponseStreamEvent>) {
      try {
        reducer.push(event);
      } catch (error) {
        if (error instanceof ModelError) throw error;
        throw new ModelError(
          'invalid_response',
          `OpenAI Responses sent a stream event we could not read: ${(error as Error)?.message ?? String(error)}`,
          { cause: error },
        );
      }
    }
    // The SDK ends the iteration quietly when the signal aborts mid-stream: say so instead of "truncated".
    if (request.signal.aborted) throw abortError(request.signal);
    return reducer.finish();
  } catch (error) {
    if (request.signal.aborted) throw abortError(request.signal);
    throw responsesModelError(error, sdk, streaming);
  }
}

/**
 * OpenAI SDK error → ModelError (status, error code, retry-after); aborts pass through. `midStream`: the
 * response had started streaming, so a connection failure means the stream was cut (`truncated_stream`).
 * `sdk` is the loaded `openai` module, whose error classes these are.
 */
export function responsesModelError(error: unknown, sdk: OpenAISdk, midStream = false): unknown {
  const { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } = sdk;
  if (error instanceof ModelError) return error;
  if (error instanceof APIUserAbortError) {
    const abort = new Error('The model call was aborted.', { cause: error });
    abort.name = 'AbortError';
    return abort;
  }
  if (error instanceof APIConnectionTimeoutError) {
    return new ModelError('timeout', `OpenAI request timed out: ${error.message}`, {
      retryable: true,
      cause: error,
    });
  }
  if (midStream && isConnectionFailure(error, sdk)) {
    return new ModelError('truncated_stream', `OpenAI stream was cut off: ${(error as Error).message}`, {
      retryable: true,
      cause: error,
    });
  }
  if (error instanceof APIConnectionError) {
    return new ModelError('network', `OpenAI connection failed: ${error.message}`, {
      retryable: true,
      cause: error,
    });
  }
  if (error instanceof APIError) {
    const status = typeof error.status === 'number' ? error.status : undefined;
    const code = typeof error.code === 'string' ? error.code : undefined;
    return apiStatusError(error, 'OpenAI', kindOf(status, code));
  }
  // The SDK's SSE parser met half a JSON line: the connection was cut in the middle of an event.
  if (error instanceof SyntaxError) {
    return new ModelError('truncated_stream', `OpenAI stream was cut off: ${error.message}`, {
      retryable: true,
      cause: error,
    });
  }
  if (error instanceof Error && connectionFailureMessage.test(error.message)) {
    return new ModelError('network', `OpenAI connection failed: ${error.message}`, {
      retryable: true,
      cause: error,
    });
  }
  return error;
}

/** undici's and Node's words for a connection that failed or was cut. */
const connectionFailureMessage =
  /terminated|fetch failed|ECONNRESET|ECONNREFUSED|socket hang up|other side closed/i;

/** The connection failed (SDK connection error, or undici's raw `TypeError: terminated` on a reset). */
function isConnectionFailure(error: unknown, sdk: OpenAISdk): boolean {
  if (error instanceof sdk.APIConnectionError) return true;
  if (error instanceof sdk.APIError) return false;
  return error instanceof Error && connectionFailureMessage.test(error.message);
}

function kindOf(status: number | undefined, code: string | undefined): ModelErrorKind {
  if (status === 429 || code === 'rate_limit_exceeded') return 'rate_limited';
  if (status === 401 || status === 403) return 'authentication';
  if (status === 404) return 'not_found';
  if (status === 408) return 'timeout';
  if (status === 503) return 'overloaded';
  if ((status !== undefined && status >= 500) || code === 'server_error') return 'server';
  if (status !== undefined && status >= 400) return 'bad_request';
  // An error event inside the stream has no status: treat it as a server failure.
  if (status === undefined) return 'server';
  return 'unknown';
}
