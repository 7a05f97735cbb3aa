import { ModelError, type ModelErrorKind } from '../core/errors.ts';
import { retryAfterMs } from './retry-after.ts';

/**
 * A ModelError for an API error response of the `openai` SDK (Chat Completions, Responses, compatible servers):
 * its HTTP status, whether it is worth a retry (rate limits, server errors, timeouts, overload), and the
 * retry-after the server asked for.
 */
export function apiStatusError(
  error: { status?: unknown; headers?: unknown; message: string },
  label: string,
  kind: ModelErrorKind,
): ModelError {
  const status = typeof error.status === 'number' ? error.status : undefined;
  const options: { status?: number; retryable: boolean; retryAfterMs?: number; cause: unknown } = {
    retryable: kind === 'rate_limited' || kind === 'server' || kind === 'timeout' || kind === 'overloaded',
    cause: error,
  };
  if (status !== undefined) options.status = status;
  const retryAfter = retryAfterMs(error.headers as Parameters<typeof retryAfterMs>[0]);
  if (retryAfter !== undefined) options.retryAfterMs = retryAfter;
  return new ModelError(kind, `${label} API error${status ? ` ${status}` : ''}: ${error.message}`, options);
}
