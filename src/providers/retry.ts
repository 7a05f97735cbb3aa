import {
  type BreakerOptions,
  type BreakerVerdict,
  checkBreakerOptions,
  sharedBreaker,
} from '../breakers/circuit-breaker.ts';
import { sleep as abortableSleep, abortError } from '../core/abort.ts';
import { type Clock, systemClock } from '../core/clock.ts';
import { ModelError } from '../core/errors.ts';
import type { ModelDelta, ModelProvider, ModelRequest, ModelResponse } from '../core/model.ts';

/**
 * How a provider retries failed API calls, times out and falls back to another model. Every factory in
 * troupe/providers accepts these.
 */
export interface RetryOptions {
  /**
   * Retries after a retryable failure (429, 5xx, Anthropic 529, a connection reset, a truncated stream, a
   * timeout) as long as nothing was streamed yet. Default 2; 0 turns retries off.
   */
  maxRetries?: number | undefined;
  /**
   * How long one attempt may go without progress: from the start of the request, and again after each streamed
   * delta. A stalled attempt is aborted and fails with ModelError kind `timeout` (retried like the others).
   * Default: no timeout of ours (the run's own `timeoutMs` still applies).
   */
  timeoutMs?: number | undefined;
  /** Asked once retries are exhausted on a retryable failure (never after a delta went out). */
  fallback?: ModelProvider | undefined;
  /** First back-off delay before jitter, doubled on each retry. Default 500 ms. */
  initialDelayMs?: number | undefined;
  /** Ceiling of the exponential back-off. Default 8 000 ms. */
  maxDelayMs?: number | undefined;
  /**
   * The longest retry-after we wait for. A server asking for more fails the call (or goes to the fallback)
   * instead of blocking the run. Default 60 000 ms.
   */
  maxRetryAfterMs?: number | undefined;
  /** Back-off sleep; tests inject one that does not wait. Must reject with an AbortError when the signal aborts. */
  sleep?: ((ms: number, signal: AbortSignal) => Promise<void>) | undefined;
  /** Clock for the per-attempt timeout; tests inject a simulated one. */
  clock?: Clock | undefined;
  /** Jitter source in [0, 1). Default Math.random. */
  random?: (() => number) | undefined;
  /**
   * A circuit breaker for this provider and model, shared by every run of the process. Each attempt that fails
   * with a retryable error (5xx, 429, overload, timeout, reset) counts; once it opens, calls go straight to the
   * `fallback` or fail at once with ModelError kind `circuit_open`, until a probe after the cool-down succeeds.
   * State changes are `breaker` events of the run whose call caused them. Default: no breaker.
   */
  breaker?: BreakerOptions | undefined;
}

export const defaultMaxRetries = 2;

/**
 * Wraps a provider with our retries (the SDKs' own are turned off, so these are the only ones):
 * - a retryable ModelError before any delta went out is retried after an exponential back-off with jitter, or
 *   exactly the retry-after the server asked for;
 * - the same failure after a delta went out is not retried (the caller has already shown part of an answer):
 *   it becomes a non-retryable ModelError of the same kind that says so;
 * - a stalled attempt is aborted through its signal and fails as kind `timeout`, even if the provider ignores
 *   its signal;
 * - once retries are exhausted on a retryable failure, the fallback (if any) answers the same request;
 * - the caller's abort ends everything at once, back-off included, with an AbortError.
 */
export function withRetries(inner: ModelProvider, options: RetryOptions = {}): ModelProvider {
  const maxRetries = Math.max(0, Math.floor(options.maxRetries ?? defaultMaxRetries));
  const initialDelayMs = options.initialDelayMs ?? 500;
  const maxDelayMs = options.maxDelayMs ?? 8_000;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? 60_000;
  const sleep = options.sleep ?? abortableSleep;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? Math.random;
  const breakerName = `${inner.provider}:${inner.model}`;
  const breaker =
    options.breaker === undefined
      ? undefined
      : sharedBreaker('model', breakerName, checkBreakerOptions(options.breaker, `${breakerName}`));

  /** One attempt, through the breaker when there is one; `undefined` when the open breaker refused it. */
  async function attempt(request: ModelRequest): Promise<Attempt | undefined> {
    if (!breaker) return attemptOnce(inner, request, options.timeoutMs, clock);
    const guarded = await breaker.run(
      () => attemptOnce(inner, request, options.timeoutMs, clock),
      (attempt) => verdictOf(attempt, request.signal),
      request.onBreaker,
    );
    return guarded.open ? undefined : guarded.result;
  }

  function backoff(retry: number, retryAfter: number | undefined): number {
    if (retryAfter !== undefined) return retryAfter;
    const ceiling = Math.min(maxDelayMs, initialDelayMs * 2 ** retry);
    // "Equal jitter": never less than half the ceiling, so a herd spreads out without retrying at once.
    return Math.round(ceiling / 2 + (ceiling / 2) * random());
  }

  async function generate(request: ModelRequest): Promise<ModelResponse> {
    for (let retry = 0; ; retry++) {
      if (request.signal.aborted) throw abortError(request.signal);
      const outcome = await attempt(request);
      if (outcome === undefined) {
        // The breaker is open: no waiting for a provider that keeps failing.
        if (options.fallback) return options.fallback.generate(request);
        throw circuitOpenError(inner, breaker?.options.halfOpenAfterMs ?? 0);
      }
      if (outcome.ok) return outcome.response;
      const error = outcome.error;
      if (request.signal.aborted) throw abortError(request.signal);
      if (!(error instanceof ModelError) || !error.retryable) throw error;
      if (outcome.emitted) throw afterDeltaError(error, inner);
      const delay = backoff(retry, error.retryAfterMs);
      if (retry < maxRetries && delay <= maxRetryAfterMs) {
        await sleep(delay, request.signal);
        continue;
      }
      if (options.fallback) return options.fallback.generate(request);
      throw exhaustedError(error, retry, delay > maxRetryAfterMs ? delay : undefined);
    }
  }

  return { provider: inner.provider, model: inner.model, generate };
}

