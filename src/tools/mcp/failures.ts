/**
 * How a failed MCP request is read: whether the connection is gone (so reconnecting may help), and whether the
 * failure proves the request never reached the server (so sending it again cannot repeat an effect).
 */

/** Socket errors raised before a request is written: nothing was sent. */
const beforeSendCodes: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}

/** The HTTP status an SDK error carries, if any. */
export function httpStatus(error: unknown): number | undefined {
  const status = field(error, 'status');
  return typeof status === 'number' ? status : undefined;
}

/** Whether a failed request means the connection is gone (so reconnecting may help), not an answer. */
export function isConnectionLoss(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const status = httpStatus(error);
  if (status === 404) return true;
  if (status !== undefined && status >= 500) return true;
  const code = field(error, 'code');
  if (code === 'CONNECTION_CLOSED' || code === 'NOT_CONNECTED' || code === 'SEND_FAILED') return true;
  // fetch() failing to reach the server at all (connection refused or reset).
  return error instanceof TypeError && /fetch failed/i.test(error.message);
}

/**
 * Whether the failure proves the server never received the request: the connection was refused or the host
 * not found before anything was written, the client had no connection to send on, or the server answered 404
 * for a session it no longer knows (it refuses such a request before running anything). A reset, a timeout, a
 * 5xx or an unreadable answer prove nothing: the server may have run the request.
 */
export function neverReachedServer(error: unknown): boolean {
  if (field(error, 'code') === 'NOT_CONNECTED') return true;
  if (httpStatus(error) === 404) return true;
  if (!(error instanceof TypeError) || !/fetch failed/i.test(error.message)) return false;
  const cause = field(error, 'cause');
  const code = field(cause, 'code') ?? field(field(cause, 'cause'), 'code');
  return typeof code === 'string' && beforeSendCodes.has(code);
}

/** Whether the server needs authorization this client did not give (HTTP 401, or an OAuth flow it cannot run). */
export function isAuthorizationRefusal(error: unknown): boolean {
  if (httpStatus(error) === 401) return true;
  const code = field(error, 'code');
  if (code === 'CLIENT_HTTP_AUTHENTICATION') return true;
  return error instanceof Error && error.name === 'UnauthorizedError';
}

/** Whether the SDK refused a result of a kind it cannot consume (a 2026-07-28 `input_required` it could not fulfil). */
export function isUnsupportedResult(error: unknown): boolean {
  const code = field(error, 'code');
  return code === 'UNSUPPORTED_RESULT_TYPE' || code === 'INPUT_REQUIRED_ROUNDS_EXCEEDED';
}
