import { ModelError, type ModelErrorKind } from '../core/errors.ts';
import { retryAfterMs } from './retry-after.ts';
import type { AnthropicSdk } from './sdk-loader.ts';

/**
 * Anthropic SDK error → ModelError. Besides the HTTP status this reads the error `type` of the body, because
 * the API also reports errors inside a stream (an SSE `error` event, no status): `overloaded_error` there is
 * the same 529 the HTTP layer would give. 529 (overloaded) is retryable, like 429, 408, 409 and 5xx.
 * Aborts are passed through untouched: an abort is not a model failure and must not be retried.
 * `midStream`: the response had started streaming when the error came; a connection failure then means the
 * stream was cut (`truncated_stream`), not that the request never got through. `sdk` is the loaded SDK module,
 * whose error classes these are.
 */
export function anthropicModelError(error: unknown, sdk: AnthropicSdk, midStream = false): unknown {
  const { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } = sdk;
  if (error instanceof ModelError) return error;
  if (error instanceof APIUserAbortError) return abortError(error);
  if (isConnectionFailure(error, sdk)) {
    const message = error instanceof Error ? error.message : String(error);
    if (midStream) {
      return new ModelError('truncated_stream', `Anthropic stream was cut off: ${message}`, {
        retryable: true,
        cause: error,
      });
    }
    if (!(error instanceof APIConnectionError)) {
      return new ModelError('network', `Anthropic connection failed: ${message}`, {
        retryable: true,
        cause: error,
      });
    }
  }
  // The SDK's SSE parser met half a JSON line: the connection was cut in the middle of an event.
  if (error instanceof SyntaxError) {
    return new ModelError('truncated_stream', `Anthropic stream was cut off: ${error.message}`, {
      retryable: true,
      cause: error,
    });
  }
  if (error instanceof APIConnectionTimeoutError) {
    return new ModelError('timeout', `Anthropic request timed out: ${error.message}`, {
      retryable: true,
      cause: error,
    });
  }
  if (error instanceof APIConnectionError) {
    return new ModelError('network', `Anthropic connection failed: ${error.message}`, {
      retryable: true,
      cause: error,
    });
  }
  if (error instanceof APIError) {
    const status = typeof error.status === 'number' ? error.status : undefined;
    const kind = kindOf(status, error.type ?? bodyType(error.error));
    const options: { status?: number; retryable: boolean; retryAfterMs?: number; cause: unknown } = {
      retryable: isRetryable(kind, status),
      cause: error,
    };
    if (status !== undefined) options.status = status;
    const retryAfter = retryAfterMs(error.headers);
    if (retryAfter !== undefined) options.retryAfterMs = retryAfter;
    return new ModelError(
      kind,
      `Anthropic API error${status ? ` ${status}` : ''}: ${error.message}`,
      options,
    );
  }
  return error;
}

/**
 * A failure of the connection rather than an answer from the API: the SDK's connection errors, or undici's
 * raw errors that escape while the body streams (`TypeError: terminated` when the socket is reset).
 */
function isConnectionFailure(error: unknown, sdk: AnthropicSdk): boolean {
  if (error instanceof sdk.APIConnectionTimeoutError) return false;
  if (error instanceof sdk.APIConnectionError) return true;
  if (error instanceof sdk.APIError) return false;
  return error instanceof Error && connectionFailureMessage.test(error.message);
}

/** undici's and Node's words for a connection that failed or was cut. */
const connectionFailureMessage =
  /terminated|fetch failed|ECONNRESET|ECONNREFUSED|socket hang up|other side closed/i;

/** Our stream reducer could not read an event: the API broke its own protocol. Not a network failure. */
export function unreadableAnthropicEvent(error: unknown): unknown {
  if (error instanceof ModelError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new ModelError('invalid_response', `Anthropic sent a stream event we could not read: ${message}`, {
    cause: error,
  });
}

function kindOf(status: number | undefined, type: string | null | undefined): ModelErrorKind {
  if (status === 529 || type === 'overloaded_error') return 'overloaded';
  if (status === 429 || type === 'rate_limit_error') return 'rate_limited';
  if (status === 401 || status === 403 || type === 'authentication_error' || type === 'permission_error') {
    return 'authentication';
  }
  if (status === 404 || type === 'not_found_error') return 'not_found';
  if (status === 408 || type === 'timeout_error') return 'timeout';
  if ((status !== undefined && status >= 500) || type === 'api_error') return 'server';
  if (status !== undefined && status >= 400) return 'bad_request';
  return 'unknown';
}

function isRetryable(kind: ModelErrorKind, status: number | undefined): boolean {
  if (kind === 'overloaded' || kind === 'rate_limited' || kind === 'server' || kind === 'timeout')
    return true;
  return status === 409;
}

function bodyType(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const record = body as { type?: unknown; error?: { type?: unknown } };
  if (typeof record.error?.type === 'string') return record.error.type;
  return typeof record.type === 'string' ? record.type : undefined;
}

function abortError(cause: unknown): Error {
  const error = new Error('The model call was aborted.', { cause });
  error.name = 'AbortError';
  return error;
}
