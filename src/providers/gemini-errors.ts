import { ModelError, type ModelErrorKind } from '../core/errors.ts';
import type { GeminiSdk } from './sdk-loader.ts';

/**
 * Gemini SDK error → ModelError. The SDK's `ApiError` has only a status and a message (the JSON error body,
 * stringified), no headers; so the wait the server asked for comes from the body's `RetryInfo.retryDelay`
 * ("12s") or, failing that, from the retry-after header our fetch wrapper saw (`retryAfterHeaderMs`).
 * Network failures (undici's "fetch failed", "terminated" on a reset) are retryable `network` errors.
 * Aborts pass through untouched. `midStream`: the response had started streaming, so a connection failure
 * means the stream was cut (`truncated_stream`), not that the request never got through. `sdk` is the loaded
 * `@google/genai` module, whose error class this is.
 */
export function geminiModelError(
  error: unknown,
  sdk: GeminiSdk,
  retryAfterHeaderMs?: number,
  midStream = false,
): unknown {
  if (error instanceof ModelError) return error;
  if (isAbort(error)) return error;
  if (error instanceof sdk.ApiError) {
    const status = error.status;
    const body = parseBody(error.message);
    const kind = kindOf(status, body.status);
    const options: { status: number; retryable: boolean; retryAfterMs?: number; cause: unknown } = {
      status,
      retryable: kind === 'rate_limited' || kind === 'server' || kind === 'overloaded' || kind === 'timeout',
      cause: error,
    };
    const retryAfter = body.retryDelayMs ?? retryAfterHeaderMs;
    if (retryAfter !== undefined) options.retryAfterMs = retryAfter;
    return new ModelError(kind, `Gemini API error ${status}: ${body.message ?? error.message}`, options);
  }
  if (error instanceof Error) {
    if (error.name === 'TimeoutError') {
      return new ModelError('timeout', `Gemini request timed out: ${error.message}`, {
        retryable: true,
        cause: error,
      });
    }
    if (
      /terminated|fetch failed|ECONNRESET|ECONNREFUSED|socket hang up|other side closed/i.test(error.message)
    ) {
      if (midStream) {
        return new ModelError('truncated_stream', `Gemini stream was cut off: ${error.message}`, {
          retryable: true,
          cause: error,
        });
      }
      return new ModelError('network', `Gemini connection failed: ${error.message}`, {
        retryable: true,
        cause: error,
      });
    }
    // The SDK's stream parser met half a JSON chunk: the connection was cut in the middle of an event.
    if (
      error instanceof SyntaxError ||
      /Incomplete JSON segment|exception parsing stream chunk/.test(error.message)
    ) {
      return new ModelError('truncated_stream', `Gemini stream was cut off: ${error.message}`, {
        retryable: true,
        cause: error,
      });
    }
  }
  return error;
}

function kindOf(status: number, rpcStatus: string | undefined): ModelErrorKind {
  if (status === 429 || rpcStatus === 'RESOURCE_EXHAUSTED') return 'rate_limited';
  if (status === 503 || rpcStatus === 'UNAVAILABLE') return 'overloaded';
  if (status === 504 || rpcStatus === 'DEADLINE_EXCEEDED') return 'timeout';
  if (
    status === 401 ||
    status === 403 ||
    rpcStatus === 'UNAUTHENTICATED' ||
    rpcStatus === 'PERMISSION_DENIED'
  ) {
    return 'authentication';
  }
  if (status === 404 || rpcStatus === 'NOT_FOUND') return 'not_found';
  if (status >= 500) return 'server';
  if (status >= 400) return 'bad_request';
  return 'unknown';
}

interface ErrorBody {
  message?: string;
  status?: string;
  retryDelayMs?: number;
}

/** The SDK puts the JSON body in the message, sometimes after a "got status: X. " prefix. */
function parseBody(message: string): ErrorBody {
  const start = message.indexOf('{');
  if (start < 0) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(message.slice(start));
  } catch {
    return {};
  }
  const error = (parsed as { error?: unknown }).error;
  if (typeof error !== 'object' || error === null) return {};
  const record = error as { message?: unknown; status?: unknown; details?: unknown };
  const body: ErrorBody = {};
  if (typeof record.message === 'string') body.message = record.message;
  if (typeof record.status === 'string') body.status = record.status;
  if (Array.isArray(record.details)) {
    for (const detail of record.details) {
      const delay = (detail as { retryDelay?: unknown } | null)?.retryDelay;
      if (typeof delay === 'string') {
        const seconds = Number.parseFloat(delay);
        if (Number.isFinite(seconds) && seconds >= 0) body.retryDelayMs = seconds * 1000;
      }
    }
  }
  return body;
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
}

/** Our stream reducer could not read a chunk: the API broke its own protocol. Not a network failure. */
export function unreadableGeminiChunk(error: unknown): unknown {
  if (error instanceof ModelError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new ModelError('invalid_response', `Gemini sent a stream chunk we could not read: ${message}`, {
    cause: error,
  });
}
