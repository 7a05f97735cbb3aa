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

/**
 * Callbacks waiting for one abort: each is called once when `wakeAll` comes, unless it stopped waiting first (the
 * function `add` returns), in the order they came. One waiter list per abort, instead of a listener per caller on an
 * AbortSignal: Node's `addEventListener`/`removeEventListener` cost about 1 µs each.
 */
export class AbortWaiters {
  /**
   * The usual single waiter (a run's tool batch comes and goes once per step), kept in a field: a set emptied and
   * filled again at every step reallocates its table on the way.
   */
  #first: (() => void) | undefined;
  /** The waiters that came while `#first` was taken, or after it while others were still waiting. */
  #more: Set<() => void> | undefined;
  #woken = false;

  /** Waits for the abort; after it came, the callback runs at once. */
  add(callback: () => void): () => void {
    if (this.#woken) {
      callback();
      return noop;
    }
    const more = this.#more;
    if (this.#first !== callback && !more?.has(callback)) {
      if (this.#first === undefined && (more === undefined || more.size === 0)) this.#first = callback;
      else {
        this.#more ??= new Set();
        this.#more.add(callback);
      }
    }
    return () => {
      if (this.#first === callback) this.#first = undefined;
      else this.#more?.delete(callback);
    };
  }

  wakeAll(): void {
    this.#woken = true;
    const first = this.#first;
    const more = this.#more;
    this.#first = undefined;
    this.#more = undefined;
    first?.();
    if (more) for (const waiter of [...more]) waiter();
  }
}

function noop(): void {}

const signalWaiters = new WeakMap<AbortSignal, AbortWaiters>();

/**
 * Calls `callback` once when `signal` aborts; returns the function that stops waiting. One listener on the signal
 * however many callers wait (the tool runner waits on a run's long-lived signal once per batch).
 */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  let waiters = signalWaiters.get(signal);
  if (!waiters) {
    waiters = new AbortWaiters();
    signalWaiters.set(signal, waiters);
    signal.addEventListener('abort', wakeOnAbort(waiters), { once: true });
  }
  return waiters.add(callback);
}

/**
 * The signal's one listener. Made here, not inside onAbort: a closure created there would share onAbort's scope and
 * keep its first caller's callback (a whole tool batch) alive for as long as the signal lives.
 */
function wakeOnAbort(waiters: AbortWaiters): () => void {
  return () => waiters.wakeAll();
}

/** Why an aborted signal ended a run, a turn or a session, in words: its reason when it gave one. */
export function abortReason(signal: AbortSignal | undefined, what: 'run' | 'turn' | 'session'): string {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error && reason.name !== 'AbortError')
    return `the ${what} was aborted: ${reason.message}`;
  if (typeof reason === 'string') return `the ${what} was aborted: ${reason}`;
  return `the ${what} was aborted`;
}
