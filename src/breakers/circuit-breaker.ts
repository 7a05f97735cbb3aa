import type { CircuitBreakerPolicy } from 'cockatiel';
import { ConfigError } from '../core/errors.ts';
import type { RunEventData } from '../core/events.ts';
import { assertPeerInstalled, loadPeer } from '../core/optional-peer.ts';
import { describeValue } from '../core/options.ts';

/**
 * A circuit breaker for a model (per provider and model) or a tool (per tool name), shared by every run of the
 * process: after repeated failures it opens and calls fail at once, without waiting for timeouts; after a cool-down
 * it lets one probe call through (half-open) and closes again if that call succeeds.
 */
export interface BreakerOptions {
  /** Consecutive failures that open the breaker. Default 5. */
  threshold?: number | undefined;
  /**
   * Open on a failure ratio instead: more than `ratio` (between 0 and 1, exclusive) of the calls in the last `windowMs` failed, with at
   * least `minimumRps` calls per second (default 0: any rate). Replaces `threshold`.
   */
  sampling?: { ratio: number; windowMs: number; minimumRps?: number | undefined } | undefined;
  /** How long an open breaker fails fast before one probe call may go through. Default 30 000 ms. */
  halfOpenAfterMs?: number | undefined;
}

/** A breaker's change of state, as the `breaker` event reports it. */
export type BreakerChange = RunEventData['breaker'];

/** Reports a breaker's change of state on the event bus of the run whose call caused it. */
export type BreakerReporter = (change: BreakerChange) => void;

/** Breaker options checked and filled in. */
export interface ResolvedBreaker {
  threshold: number;
  sampling: { ratio: number; windowMs: number; minimumRps: number } | undefined;
  halfOpenAfterMs: number;
}

const breakerKeys = new Set(['threshold', 'sampling', 'halfOpenAfterMs']);

/** Checks breaker options (a ConfigError names what is wrong) and that cockatiel, which implements them, is there. */
export function checkBreakerOptions(options: unknown, where: string): ResolvedBreaker {
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    throw new ConfigError(
      `${where}: breaker must be an object such as { threshold: 5, halfOpenAfterMs: 30000 }.`,
    );
  for (const key of Object.keys(options))
    if (!breakerKeys.has(key))
      throw new ConfigError(
        `${where}: unknown breaker option "${key}"; known: ${[...breakerKeys].join(', ')}.`,
      );
  const given = options as BreakerOptions;
  const threshold = given.threshold ?? 5;
  if (!Number.isInteger(threshold) || threshold < 1)
    throw new ConfigError(
      `${where}: breaker.threshold must be an integer >= 1, got ${describeValue(threshold)}.`,
    );
  const halfOpenAfterMs = given.halfOpenAfterMs ?? 30_000;
  if (typeof halfOpenAfterMs !== 'number' || !Number.isFinite(halfOpenAfterMs) || halfOpenAfterMs < 0)
    throw new ConfigError(
      `${where}: breaker.halfOpenAfterMs must be a number of milliseconds >= 0, got ${describeValue(halfOpenAfterMs)}.`,
    );
  let sampling: ResolvedBreaker['sampling'];
  if (given.sampling !== undefined) {
    const { ratio, windowMs, minimumRps = 0 } = given.sampling;
    if (typeof ratio !== 'number' || !(ratio > 0 && ratio <= 1))
      throw new ConfigError(
        `${where}: breaker.sampling.ratio must be in (0, 1], got ${describeValue(ratio)}.`,
      );
    if (typeof windowMs !== 'number' || !Number.isFinite(windowMs) || windowMs <= 0)
      throw new ConfigError(
        `${where}: breaker.sampling.windowMs must be > 0, got ${describeValue(windowMs)}.`,
      );
    if (typeof minimumRps !== 'number' || !Number.isFinite(minimumRps) || minimumRps < 0)
      throw new ConfigError(
        `${where}: breaker.sampling.minimumRps must be >= 0, got ${describeValue(minimumRps)}.`,
      );
    sampling = { ratio, windowMs, minimumRps };
  }
  assertCockatiel(where);
  return { threshold, sampling, halfOpenAfterMs };
}

type Cockatiel = typeof import('cockatiel');

/** cockatiel, an optional peer dependency: the breakers' policies. */
const cockatiel = { package: 'cockatiel', import: (): Promise<Cockatiel> => import('cockatiel') };

/** A missing cockatiel fails where a breaker is configured, with the command that fixes it. */
function assertCockatiel(where: string): void {
  assertPeerInstalled(cockatiel, `${where}: a circuit breaker`);
}

function loadCockatiel(): Promise<Cockatiel> {
  return loadPeer(cockatiel, 'a circuit breaker');
}

/** A failure the breaker counts: carries the attempt's own result back out of the policy. */
class CountedFailure<T> extends Error {
  readonly result: T;
  constructor(result: T, reason: string) {
    super(reason);
    this.result = result;
  }
}

/** An outcome the breaker must not count either way (the caller aborted): carried out of the policy. */
class Uncounted<T> extends Error {
  readonly result: T;
  constructor(result: T) {
    super('not counted');
    this.result = result;
  }
}