type Attempt = { ok: true; response: ModelResponse } | { ok: false; error: unknown; emitted: boolean };

/** One call with its own abort controller (linked to the caller's signal) and the stall timer. */
function attemptOnce(
  inner: ModelProvider,
  request: ModelRequest,
  timeoutMs: number | undefined,
  clock: Clock,
): Promise<Attempt> {
  const controller = new AbortController();
  let emitted = false;
  let timer: unknown;
  let settle: (attempt: Attempt) => void = () => {};
  const settled = new Promise<Attempt>((resolve) => {
    settle = resolve;
  });
  let done = false;
  const finish = (attempt: Attempt) => {
    if (done) return;
    done = true;
    if (timer !== undefined) clock.clearTimeout(timer);
    request.signal.removeEventListener('abort', onCallerAbort);
    settle(attempt);
  };
  const onCallerAbort = () => {
    controller.abort(request.signal.reason);
    finish({ ok: false, error: abortError(request.signal), emitted });
  };
  const arm = () => {
    if (timeoutMs === undefined || done) return;
    if (timer !== undefined) clock.clearTimeout(timer);
    timer = clock.setTimeout(() => {
      const error = new ModelError(
        'timeout',
        `${inner.provider} ${inner.model}: no progress for ${timeoutMs} ms; the request was aborted.`,
        { retryable: true },
      );
      controller.abort(error);
      finish({ ok: false, error, emitted });
    }, timeoutMs);
  };
  request.signal.addEventListener('abort', onCallerAbort, { once: true });
  arm();
  const onDelta = (delta: ModelDelta) => {
    if (done) return;
    emitted = true;
    arm();
    request.onDelta?.(delta);
  };
  let call: Promise<ModelResponse>;
  try {
    call = inner.generate({ ...request, signal: controller.signal, onDelta });
  } catch (error) {
    call = Promise.reject(error);
  }
  call.then(
    (response) => finish({ ok: true, response }),
    (error: unknown) => finish({ ok: false, error, emitted }),
  );
  return settled;
}

function afterDeltaError(error: ModelError, inner: ModelProvider): ModelError {
  const options: { status?: number; cause: unknown } = { cause: error };
  if (error.status !== undefined) options.status = error.status;
  return new ModelError(
    error.kind,
    `${error.message} (${inner.provider} ${inner.model}: failed after part of the answer was streamed, so it was not retried)`,
    options,
  );
}

function exhaustedError(error: ModelError, retries: number, refusedWaitMs: number | undefined): ModelError {
  if (retries === 0 && refusedWaitMs === undefined) return error;
  const options: { status?: number; retryAfterMs?: number; cause: unknown } = { cause: error };
  if (error.status !== undefined) options.status = error.status;
  if (error.retryAfterMs !== undefined) options.retryAfterMs = error.retryAfterMs;
  const why =
    refusedWaitMs !== undefined
      ? `the server asked to wait ${refusedWaitMs} ms, more than maxRetryAfterMs`
      : `gave up after ${retries} ${retries === 1 ? 'retry' : 'retries'}`;
  return new ModelError(error.kind, `${error.message} (${why})`, options);
}

/**
 * How an attempt counts for the breaker: a fault of the provider (a retryable error) is a failure; an answer, or an
 * error of the request itself (400, authentication), shows the provider is up; an aborted call says nothing.
 */
function verdictOf(attempt: Attempt, signal: AbortSignal): BreakerVerdict {
  if (attempt.ok) return 'success';
  if (signal.aborted) return 'uncounted';
  const error = attempt.error;
  return error instanceof ModelError && error.retryable ? { failure: error.message } : 'success';
}

function circuitOpenError(inner: ModelProvider, halfOpenAfterMs: number): ModelError {
  return new ModelError(
    'circuit_open',
    `${inner.provider} ${inner.model}: the circuit breaker is open after repeated failures, so the call was not sent; a probe call goes through ${halfOpenAfterMs} ms after it opened.`,
  );
}
