/**
 * How long an optional MCP server (`required: false`) that could not be reached is left alone before a model call
 * tries it again: the runs in between go on without its tools rather than each waiting out the reconnection.
 */
export const unavailableRetryMs = 30_000;

/** An optional server's failure to connect: why, until when runs go on without it, and which sessions were told. */
export class Unavailability {
  readonly error: unknown;
  readonly until: number;
  readonly #told = new Set<string>();

  constructor(error: unknown, now: number) {
    this.error = error;
    this.until = now + unavailableRetryMs;
  }

  /** Whether a session still has to hear of this failure (each session hears of it once). */
  tell(sessionId: string): boolean {
    if (this.#told.has(sessionId)) return false;
    this.#told.add(sessionId);
    return true;
  }
}
