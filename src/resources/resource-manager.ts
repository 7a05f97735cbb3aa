import { onAbort as whenAborted } from '../core/abort.ts';
import { type Clock, systemClock } from '../core/clock.ts';
import { ConfigError } from '../core/errors.ts';
import { cost, findPrice, type ModelPrice, type PriceTable } from '../core/prices.ts';
import { totalTokens, type Usage } from '../core/usage.ts';
import {
  applyResourceEvent,
  type BudgetLimit,
  initialResourceState,
  type OutputBound,
  type ResourceEvent,
  type ResourceOutput,
  type ResourceState,
  type ScopeState,
} from './ledger.ts';
import type { OpenRun } from './open-run.ts';
import { OutputEstimates } from './output-estimates.ts';
import {
  type Grant,
  openRunOf,
  type ReservationOutcome,
  type ReservationRequest,
  ReservationWaiters,
} from './reservation-waiters.ts';
import {
  checkBudget,
  checkConfig,
  defaultMaxOutputTokens,
  priceTableOf,
  type ResourceManagerConfig,
  tenantBudget,
} from './resource-config.ts';
import { type ResourceNotice, ResourceNotices, sinkIgnoresGranted } from './resource-notices.ts';
import { dispatchOutput } from './resource-outputs.ts';
import { sessionScope, tenantScope } from './scope-names.ts';
import { ClosedRuns, type ResourceUsage, resourceUsage } from './usage-queries.ts';
import { WakeTimer } from './wake-timer.ts';

export type { Grant, ReservationOutcome, ReservationRequest } from './reservation-waiters.ts';
export type { BudgetsConfig, ResourceManagerConfig } from './resource-config.ts';
export type { ResourceNotice } from './resource-notices.ts';
export type { ResourceUsage, ScopeUsage } from './usage-queries.ts';

export interface Settlement {
  tokens: number;
  usd: number | null;
  /** Reserved minus actual (negative when the call cost more than its estimate). */
  returnedTokens: number;
  returnedUsd: number | null;
}

export interface OpenRunOptions {
  session: string;
  tenant?: string | undefined;
  /** Session id of the calling run: this run's spend counts against the caller's budgets too. */
  parentSession?: string | undefined;
  budget?: BudgetLimit | undefined;
  /** The run's model, checked against the price table when a USD budget applies. */
  provider: string;
  model: string;
  /** Receives the notices caused by this run's calls. */
  onNotice?: ((notice: ResourceNotice) => void) | undefined;
}

export interface ResourceManager {
  readonly kind: 'resource-manager';
  readonly clock: Clock;
  /** Opens a run's budget scope under its tenant (or its caller). Throws ConfigError for an unpriced USD budget. */
  openRun(options: OpenRunOptions): void;
  /** Closes a run's scope, returning anything it still holds. Its spend stays counted in its tenant and callers. */
  closeRun(session: string): void;
  /**
   * Resolves when granted or denied. Under a budget the grant caps the call's output (`grant.maxOutputTokens`) at
   * what every budget of its chain has left after its spend, the calls in flight and the call's prompt, and holds
   * the prompt plus that cap until the call settles; a call for which not even a minimal output is left is denied
   * `budget_exhausted`. Waits for quotas in FIFO order, and for the calls in flight when only their reservations
   * keep a minimal output from fitting (then it is granted or denied once they settle). Aborting the signal while
   * waiting releases.
   */
  reserve(request: ReservationRequest, signal?: AbortSignal): Promise<ReservationOutcome>;
  /** Records the call's actual usage; returns null if the grant was already settled or released. */
  settle(grant: Grant, usage: Usage): Settlement | null;
  /** Returns a reservation whose call did not complete. True the first time, false after. */
  release(grant: Grant): boolean;
  /** A 429: no call to this provider and model is granted before `retryAfterMs` has passed. */
  report429(info: { provider: string; model: string; retryAfterMs?: number | undefined }): void;
  usage(query?: { tenant?: string | undefined; session?: string | undefined }): ResourceUsage;
  priceOf(model: string): ModelPrice | undefined;
  /**
   * The output tokens a run's next call to this model is expected to write: the mean of its settled calls to it,
   * else of all calls to that model; undefined before any settled.
   */
  expectedOutput(session: string, provider: string, model: string): number | undefined;
  /**
   * The scope whose USD budget a run opened with these options would draw on (its own or the default run budget,
   * else its caller's, else its tenant's), or null when no USD budget applies to it.
   */
  usdBudgetFor(run: Pick<OpenRunOptions, 'session' | 'tenant' | 'parentSession' | 'budget'>): string | null;
  readonly events: { subscribe(listener: (notice: ResourceNotice) => void): () => void };
  /** Denies every waiting call, clears the timer. Nothing runs after it. */
  stop(): void;
}

