/** The longest delay a Node timer takes (about 24.8 days); the hold's timer only exists to be referenced. */
const longest = 2 ** 31 - 1;

/**
 * Keeps the process alive while held: a session whose turn can still make progress or waits for a person, and a
 * reader waiting for a live session's events. A script that awaits such a session stays up until the session
 * settles (or `shutdown()` lets it go), rather than exiting with an unsettled top-level await. It holds on the
 * platform's timers, whatever clock the session runs on: a simulated clock keeps nothing alive by itself.
 */
export class ProcessHold {
  #timer: ReturnType<typeof setInterval> | undefined;

  get held(): boolean {
    return this.#timer !== undefined;
  }

  hold(): void {
    this.#timer ??= setInterval(() => undefined, longest);
  }

  release(): void {
    if (this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Holds when `on`, releases otherwise. */
  set(on: boolean): void {
    if (on) this.hold();
    else this.release();
  }
}