/**
 * How an attempt's result counts: a failure (with its reason), a success, or not at all (an aborted call says
 * nothing about the provider or the tool).
 */
export type BreakerVerdict = { failure: string } | 'success' | 'uncounted';

/** What a guarded call gives: the attempt's result, or `open` when the breaker refused to run it. */
export type Guarded<T> = { open: false; result: T } | { open: true };

const stateNames = ['closed', 'open', 'half_open', 'open'] as const;

/** One shared breaker (cockatiel's CircuitBreakerPolicy, made on first use). */
export class CircuitBreaker {
  readonly name: string;
  readonly scope: 'model' | 'tool';
  readonly options: ResolvedBreaker;
  #policy: CircuitBreakerPolicy | undefined;
  #making: Promise<CircuitBreakerPolicy> | undefined;
  /** Changes not reported yet: the call that caused them (or the next to finish) reports them on its run's bus. */
  #changes: BreakerChange[] = [];
  #lastFailure = '';

  constructor(scope: 'model' | 'tool', name: string, options: ResolvedBreaker) {
    this.scope = scope;
    this.name = name;
    this.options = options;
  }

  /** The state now: 'closed' before the first call. */
  get state(): BreakerChange['state'] {
    return this.#policy ? (stateNames[this.#policy.state] ?? 'closed') : 'closed';
  }

  /**
   * Runs `attempt` through the breaker; `judge` says how its result counts. An attempt should not throw; if it
   * does, that counts as a failure and is rethrown. When the breaker is open the attempt does not run.
   */
  async run<T>(
    attempt: () => Promise<T>,
    judge: (result: T) => BreakerVerdict,
    report: BreakerReporter | undefined,
  ): Promise<Guarded<T>> {
    const policy = this.#policy ?? (await this.#make());
    const cockatiel = await loadCockatiel();
    try {
      const result = await policy.execute(async () => {
        const result = await attempt();
        const verdict = judge(result);
        if (verdict === 'uncounted') throw new Uncounted(result);
        if (verdict !== 'success') {
          this.#lastFailure = verdict.failure;
          throw new CountedFailure(result, verdict.failure);
        }
        return result;
      });
      return { open: false, result };
    } catch (error) {
      if (error instanceof CountedFailure || error instanceof Uncounted)
        return { open: false, result: error.result as T };
      if (error instanceof cockatiel.BrokenCircuitError) return { open: true };
      throw error;
    } finally {
      const changes = this.#changes;
      this.#changes = [];
      if (report) for (const change of changes) report(change);
    }
  }

  async #make(): Promise<CircuitBreakerPolicy> {
    this.#making ??= loadCockatiel().then((cockatiel) => {
      const { threshold, sampling, halfOpenAfterMs } = this.options;
      const breaker = sampling
        ? new cockatiel.SamplingBreaker({
            threshold: sampling.ratio,
            duration: sampling.windowMs,
            // cockatiel reads 0 as "its own guess" (5 failures a second); 0 here means any rate.
            minimumRps: sampling.minimumRps > 0 ? sampling.minimumRps : Number.EPSILON,
          })
        : new cockatiel.ConsecutiveBreaker(threshold);
      // Everything but an uncounted outcome is a failure; that one passes through the policy unrecorded.
      const failures = cockatiel.handleWhen((error) => !(error instanceof Uncounted));
      const policy = cockatiel.circuitBreaker(failures, { halfOpenAfter: halfOpenAfterMs, breaker });
      policy.onStateChange((state) => {
        const name = stateNames[state] ?? 'open';
        const change: BreakerChange = { breaker: this.name, scope: this.scope, state: name };
        if (name === 'open') change.reason = this.#lastFailure || 'repeated failures';
        else if (name === 'half_open')
          change.reason = `cool-down of ${halfOpenAfterMs} ms over: one probe call goes through`;
        else change.reason = 'a probe call succeeded';
        this.#changes.push(change);
      });
      this.#policy = policy;
      return policy;
    });
    return this.#making;
  }
}

/** Every breaker of the process, by scope and name: shared across runs and sessions. */
const breakers = new Map<string, CircuitBreaker>();

/**
 * The process-wide breaker of a model (`provider:model`) or a tool (its name). The options of the first caller
 * make it; later callers with the same key share it as it is.
 */
export function sharedBreaker(
  scope: 'model' | 'tool',
  name: string,
  options: ResolvedBreaker,
): CircuitBreaker {
  const key = `${scope}\u0000${name}`;
  let breaker = breakers.get(key);
  if (!breaker) {
    breaker = new CircuitBreaker(scope, name, options);
    breakers.set(key, breaker);
  }
  return breaker;
}

/** The state of a model's (`provider:model`) or a tool's breaker, or undefined if it has none yet. */
export function breakerState(scope: 'model' | 'tool', name: string): BreakerChange['state'] | undefined {
  return breakers.get(`${scope}\u0000${name}`)?.state;
}

/** Forgets every breaker (they start closed, with the options of their next first caller): for tests and ops. */
export function resetBreakers(): void {
  breakers.clear();
}
