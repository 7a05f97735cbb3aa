/**
 * The wait a server asked for, in milliseconds: `retry-after-ms` (Anthropic and OpenAI send it), else
 * `retry-after` in seconds or as an HTTP date. Undefined when the headers do not say.
 */
export function retryAfterMs(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  if (!headers) return undefined;
  const precise = headers.get('retry-after-ms');
  if (precise !== null) {
    const ms = Number(precise);
    if (Number.isFinite(ms) && ms >= 0) return ms;
  }
  const value = headers.get('retry-after');
  if (value === null) return undefined;
  const seconds = Number(value);
  if (value.trim() !== '' && Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}
