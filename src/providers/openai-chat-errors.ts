import { abortError } from '../core/abort.ts';
import { ModelError, type ModelErrorKind } from '../core/errors.ts';
import { apiStatusError } from './api-status-error.ts';
import type { OpenAISdk } from './sdk-loader.ts';

/**
 * `openai` SDK error → ModelError for a Chat Completions call, named after the provider (`label`), so an error
 * from a compatible server says which server. 429, 408, 5xx (529 from Anthropic's compatible endpoint included),
 * connection failures and broken streams are retryable; aborts pass through as AbortError and are never retried.
 * `midStream`: the response had started streaming, so a connection failure means the stream was cut
 * (`truncated_stream`), not that the request never got through (`network`). `sdk` is the loaded `openai` module.
 */
export function chatModelError(error: unknown, label: string, sdk: OpenAISdk, midStream = false): unknown {
  const { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } = sdk;
  if (error instanceof ModelError) return error;
  if (error instanceof APIUserAbortError) return abortError(AbortSignal.abort(error));
  if (error instanceof APIConnectionTimeoutError) {
    return new ModelError('timeout', `${label} request timed out: ${error.message}`, {
      retryable: true,
      cause: error,
    });
  }
  if (error instanceof APIConnectionError) {
    if (midStream) return cutOff(label, error);
    return new ModelError('network', `${label} connection failed: ${error.message}`, {
      retryable: true,
      cause: error,
    });
  }
  if (error instanceof APIError) {
    const status = typeof error.status === 'number' ? error.status : undefined;
    const code = typeof error.code === 'string' ? error.code : undefined;
    return apiStatusError(error, label, kindOf(status, code, error.type ?? undefined));
  }
  // The SDK's SSE parser meets half a JSON line when the connection is cut in the middle of an event.
  if (error instanceof SyntaxError) {
    return new ModelError('truncated_stream', `${label} stream was cut off: ${error.message}`, {
      retryable: true,
      cause: error,
    });
  }
  if (
    error instanceof TypeError ||
    (error instanceof Error && /terminated|ECONNRESET|socket|other side closed/i.test(error.message))
  ) {
    if (midStream) return cutOff(label, error);
    return new ModelError('network', `${label} connection failed: ${error.message}`, {
      retryable: true,
      cause: error,
    });
  }
  return error;
}

function cutOff(label: string, error: Error): ModelError {
  return new ModelError('truncated_stream', `${label} stream was cut off: ${error.message}`, {
    retryable: true,
    cause: error,
  });
}

function kindOf(
  status: number | undefined,
  code: string | undefined,
  type: string | undefined,
): ModelErrorKind {
  if (status === 529 || type === 'overloaded_error') return 'overloaded';
  if (status === 429 || code === 'rate_limit_exceeded') return 'rate_limited';
  if (status === 401 || status === 403) return 'authentication';
  if (status === 404) return 'not_found';
  if (status === 408) return 'timeout';
  if (status === 503) return 'overloaded';
  if ((status !== undefined && status >= 500) || code === 'server_error') return 'server';
  if (status !== undefined && status >= 400) return 'bad_request';
  // An error object inside the stream has no status: a server failure mid-answer.
  return 'server';
}
