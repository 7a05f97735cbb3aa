import { type Actor, createActor } from 'xstate';
import { onAbort as whenAborted } from '../core/abort.ts';
import { type Clock, systemClock } from '../core/clock.ts';
import { ConfigError } from '../core/errors.ts';
import {
  cost,
  defaultPrices,
  findPrice,
  type ModelPrice,
  type PriceTable,
  validatePrices,
} from '../core/prices.ts';
import { totalTokens, type Usage } from '../core/usage.ts';
import {
  type BudgetLimit,
  type DenialReason,
  type QuotaLimit,
  type ResourceEvent,
  type ResourceOutput,
  type ResourceState,
  resourceLogic,
  type ScopeState,
  type ScopeSummary,
  summarize,
} from '../machines/resources.ts';

/** Budgets by scope. A run's own `budget` option overrides `perRun`; `tenants` overrides `perTenant` by name. */
export interface BudgetsConfig {
  /** Every tenant's budget unless `tenants` names it. */
  perTenant?: BudgetLimit | undefined;
  tenants?: Readonly<Record<string, BudgetLimit>> | undefined;
  /** Every run's budget unless the run sets its own. */
  perRun?: BudgetLimit | undefined;
}

export interface ResourceManagerConfig {
  budgets?: BudgetsConfig | undefined;
  quotas?: readonly QuotaLimit[] | undefined;
  /** Prices by model name, merged over `defaultPrices`. */
  prices?: Readonly<Record<string, ModelPrice>> | undefined;
  /** Model calls in flight at once across every run this manager serves. */
  concurrency?: number | undefined;
  /** Time source for windows and retry-after; tests pass a simulated clock. Default: the system clock. */
  clock?: Clock | undefined;
  /** Tenant of runs that name none. Default 'default'. */
  defaultTenant?: string | undefined;
}

export interface ReservationRequest {
  /** The run (session id) the call belongs to; the run must have been opened with `openRun`. */
  session: string;
  provider: string;
  model: string;
  /** Estimated tokens: the prompt, and the most the call may write. */
  estimate: { input: number; output: number };
}

/** A granted reservation: settle it with the call's usage, or release it if the call did not happen. */
export interface Grant {
  readonly id: string;
  readonly session: string;
  readonly provider: string;
  readonly model: string;
  readonly tokens: number;
  readonly usd: number | null;
  readonly waitedMs: number;
}

export type ReservationOutcome =
  | { granted: true; grant: Grant }
  | { granted: false; reason: DenialReason | 'aborted' | 'stopped'; scope: string; message: string };

export interface Settlement {
  tokens: number;
  usd: number | null;
  /** Reserved minus actual (negative when the call cost more than its estimate). */
  returnedTokens: number;
  returnedUsd: number | null;
}

/** Spend and what is left of one scope's budget. Remaining is null where there is no limit. */
export interface ScopeUsage extends ScopeSummary {
  remainingTokens: number | null;
  remainingUsd: number | null;
  open: boolean;
}

export interface ResourceUsage {
  tenant: ScopeUsage | null;
  session: ScopeUsage | null;
}

/** What the manager reports to its subscribers (and, for a run's own calls, to the run's event stream). */
export type ResourceNotice =
  | {
      type: 'budget_warning';
      time: number;
      session: string;
      scope: string;
      dimension: 'tokens' | 'usd';
      spent: number;
      limit: number;
      threshold: number;
    }
  | { type: 'quota_wait'; time: number; session: string; quota: string; position: number }
  | {
      type: 'spend';
      time: number;
      session: string;
      provider: string;
      model: string;
      tokens: number;
      usd: number | null;
      usage: Usage;
      returnedTokens: number;
      returnedUsd: number | null;
    }
  | { type: 'denied'; time: number; session: string; reason: DenialReason; scope: string; message: string }
  | { type: 'rate_limited'; time: number; quota: string; until: number };

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
  /** Resolves when granted or denied; waits for quotas in FIFO order. Aborting the signal while waiting releases. */
  reserve(request: ReservationRequest, signal?: AbortSignal): Promise<ReservationOutcome>;
  /** Records the call's actual usage; returns null if the grant was already settled or released. */
  settle(grant: Grant, usage: Usage): Settlement | null;
  /** Returns a reservation whose call did not complete. True the first time, false after. */
  release(grant: Grant): boolean;
  /** A 429: no call to this provider and model is granted before `retryAfterMs` has passed. */
  report429(info: { provider: string; model: string; retryAfterMs?: number | undefined }): void;
  usage(query?: { tenant?: string | undefined; session?: string | undefined }): ResourceUsage;
  priceOf(model: string): ModelPrice | undefined;
  readonly events: { subscribe(listener: (notice: ResourceNotice) => void): () => void };
  /** Denies every waiting call, clears the timer. Nothing runs after it. */
  stop(): void;
}

