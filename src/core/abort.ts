/** An AbortError like the platform's (`DOMException` named AbortError), carrying the signal's reason. */
export function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  const error = new Error(reason instanceof Error ? reason.message : 'The operation was aborted.', {
    cause: reason,
  });
  error.name = 'AbortError';
  return error;
}

/**
 * An Error without a captured stack, for abort reasons raised by the runtime itself on a hot path: capturing the
 * stack costs 2–4 µs (V8 walks XState's frames), and the stack of "the run ended" says nothing a caller can use.
 */
export function stacklessError(message: string): Error {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new Error(message);
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** Resolves after `ms`, or rejects with an AbortError as soon as the signal is aborted. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortError(signal));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal as AbortSignal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

const abortWaiters = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Calls `onAbort` once when `signal` aborts; returns the function that stops waiting. Unlike a listener per caller,
 * it puts one listener on the signal and keeps the waiters in a set: Node's `removeEventListener` costs about 1 µs,
 * which the tool runner would otherwise pay twice per tool batch on a run's long-lived signal.
 */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  let waiters = abortWaiters.get(signal);
  if (!waiters) {
    waiters = new Set<() => void>();
    abortWaiters.set(signal, waiters);
    signal.addEventListener('abort', wakeAll(waiters), { once: true });
  }
  const own = waiters;
  const once = () => {
    own.delete(once);
    callback();
  };
  own.add(once);
  return () => {
    own.delete(once);
  };
}

/**
 * The signal's one listener. Made here, not inside onAbort: a closure created there would share onAbort's scope and
 * keep its first caller's callback (a whole tool batch) alive for as long as the signal lives.
 */
function wakeAll(waiters: Set<() => void>): () => void {
  return () => {
    for (const waiter of [...waiters]) waiter();
    waiters.clear();
  };
}
