/**
 * Tracks the timers and intervals made through the global functions while it is installed: how many were made, and
 * how many are still pending (neither fired, for a timer, nor cleared). Unlike a count of the process's active
 * resources, it is not moved by timers of earlier tests that fire or are cleared meanwhile.
 */
export interface LiveTimers {
  /** Timers and intervals made since install. */
  readonly made: number;
  /** Those still pending: a timer that has not fired and was not cleared, an interval not cleared. */
  readonly pending: number;
  /** Puts the global functions back. */
  restore(): void;
}

export function trackLiveTimers(): LiveTimers {
  const live = new Set<unknown>();
  let made = 0;
  const real = {
    setTimeout: globalThis.setTimeout,
    clearTimeout: globalThis.clearTimeout,
    setInterval: globalThis.setInterval,
    clearInterval: globalThis.clearInterval,
  };
  const settle = (handle: unknown) => {
    live.delete(handle);
  };
  globalThis.setTimeout = ((callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    made++;
    const handle = real.setTimeout(
      (...given: unknown[]) => {
        settle(handle);
        callback(...given);
      },
      ms,
      ...args,
    );
    live.add(handle);
    return handle;
  }) as typeof setTimeout;
  globalThis.setInterval = ((callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    made++;
    const handle = real.setInterval(callback, ms, ...args);
    live.add(handle);
    return handle;
  }) as typeof setInterval;
  globalThis.clearTimeout = ((handle?: Parameters<typeof clearTimeout>[0]) => {
    settle(handle);
    real.clearTimeout(handle);
  }) as typeof clearTimeout;
  globalThis.clearInterval = ((handle?: Parameters<typeof clearInterval>[0]) => {
    settle(handle);
    real.clearInterval(handle);
  }) as typeof clearInterval;
  return {
    get made() {
      return made;
    },
    get pending() {
      return live.size;
    },
    restore() {
      Object.assign(globalThis, real);
    },
  };
}