/** What a send gives once the ledger failed. */
const noOutputs = Object.freeze([]) as unknown as ResourceOutput[];

/** How long a 429 without retry-after blocks a quota. */
const defaultRetryAfterMs = 1_000;

/**
 * Creates the resource manager: one ledger (src/resources/ledger.ts) that every model call asks first, plus the
 * timer that wakes waiting calls when a quota window moves on. Share one manager between runs (or give it to
 * `createAgentSystem`) to share tenant budgets and quotas; a run with a budget and no manager gets a private one.
 */
export function createResourceManager(config: ResourceManagerConfig = {}): ResourceManager {
  const where = 'createResourceManager()';
  checkConfig(config, where);
  const clock = config.clock ?? systemClock;
  const prices: PriceTable = priceTableOf(config, where);
  const defaultTenant = config.defaultTenant ?? 'default';
  const outputCeiling = config.maxOutputTokens ?? defaultMaxOutputTokens;
  /**
   * The ledger's state (src/resources/ledger.ts), owned by this manager and updated in place by each event: the
   * manager applies the ledger's transition itself rather than through an actor, which would make a snapshot, a
   * mailbox entry and an inspection event for each of the two or three events of every model call.
   */
  const ledger: ResourceState = initialResourceState({
    ...(config.quotas ? { quotas: config.quotas } : {}),
    ...(config.concurrency !== undefined ? { concurrency: config.concurrency } : {}),
  });
  /**
   * Why the ledger failed, once an event threw in it (a fault of its own): it then takes no more events, and every
   * waiting and later call is refused with this message, so that no run waits for an answer that cannot come.
   */
  let ledgerFault: string | undefined;

  const waiters = new ReservationWaiters();
  /** Every open run, by session id: one lookup gives a call all it needs of its run. */
  const runs = new Map<string, OpenRun>();
  const notices = new ResourceNotices((session) => runs.get(session)?.sink);
  const closed = new ClosedRuns();
  const expectedOutputs = new OutputEstimates();
  const timer = new WakeTimer(clock, () => send({ type: 'tick', now: clock.now() }));
  /** The price of each model asked about: the table is fixed, and a miss scans all of it (every call asks twice). */
  const priceCache = new Map<string, ModelPrice | null>();
  const priceOf = (model: string): ModelPrice | undefined => {
    let price = priceCache.get(model);
    if (price === undefined) {
      price = findPrice(prices, model) ?? null;
      // Model names come from agents' configuration: a handful per manager; the bound keeps a stray loop small.
      if (priceCache.size >= maxCachedPrices) priceCache.clear();
      priceCache.set(model, price);
    }
    return price ?? undefined;
  };
  let nextId = 0;
  let stopped = false;

  const state = (): ResourceState => ledger;

  /** Sends one event and acts on what it decided. Returns the decisions for the caller to inspect. */
  const send = (event: ResourceEvent): ResourceOutput[] => {
    if (ledgerFault !== undefined) return noOutputs;
    let threw: unknown;
    let failed = false;
    try {
      applyResourceEvent(ledger, event);
    } catch (error) {
      threw = error;
      failed = true;
    }
    const outbox = ledger.outbox;
    // What it decided before it threw still goes out, once. By index: the outbox is often the ledger's shared empty
    // array, and a for-of over arrays of two kinds here made an iterator per event.
    for (let index = 0; index < outbox.length; index++)
      dispatchOutput(outbox[index] as ResourceOutput, event.now, ledger, waiters, notices);
    if (failed) {
      ledgerFault = `The resource manager failed on a ${event.type} event: ${threw instanceof Error ? threw.message : String(threw)}`;
      timer.stop();
      waiters.stopAll(ledgerFault);
      return outbox;
    }
    timer.schedule(ledger.nextWakeAt);
    return outbox;
  };

  /** The nearest scope at or above `scope` with a USD budget, or null. */
  const usdBudgetIn = (scope: string): string | null => {
    let current: string | null = scope;
    let depth = 0;
    while (current !== null && depth++ < 64) {
      const entry: ScopeState | undefined = state().scopes[current];
      if (!entry) return null;
      if (entry.usdLimit !== null) return current;
      current = entry.parent;
    }
    return null;
  };

  const usdBudgetFor: ResourceManager['usdBudgetFor'] = (run) => {
    if ((run.budget ?? config.budgets?.perRun)?.usd !== undefined) return sessionScope(run.session);
    if (run.parentSession !== undefined) return usdBudgetIn(sessionScope(run.parentSession));
    const tenant = run.tenant ?? defaultTenant;
    const scope = tenantScope(tenant);
    // A tenant's scope opens with its first run: before that, its configured budget says.
    if (state().scopes[scope]) return usdBudgetIn(scope);
    return tenantBudget(config.budgets, tenant)?.usd !== undefined ? scope : null;
  };

  /**
   * Reserves a call; the outcome itself when the manager decides during this send (a grant under limits that do
   * not bind, a denial), so the usual call costs no promise; a promise when the call has to wait.
   */
  const reserveNow = (
    request: ReservationRequest,
    signal: AbortSignal | undefined,
  ): ReservationOutcome | Promise<ReservationOutcome> => {
    const run = runs.get(request.session);
    // The run's scope name made once: lookups by the same string skip hashing a new one.
    const scope = run?.scope ?? sessionScope(request.session);
    if (stopped || ledgerFault !== undefined)
      return {
        granted: false,
        reason: 'stopped',
        scope,
        message: ledgerFault ?? 'The resource manager was stopped.',
      };
    if (signal?.aborted)
      return { granted: false, reason: 'aborted', scope, message: 'The call was aborted.' };
    const id = `r${++nextId}`;
    const bound = boundOf(request, priceOf(request.model), outputCeiling);
    const { input, output } = request.estimate;
    const expected = Math.min(bound.maxTokens, Math.max(0, output));
    const tokens = Math.max(0, Math.ceil(input + expected));
    const usd = bound.inputUsd === null ? null : bound.inputUsd + expected * (bound.usdPerToken ?? 0);
    const waiter = waiters.add(id, request, run);
    const { provider, model } = request;
    send({ type: 'reserve', id, scope, provider, model, tokens, usd, bound, now: clock.now() });
    waiters.asked(id);
    if (waiter.outcome !== undefined) return waiter.outcome;
    return new Promise<ReservationOutcome>((resolve) => {
      waiter.resolve = resolve;
      // Only a call that waits listens for an abort.
      if (signal) waiter.detach = whenAborted(signal, () => send({ type: 'release', id, now: clock.now() }));
    });
  };
  /**
   * Settles a grant; the Settlement only when `answer` asks for it (the runtime's own calls do not read it). The
   * grant's run is the one it carries while that run is open, else looked up by session.
   */
  function settleGrant(grant: Grant, usage: Usage, answer: true): Settlement | null;
  function settleGrant(grant: Grant, usage: Usage, answer: boolean): Settlement | null | undefined;
  function settleGrant(grant: Grant, usage: Usage, answer: boolean): Settlement | null | undefined {
    // A grant settled or released before has no reservation left in the ledger: it decides no spend (null).
    const tokens = totalTokens(usage);
    const price = priceOf(grant.model);
    const usd = price ? cost(usage, price) : null;
    const now = clock.now();
    const outputs = send({ type: 'settle', id: grant.id, tokens, usd, now });
    let spend: ResourceOutput | undefined;
    for (let index = 0; index < outputs.length; index++) {
      const output = outputs[index] as ResourceOutput;
      if (output.kind === 'spend') {
        spend = output;
        break;
      }
    }
    if (spend?.kind !== 'spend') return null;
    const { returnedTokens, returnedUsd } = spend;
    const { session, provider, model } = grant;
    const run = openRunOf(grant) ?? runs.get(session);
    expectedOutputs.record(run?.means, provider, model, usage.output);
    notices.notifyRun(
      {
        type: 'spend',
        time: now,
        session,
        provider,
        model,
        tokens,
        usd,
        usage,
        returnedTokens,
        returnedUsd,
      },
      run?.sink,
    );
    return answer ? { tokens, usd, returnedTokens, returnedUsd } : undefined;
  }
  const reserve: ResourceManager['reserve'] = (request, signal) => {
    const outcome = reserveNow(request, signal);
    return outcome instanceof Promise ? outcome : Promise.resolve(outcome);
  };
  const settle: ResourceManager['settle'] = (grant, usage) => settleGrant(grant, usage, true);
  const manager: ResourceManager & { [reserveNowKey]: SyncReserve } = {
    [reserveNowKey]: {
      reserve,
      now: reserveNow,
      settle,
      settleQuietly: (grant, usage) => settleGrant(grant, usage, false),
    },
    kind: 'resource-manager',
    clock,
    openRun(options) {
      const runWhere = `run(${JSON.stringify(options.session)})`;
      if (stopped) throw new ConfigError(`${runWhere}: the resource manager was stopped.`);
      if (options.budget !== undefined) checkBudget(options.budget, `${runWhere}: budget`);
      const now = clock.now();
      const parent = options.parentSession;
      let parentScope: string;
      let tenant: string;
      if (parent !== undefined) {
        const parentTenant = runs.get(parent)?.tenant;
        if (parentTenant === undefined || !state().scopes[sessionScope(parent)]) {
          throw new ConfigError(`${runWhere}: parent session ${JSON.stringify(parent)} is not running.`);
        }
        tenant = parentTenant;
        parentScope = sessionScope(parent);
      } else {
        tenant = options.tenant ?? defaultTenant;
        parentScope = tenantScope(tenant);
        const limit = tenantBudget(config.budgets, tenant);
        if (!state().scopes[parentScope])
          send({ type: 'scope.open', scope: parentScope, parent: null, ...(limit ? { limit } : {}), now });
      }
      const budget = options.budget ?? config.budgets?.perRun;
      const usdScope = usdBudgetFor(options);
      if (usdScope !== null && !priceOf(options.model)) {
        throw new ConfigError(
          `${runWhere}: model "${options.model}" has no price, but ${usdScope} has a USD budget. ` +
            'Add it with createResourceManager({ prices: { "<model>": { input, output } } }) (USD per million tokens).',
        );
      }
      const scope = sessionScope(options.session);
      // A run opened again (resumed) keeps its sink and what was learned of its calls.
      const previous = runs.get(options.session);
      if (previous !== undefined) previous.open = false;
      const sink = options.onNotice;
      runs.set(options.session, {
        tenant,
        scope,
        sink: sink ?? previous?.sink,
        grantSink:
          sink === undefined
            ? previous?.grantSink
            : (options as { [sinkIgnoresGranted]?: true })[sinkIgnoresGranted]
              ? undefined
              : sink,
        means: previous?.means ?? [],
        open: true,
      });
      send({
        type: 'scope.open',
        scope,
        parent: parentScope,
        ...(budget ? { limit: budget } : {}),
        now,
      });
    },
    closeRun(session) {
      const outputs = send({ type: 'scope.close', scope: sessionScope(session), now: clock.now() });
      for (const output of outputs) {
        if (output.kind === 'scope_closed')
          closed.add(session, runs.get(session)?.tenant ?? defaultTenant, output.summary);
      }
      const run = runs.get(session);
      if (run !== undefined) run.open = false;
      runs.delete(session);
    },
    reserve,
    settle,
    release(grant) {
      // Only a granted reservation goes back through its grant (a waiting one goes back through its signal).
      if (ledger.reservations.get(grant.id)?.status !== 'granted') return false;
      const outputs = send({ type: 'release', id: grant.id, now: clock.now() });
      return outputs.some((output) => output.kind === 'released' && output.id === grant.id);
    },
    report429(info) {
      if (stopped) return;
      const retryAfterMs =
        typeof info.retryAfterMs === 'number' && Number.isFinite(info.retryAfterMs) && info.retryAfterMs >= 0
          ? info.retryAfterMs
          : defaultRetryAfterMs;
      const { provider, model } = info;
      send({ type: 'rate_limited', provider, model, retryAfterMs, now: clock.now() });
    },
    usage: (query = {}) =>
      resourceUsage(
        state(),
        query,
        { closed, tenantOf: (session) => runs.get(session)?.tenant, defaultTenant },
        clock.now(),
      ),
    priceOf,
    expectedOutput: (session, provider, model) =>
      expectedOutputs.expected(runs.get(session)?.means, provider, model),
    usdBudgetFor,
    events: { subscribe: (listener) => notices.subscribe(listener) },
    stop() {
      if (stopped) return;
      stopped = true;
      timer.stop();
      waiters.stopAll();
      notices.clear();
    },
  };
  return manager;
}