/** How long a 429 without retry-after blocks a quota. */
const defaultRetryAfterMs = 1_000;
/** Closed runs whose usage can still be asked for. */
const keepClosedRuns = 10_000;

const tenantScope = (tenant: string) => `tenant:${tenant}`;
const sessionScope = (session: string) => `session:${session}`;

interface Waiter {
  session: string;
  request: ReservationRequest;
  resolve: (outcome: ReservationOutcome) => void;
  detach: () => void;
}

/**
 * Creates the resource manager: one actor (src/machines/resources.ts) that every model call asks first, plus the
 * timer that wakes waiting calls when a quota window moves on. Share one manager between runs (or give it to
 * `createAgentSystem`) to share tenant budgets and quotas; a run with a budget and no manager gets a private one.
 */
export function createResourceManager(config: ResourceManagerConfig = {}): ResourceManager {
  const where = 'createResourceManager()';
  checkConfig(config, where);
  const clock = config.clock ?? systemClock;
  const prices: PriceTable = config.prices
    ? { ...defaultPrices, ...validatePrices({ ...config.prices }, where) }
    : defaultPrices;
  const defaultTenant = config.defaultTenant ?? 'default';
  const actor: Actor<typeof resourceLogic> = createActor(resourceLogic, {
    input: {
      ...(config.quotas ? { quotas: config.quotas } : {}),
      ...(config.concurrency !== undefined ? { concurrency: config.concurrency } : {}),
    },
  });
  actor.subscribe({ error: () => undefined });
  actor.start();

  const waiters = new Map<string, Waiter>();
  const grants = new Map<string, Grant>();
  const sinks = new Map<string, (notice: ResourceNotice) => void>();
  const tenantOf = new Map<string, string>();
  const closed = new Map<string, { tenant: string; summary: ScopeSummary }>();
  const listeners = new Set<(notice: ResourceNotice) => void>();
  let nextId = 0;
  let timer: unknown;
  let timerAt: number | null = null;
  let stopped = false;

  const state = (): ResourceState => actor.getSnapshot().context;

  const notify = (notice: ResourceNotice) => {
    const session = 'session' in notice ? notice.session : undefined;
    const sink = session !== undefined ? sinks.get(session) : undefined;
    sink?.(notice);
    for (const listener of listeners) {
      try {
        listener(notice);
      } catch (error) {
        queueMicrotask(() => console.error('troupe: a resource listener threw', error));
      }
    }
  };

  /** Sends one event and acts on what it decided. Returns the decisions for the caller to inspect. */
  const send = (event: ResourceEvent): ResourceOutput[] => {
    actor.send(event);
    const current = state();
    const outbox = current.outbox;
    for (const output of outbox) dispatch(output, event.now);
    schedule(current.nextWakeAt);
    return outbox;
  };

  const dispatch = (output: ResourceOutput, now: number) => {
    switch (output.kind) {
      case 'granted': {
        const waiter = waiters.get(output.id);
        if (!waiter) return;
        waiters.delete(output.id);
        waiter.detach();
        const reservation = state().reservations[output.id];
        const grant: Grant = Object.freeze({
          id: output.id,
          session: waiter.session,
          provider: waiter.request.provider,
          model: waiter.request.model,
          tokens: reservation?.tokens ?? 0,
          usd: reservation?.usd ?? null,
          waitedMs: output.waitedMs,
        });
        grants.set(output.id, grant);
        waiter.resolve({ granted: true, grant });
        return;
      }
      case 'denied': {
        const waiter = waiters.get(output.id);
        const session = waiter?.session ?? output.scope;
        if (waiter) {
          waiters.delete(output.id);
          waiter.detach();
          waiter.resolve({
            granted: false,
            reason: output.reason,
            scope: output.blocking,
            message: output.message,
          });
        }
        notify({
          type: 'denied',
          time: now,
          session,
          reason: output.reason,
          scope: output.blocking,
          message: output.message,
        });
        return;
      }
      case 'waiting': {
        const waiter = waiters.get(output.id);
        if (waiter)
          notify({
            type: 'quota_wait',
            time: now,
            session: waiter.session,
            quota: output.quota,
            position: output.position,
          });
        return;
      }
      case 'released': {
        grants.delete(output.id);
        const waiter = waiters.get(output.id);
        if (waiter) {
          waiters.delete(output.id);
          waiter.detach();
          waiter.resolve({
            granted: false,
            reason: 'aborted',
            scope: sessionScope(waiter.session),
            message: 'The call was aborted while it waited for its quota.',
          });
        }
        return;
      }
      case 'budget_warning':
        notify({
          type: 'budget_warning',
          time: now,
          session: sessionOf(output.origin),
          scope: output.scope,
          dimension: output.dimension,
          spent: output.spent,
          limit: output.limit,
          threshold: output.threshold,
        });
        return;
      case 'rate_limited':
        notify({ type: 'rate_limited', time: now, quota: output.quota, until: output.until });
        return;
      case 'spend':
      case 'scope_closed':
        // Reported by settle() and closeRun(), which know the usage and the tenant.
        return;
    }
  };

  const schedule = (wakeAt: number | null) => {
    if (wakeAt === timerAt) return;
    if (timer !== undefined) clock.clearTimeout(timer);
    timer = undefined;
    timerAt = wakeAt;
    if (wakeAt === null || stopped) return;
    timer = clock.setTimeout(
      () => {
        timer = undefined;
        timerAt = null;
        if (!stopped) send({ type: 'tick', now: clock.now() });
      },
      Math.max(0, wakeAt - clock.now()),
    );
  };

  const scopeUsage = (summary: ScopeSummary | undefined, open: boolean, now: number): ScopeUsage | null => {
    if (!summary) return null;
    const current = open ? windowed(state().scopes[summary.scope], summary, now) : summary;
    return {
      ...current,
      remainingTokens:
        current.tokensLimit === null
          ? null
          : Math.max(0, current.tokensLimit - current.windowTokens - current.reservedTokens),
      remainingUsd:
        current.usdLimit === null
          ? null
          : Math.max(0, current.usdLimit - current.windowUsd - current.reservedUsd),
      open,
    };
  };

  const manager: ResourceManager = {
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
        const parentTenant = tenantOf.get(parent);
        if (parentTenant === undefined || !state().scopes[sessionScope(parent)]) {
          throw new ConfigError(`${runWhere}: parent session ${JSON.stringify(parent)} is not running.`);
        }
        tenant = parentTenant;
        parentScope = sessionScope(parent);
      } else {
        tenant = options.tenant ?? defaultTenant;
        parentScope = tenantScope(tenant);
        const limit = config.budgets?.tenants?.[tenant] ?? config.budgets?.perTenant;
        if (!state().scopes[parentScope])
          send({ type: 'scope.open', scope: parentScope, parent: null, ...(limit ? { limit } : {}), now });
      }
      const budget = options.budget ?? config.budgets?.perRun;
      const usdScope = budget?.usd !== undefined ? sessionScope(options.session) : usdBudgetIn(parentScope);
      if (usdScope !== null && !findPrice(prices, options.model)) {
        throw new ConfigError(
          `${runWhere}: model "${options.model}" has no price, but ${usdScope} has a USD budget. ` +
            'Add it with createResourceManager({ prices: { "<model>": { input, output } } }) (USD per million tokens).',
        );
      }
      tenantOf.set(options.session, tenant);
      if (options.onNotice) sinks.set(options.session, options.onNotice);
      send({
        type: 'scope.open',
        scope: sessionScope(options.session),
        parent: parentScope,
        ...(budget ? { limit: budget } : {}),
        now,
      });
    },
    closeRun(session) {
      const outputs = send({ type: 'scope.close', scope: sessionScope(session), now: clock.now() });
      for (const output of outputs) {
        if (output.kind !== 'scope_closed') continue;
        closed.set(session, { tenant: tenantOf.get(session) ?? defaultTenant, summary: output.summary });
        if (closed.size > keepClosedRuns) {
          const oldest = closed.keys().next().value;
          if (oldest !== undefined) closed.delete(oldest);
        }
      }
      sinks.delete(session);
      tenantOf.delete(session);
    },
    reserve(request, signal) {
      const scope = sessionScope(request.session);
      if (stopped)
        return Promise.resolve({
          granted: false,
          reason: 'stopped',
          scope,
          message: 'The resource manager was stopped.',
        });
      if (signal?.aborted)
        return Promise.resolve({
          granted: false,
          reason: 'aborted',
          scope,
          message: 'The call was aborted.',
        });
      const id = `r${++nextId}`;
      const tokens = Math.max(0, Math.ceil(request.estimate.input + request.estimate.output));
      const price = findPrice(prices, request.model);
      const usd = price
        ? cost(
            { input: request.estimate.input, output: request.estimate.output, cached: 0, reasoning: 0 },
            price,
          )
        : null;
      return new Promise<ReservationOutcome>((resolve) => {
        let stopWaiting: (() => void) | undefined;
        const waiter: Waiter = {
          session: request.session,
          request,
          resolve,
          detach: () => stopWaiting?.(),
        };
        waiters.set(id, waiter);
        send({
          type: 'reserve',
          id,
          scope,
          provider: request.provider,
          model: request.model,
          tokens,
          usd,
          now: clock.now(),
        });
        // Usually the call is granted (or denied) during that send: only a call that waits listens for an abort.
        if (signal && waiters.get(id) === waiter)
          stopWaiting = whenAborted(signal, () => send({ type: 'release', id, now: clock.now() }));
      });
    },
    settle(grant, usage) {
      if (!grants.has(grant.id)) return null;
      grants.delete(grant.id);
      const tokens = totalTokens(usage);
      const price = findPrice(prices, grant.model);
      const usd = price ? cost(usage, price) : null;
      const now = clock.now();
      const outputs = send({ type: 'settle', id: grant.id, tokens, usd, now });
      const spend = outputs.find((output) => output.kind === 'spend');
      if (spend?.kind !== 'spend') return null;
      const settlement: Settlement = {
        tokens,
        usd,
        returnedTokens: spend.returnedTokens,
        returnedUsd: spend.returnedUsd,
      };
      notify({
        type: 'spend',
        time: now,
        session: grant.session,
        provider: grant.provider,
        model: grant.model,
        tokens,
        usd,
        usage,
        returnedTokens: spend.returnedTokens,
        returnedUsd: spend.returnedUsd,
      });
      return settlement;
    },
    release(grant) {
      if (!grants.has(grant.id)) return false;
      const outputs = send({ type: 'release', id: grant.id, now: clock.now() });
      return outputs.some((output) => output.kind === 'released' && output.id === grant.id);
    },
    report429(info) {
      if (stopped) return;
      const retryAfterMs =
        typeof info.retryAfterMs === 'number' && Number.isFinite(info.retryAfterMs) && info.retryAfterMs >= 0
          ? info.retryAfterMs
          : defaultRetryAfterMs;
      send({
        type: 'rate_limited',
        provider: info.provider,
        model: info.model,
        retryAfterMs,
        now: clock.now(),
      });
    },
    usage(query = {}) {
      const now = clock.now();
      const session = query.session;
      let sessionUsage: ScopeUsage | null = null;
      let tenant = query.tenant;
      if (session !== undefined) {
        const open = state().scopes[sessionScope(session)];
        if (open) {
          sessionUsage = scopeUsage(summarize(open), true, now);
          tenant ??= tenantOf.get(session);
        } else {
          const record = closed.get(session);
          if (record) {
            sessionUsage = scopeUsage(record.summary, false, now);
            tenant ??= record.tenant;
          }
        }
      }
      const tenantState = state().scopes[tenantScope(tenant ?? defaultTenant)];
      return {
        tenant: scopeUsage(tenantState ? summarize(tenantState) : undefined, true, now),
        session: sessionUsage,
      };
    },
    priceOf: (model) => findPrice(prices, model),
    events: {
      subscribe(listener) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    },
    stop() {
      if (stopped) return;
      stopped = true;
      if (timer !== undefined) clock.clearTimeout(timer);
      timer = undefined;
      timerAt = null;
      for (const [id, waiter] of waiters) {
        waiters.delete(id);
        waiter.detach();
        waiter.resolve({
          granted: false,
          reason: 'stopped',
          scope: sessionScope(waiter.session),
          message: 'The resource manager was stopped.',
        });
      }
      actor.stop();
      listeners.clear();
      sinks.clear();
    },
  };

  /** The nearest scope at or above `scope` with a USD budget, or null. */
  function usdBudgetIn(scope: string): string | null {
    let current: string | null = scope;
    let depth = 0;
    while (current !== null && depth++ < 64) {
      const entry: ScopeState | undefined = state().scopes[current];
      if (!entry) return null;
      if (entry.usdLimit !== null) return current;
      current = entry.parent;
    }
    return null;
  }

  return manager;
}

