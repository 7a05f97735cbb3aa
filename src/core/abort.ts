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
 * What waits for an abort as an object: `aborted` is called once when it comes. An object that lives as long as its
 * wait (a tool batch) waits this way without a function of its own, and stops with {@link AbortWaiters.remove}.
 */
export interface AbortListener {
  aborted(): void;
}

type Waiter = (() => void) | AbortListener;

/**
 * Callbacks and listeners waiting for one abort: each is called once when `wakeAll` comes, unless it stopped waiting
 * first, in the order they came. One waiter list per abort, instead of a listener per caller on an AbortSignal:
 * Node's `addEventListener`/`removeEventListener` cost about 1 µs each.
 */
export class AbortWaiters {
  /**
   * The usual single waiter (a run's tool batch comes and goes once per step), kept in a field: a set emptied and
   * filled again at every step reallocates its table on the way.
   */
  #first: Waiter | undefined;
  /** The waiters that came while `#first` was taken, or after it while others were still waiting. */
  #more: Set<Waiter> | undefined;
  #woken = false;

  /** Waits for the abort; after it came, the callback runs at once. Returns what stops waiting. */
  add(callback: () => void): () => void {
    if (this.#woken) {
      callback();
      return noop;
    }
    this.#put(callback);
    return () => this.remove(callback);
  }

  /**
   * Waits for the abort, as `add` does, without making a function to stop: the listener stops with `remove`. (A tool
   * batch waits once per step: `add` would make the batch's callback and the stop function each time.)
   */
  listen(listener: AbortListener): void {
    if (this.#woken) listener.aborted();
    else this.#put(listener);
  }

  /** Stops a callback or listener waiting; nothing when it was not. */
  remove(waiter: (() => void) | AbortListener): void {
    if (this.#first === waiter) this.#first = undefined;
    else this.#more?.delete(waiter);
  }

  #put(waiter: Waiter): void {
    const more = this.#more;
    if (this.#first === waiter || more?.has(waiter)) return;
    if (this.#first === undefined && (more === undefined || more.size === 0)) this.#first = waiter;
    else {
      this.#more ??= new Set();
      this.#more.add(waiter);
    }
  }

  wakeAll(): void {
    this.#woken = true;
    const first = this.#first;
    const more = this.#more;
    this.#first = undefined;
    this.#more = undefined;
    if (first !== undefined) wake(first);
    if (more) for (const waiter of [...more]) wake(waiter);
  }
}

function wake(waiter: Waiter): void {
  if (typeof waiter === 'function') waiter();
  else waiter.aborted();
}

function noop(): void {}

const signalWaiters = new WeakMap<AbortSignal, AbortWaiters>();

/**
 * The waiters of `signal`'s abort: made on first ask, with one listener on the signal however many callers wait
 * (the tool runner waits on a run's long-lived signal once per batch).
 */
export function abortWaitersOf(signal: AbortSignal): AbortWaiters {
  let waiters = signalWaiters.get(signal);
  if (!waiters) {
    waiters = new AbortWaiters();
    signalWaiters.set(signal, waiters);
    signal.addEventListener('abort', wakeOnAbort(waiters), { once: true });
  }
  return waiters;
}

/** Calls `callback` once when `signal` aborts; returns the function that stops waiting. */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  return abortWaitersOf(signal).add(callback);
}

/**
 * The signal's one listener. Made here, not inside abortWaitersOf: a closure created there would hold that call's
 * whole scope (the signal among it) rather than the waiters alone.
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