/** Bound of a manager's cache of prices by model name. */
const maxCachedPrices = 256;

type ReserveNow = (
  request: ReservationRequest,
  signal: AbortSignal | undefined,
) => ReservationOutcome | Promise<ReservationOutcome>;

/** A manager's `reserve` and its synchronous side, and its `settle` and the side that makes no Settlement. */
interface SyncReserve {
  reserve: ResourceManager['reserve'];
  now: ReserveNow;
  settle: ResourceManager['settle'];
  settleQuietly: (grant: Grant, usage: Usage) => void;
}

/**
 * Where a manager keeps the synchronous side of its `reserve` (a manager made elsewhere has none). A symbol on the
 * manager, not a WeakMap: a manager per run (a run with a budget and no manager gets one) would pay an ephemeron each.
 */
const reserveNowKey: unique symbol = Symbol('troupe.reserveNow');

/**
 * Like `manager.reserve`, but answers at once, without a promise, when the manager decides during the request (the
 * usual case: limits that do not bind, or a denial); a promise when the call waits. For the runtime's model calls,
 * which pay the manager on every call.
 */
export function reserveAtOnce(
  manager: ResourceManager,
  request: ReservationRequest,
  signal?: AbortSignal,
): ReservationOutcome | Promise<ReservationOutcome> {
  const sync = (manager as Partial<Record<typeof reserveNowKey, SyncReserve>>)[reserveNowKey];
  // A wrapper that spreads a manager and replaces its `reserve` carries the symbol too: its own `reserve` decides.
  return sync && sync.reserve === manager.reserve
    ? sync.now(request, signal)
    : manager.reserve(request, signal);
}