function sessionOf(scope: string): string {
  return scope.startsWith('session:') ? scope.slice('session:'.length) : scope;
}

/** A summary with the rolling window applied at `now` (the state only expires entries when an event touches it). */
function windowed(scope: ScopeState | undefined, summary: ScopeSummary, now: number): ScopeSummary {
  if (!scope || scope.windowMs === null) return summary;
  const cutoff = now - scope.windowMs;
  let tokens = 0;
  let usd = 0;
  for (const entry of scope.window) {
    if (entry.at > cutoff) {
      tokens += entry.tokens;
      usd += entry.usd;
    }
  }
  return { ...summary, windowTokens: tokens, windowUsd: usd };
}

function checkConfig(config: ResourceManagerConfig, where: string): void {
  if (typeof config !== 'object' || config === null)
    throw new ConfigError(`${where}: options must be an object.`);
  const budgets = config.budgets ?? {};
  if (budgets.perTenant) checkBudget(budgets.perTenant, `${where}: budgets.perTenant`);
  if (budgets.perRun) checkBudget(budgets.perRun, `${where}: budgets.perRun`);
  for (const [tenant, budget] of Object.entries(budgets.tenants ?? {}))
    checkBudget(budget, `${where}: budgets.tenants["${tenant}"]`);
  for (const [index, quota] of (config.quotas ?? []).entries()) {
    for (const field of ['requestsPerMinute', 'tokensPerMinute', 'maxInFlight'] as const) {
      const value = quota[field];
      if (value !== undefined && !(Number.isInteger(value) && value > 0))
        throw new ConfigError(`${where}: quotas[${index}].${field} must be a whole number > 0.`);
    }
  }
  if (config.concurrency !== undefined && !(Number.isInteger(config.concurrency) && config.concurrency > 0))
    throw new ConfigError(`${where}: concurrency must be a whole number > 0.`);
}

function checkBudget(budget: BudgetLimit, where: string): void {
  if (typeof budget !== 'object' || budget === null) throw new ConfigError(`${where} must be an object.`);
  for (const field of ['tokens', 'usd', 'windowMs'] as const) {
    const value = budget[field];
    if (value !== undefined && !(typeof value === 'number' && Number.isFinite(value) && value > 0))
      throw new ConfigError(`${where}.${field} must be a number > 0.`);
  }
  if (budget.warnAt !== undefined && !(budget.warnAt > 0 && budget.warnAt <= 1))
    throw new ConfigError(`${where}.warnAt must be a fraction in (0, 1].`);
}
