import type { Clock } from '../core/clock.ts';

/**
 * One timer on the injected clock for the time at which a waiting call may next be granted by time alone (a quota
 * window moving on, a retry-after ending). Rescheduling to the same time keeps the timer; stopping clears it for
 * good.
 */
export class WakeTimer {
  readonly #clock: Clock;
  readonly #wake: () => void;
  #timer: unknown;
  #at: number | null = null;
  #stopped = false;

  constructor(clock: Clock, wake: () => void) {
    this.#clock = clock;
    this.#wake = wake;
  }

  /** Wakes at `at` (null: not at all), replacing the time set before. */
  schedule(at: number | null): void {
    if (at === this.#at) return;
    this.#clear();
    this.#at = at;
    if (at === null || this.#stopped) return;
    this.#timer = this.#clock.setTimeout(
      () => {
        this.#timer = undefined;
        this.#at = null;
        if (!this.#stopped) this.#wake();
      },
      Math.max(0, at - this.#clock.now()),
    );
  }

  stop(): void {
    this.#stopped = true;
    this.#clear();
    this.#at = null;
  }

  #clear(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