/**
 * Like `manager.settle`, for a caller that does not read the Settlement (the runtime's model calls): makes none.
 */
export function settleAndForget(manager: ResourceManager, grant: Grant, usage: Usage): void {
  const sync = (manager as Partial<Record<typeof reserveNowKey, SyncReserve>>)[reserveNowKey];
  // A wrapper that spreads a manager and replaces its `settle` carries the symbol too: its own `settle` decides.
  if (sync && sync.settle === manager.settle) sync.settleQuietly(grant, usage);
  else manager.settle(grant, usage);
}

/**
 * What a call may spend, as the ledger sizes its reservation: its prompt's estimate (rounded up), the most output
 * it asks for (its own limit, else the manager's), and the prices of both (output at the dearer of the output and
 * reasoning rates, since reasoning tokens count as output).
 */
function boundOf(request: ReservationRequest, price: ModelPrice | undefined, ceiling: number): OutputBound {
  const input = Math.max(0, Math.ceil(finiteOr(request.estimate.input, 0)));
  const asked = request.maxOutputTokens;
  const maxTokens =
    typeof asked === 'number' && Number.isFinite(asked) && asked >= 1 ? Math.floor(asked) : ceiling;
  return {
    inputTokens: input,
    inputUsd: price ? cost({ input, output: 0, cached: 0, reasoning: 0 }, price) : null,
    maxTokens,
    usdPerToken: price ? Math.max(price.output, price.reasoning ?? price.output) / 1_000_000 : null,
  };
}

function finiteOr(value: number, fallback: number): number {
  return Number.isFinite(value) ? value : fallback;
}
