import { fromTransition } from 'xstate';

/**
 * The resource manager's logic: budgets per scope, quotas per provider and model, in-flight limits, and the queue
 * of reservations that must wait (first come, first served per quota; a call whose budget is only held by calls in
 * flight waits for them to settle). A transition function over plain, serializable data:
 * it reads no clock (every event carries `now`), does no I/O, never throws, and says what it decided in `outbox`
 * (decisions and notices) and `trace` (which branch it took, for the generated tests).
 *
 * Why a transition function and not a statechart: the manager holds one entry per running session and per pending
 * reservation (10,000 sessions is the target), and every model call goes through it twice. A machine's `assign`
 * copies context per event, which is O(sessions); this function updates the entries it touches in place, so an
 * event costs O(scope depth + quotas) whatever the number of sessions (bench/resources/ measures both). The
 * resource manager applies events to a state it owns exclusively (`applyResourceEvent`, as the actor logic
 * `resourceLogic` does); `resourceTransition` and `pureResourceLogic` copy first, for traversal and tests that keep
 * old states.
 */

/** A budget as configured: any of tokens and USD, over the lifetime of the scope or a rolling window. */
export interface BudgetLimit {
  /** Tokens (input + output). */
  tokens?: number | undefined;
  usd?: number | undefined;
  /** Rolling window in milliseconds (e.g. 86_400_000 for "per day"); absent means the scope's lifetime. */
  windowMs?: number | undefined;
  /** Fraction of a budget at which a `budget_warning` is emitted. Default 0.8. */
  warnAt?: number | undefined;
}

/**
 * A quota as configured. A quota without `model` is shared by all the provider's models (an account limit). A
 * provider name also covers its wire variants: `openai` matches `openai-chat` and `openai-responses`.
 */
export interface QuotaLimit {
  provider?: string | undefined;
  model?: string | undefined;
  requestsPerMinute?: number | undefined;
  tokensPerMinute?: number | undefined;
  /** Model calls in flight at once. */
  maxInFlight?: number | undefined;
}

export const defaultWarnAt = 0.8;
/** Quota windows are per minute, as providers publish their limits. */
export const quotaWindowMs = 60_000;
/** Key of the global concurrency limit, a quota every call belongs to. */
export const globalQuotaKey = '*';

export interface ScopeState {
  id: string;
  parent: string | null;
  tokensLimit: number | null;
  usdLimit: number | null;
  windowMs: number | null;
  warnAt: number;
  /** Lifetime spend. */
  spentTokens: number;
  spentUsd: number;
  /** Spend inside the rolling window (equal to lifetime spend without a window). */
  windowTokens: number;
  windowUsd: number;
  /** Spend entries still inside the rolling window, oldest first (empty without a window). */
  window: { at: number; tokens: number; usd: number }[];
  /** Estimates of granted calls not settled yet. */
  reservedTokens: number;
  reservedUsd: number;
  /** Granted calls not settled yet whose estimates are in `reserved*` (this scope's and its descendants'). */
  callsInFlight: number;
  warnedTokens: boolean;
  warnedUsd: boolean;
  calls: number;
  /**
   * Id of this scope's latest reservation (waiting or granted), null when it holds none; each reservation names the
   * one its scope holds before it (`heldAfter`), so closing a scope is O(its calls), not O(all), and a call costs its
   * scope no list of its own (see `reservationsOf`).
   */
  lastHeld: string | null;
}

export interface QuotaState {
  key: string;
  provider: string | null;
  model: string | null;
  requestsPerMinute: number | null;
  tokensPerMinute: number | null;
  maxInFlight: number | null;
  /**
   * The calls granted in the last minute, oldest first, as two arrays of numbers (an entry per call, kept a minute,
   * costs no object): when each was granted, and its tokens (the estimate, then the actual usage once settled).
   */
  logTimes: number[];
  logSizes: number[];
  /** Entries before this index have left the window (the arrays are compacted now and then, not per event). */
  logHead: number;
  /** Sequence number of the first entry: a reservation finds its entry at `seq - logBase` in O(1). */
  logBase: number;
  /** Tokens of the live entries. */
  logTokens: number;
  inFlight: number;
  /** Nothing is granted before this time (a 429's retry-after). */
  blockedUntil: number;
}

/**
 * What a call may spend, for a reservation sized when it is granted: its prompt's estimate and the most output it
 * asks for. The grant caps that output at what every budget of the chain has left after its spend, the
 * reservations of the calls in flight and this prompt, and holds the prompt plus the capped output; so a call
 * that writes at most its cap can pass a budget only by what its prompt was under-estimated.
 */
export interface OutputBound {
  /** The prompt's estimate in tokens, and in USD (null when the model has no price). */
  inputTokens: number;
  inputUsd: number | null;
  /** The most output tokens the call asks for (its request's own limit, or the manager's default). */
  maxTokens: number;
  /** USD per output token at the dearest output rate (reasoning or not); null when the model has no price. */
  usdPerToken: number | null;
}

/**
 * The fewest output tokens worth a call: a budget that cannot pay the prompt and this much (or the call's own
 * limit, if lower) denies the call, or holds it while calls in flight hold the rest.
 */
export const minOutputTokens = 16;

export interface Reservation {
  id: string;
  scope: string;
  /** The scope and its ancestors, leaf first. */
  chain: string[];
  provider: string;
  model: string;
  /**
   * What the budgets of the chain hold for it once granted: the estimate, or for a bounded reservation its
   * prompt plus its output cap (set at the grant).
   */
  tokens: number;
  /** Estimated cost, like `tokens`; null when the model has no price (allowed only if no scope has a USD budget). */
  usd: number | null;
  /** The estimate the quotas count until the call settles. */
  quotaTokens: number;
  /** Sizes the reservation at the grant; null for a reservation of a fixed estimate. */
  bound: OutputBound | null;
  /** The most output tokens the call may write, set at the grant of a bounded reservation under a budget. */
  outputCap: number | null;
  quotas: string[];
  /**
   * Once granted, the sequence number of this call's entry in the log of each of its `quotas` (same order), -1 for
   * a quota that keeps no log; empty until then.
   */
  logSeqs: number[];
  status: 'waiting' | 'granted';
  requestedAt: number;
  /**
   * While it waits: the scope whose budget is held by calls in flight (it waits for them to settle, and holds no
   * place in its quotas' queues meanwhile); null when it waits for a quota.
   */
  heldBy: string | null;
  /** The reservation its scope holds before this one (see `ScopeState.lastHeld`), or null. */
  heldAfter: string | null;
}

export interface ResourceState {
  scopes: Record<string, ScopeState>;
  quotas: Record<string, QuotaState>;
  /** Configured quota keys in configuration order (matching is done against these). */
  quotaKeys: string[];
  /**
   * Which quota keys apply to a provider and model, by provider then model, computed once per pair (two lookups of
   * the names a call already holds, rather than a key string made per call).
   */
  quotaIndex: Map<string, Map<string, string[]>>;
  /**
   * Reservations by id, waiting or granted. A Map: ids come and go with every call, which an object keyed by them
   * pays in slow deletes and in interning each new id.
   */
  reservations: Map<string, Reservation>;
  /** Ids of waiting reservations, in arrival order. */
  waiting: string[];
  /** When a waiting reservation may next become grantable by time alone; null if none is waiting on time. */
  nextWakeAt: number | null;
  /** What the last event decided, in order. Replaced by every event. */
  outbox: ResourceOutput[];
  /** The branches the last event took. Replaced by every event. */
  trace: ResourceBranch[];
}

export interface ResourceConfigInput {
  quotas?: readonly QuotaLimit[];
  /** Model calls in flight at once across everything this manager serves. */
  concurrency?: number;
}

export type DenialReason =
  | 'budget_exhausted'
  | 'unpriced_model'
  | 'exceeds_quota'
  | 'unknown_scope'
  | 'duplicate';

export type ResourceEvent =
  | { type: 'scope.open'; scope: string; parent: string | null; limit?: BudgetLimit; now: number }
  | { type: 'scope.close'; scope: string; now: number }
  | {
      type: 'reserve';
      id: string;
      scope: string;
      provider: string;
      model: string;
      /** The estimate: the prompt and the output the call is expected to write. */
      tokens: number;
      usd: number | null;
      /** Present when the call's output is to be capped by its budgets (see OutputBound). */
      bound?: OutputBound | undefined;
      now: number;
    }
  | { type: 'settle'; id: string; tokens: number; usd: number | null; now: number }
  | { type: 'release'; id: string; now: number }
  | { type: 'rate_limited'; provider: string; model: string; retryAfterMs: number; now: number }
  | { type: 'tick'; now: number };

export interface ScopeSummary {
  scope: string;
  parent: string | null;
  spentTokens: number;
  spentUsd: number;
  /** Spend inside the rolling window, or lifetime spend. */
  windowTokens: number;
  windowUsd: number;
  reservedTokens: number;
  reservedUsd: number;
  tokensLimit: number | null;
  usdLimit: number | null;
  windowMs: number | null;
  calls: number;
}

export type ResourceOutput =
  | {
      kind: 'granted';
      id: string;
      scope: string;
      waitedMs: number;
      /** The most output tokens the call may write; null when nothing caps it (no budget, or a fixed estimate). */
      maxOutputTokens: number | null;
    }
  | { kind: 'waiting'; id: string; scope: string; quota: string; position: number }
  | {
      kind: 'budget_wait';
      id: string;
      scope: string;
      /** The scope whose budget is held by calls in flight. */
      blocking: string;
      /** Spend in the window and the estimates in flight, in the dimension that holds the call back. */
      spent: number;
      reserved: number;
      limit: number;
      dimension: 'tokens' | 'usd';
    }
  | { kind: 'denied'; id: string; scope: string; reason: DenialReason; blocking: string; message: string }
  | {
      kind: 'spend';
      id: string;
      scope: string;
      tokens: number;
      usd: number | null;
      /** Reserved minus actual: what the settlement gave back (negative when the call cost more). */
      returnedTokens: number;
      returnedUsd: number | null;
    }
  | { kind: 'released'; id: string; scope: string; tokens: number; usd: number | null }
  | {
      kind: 'budget_warning';
      /** The scope whose budget crossed its threshold. */
      scope: string;
      /** The scope (session) whose call caused it. */
      origin: string;
      dimension: 'tokens' | 'usd';
      spent: number;
      limit: number;
      threshold: number;
    }
  | { kind: 'rate_limited'; quota: string; until: number }
  | { kind: 'scope_closed'; scope: string; summary: ScopeSummary };

/** Every branch of the transition function; the generated tests must reach each one. */
export const resourceBranches = [
  'scope.opened',
  'scope.updated',
  'scope.unknown_parent',
  'scope.closed',
  'scope.close_released',
  'scope.close_unknown',
  'reserve.granted',
  'reserve.queued',
  'reserve.held_budget',
  'reserve.denied_budget',
  'reserve.denied_unpriced',
  'reserve.denied_exceeds_quota',
  'reserve.denied_unknown_scope',
  'reserve.duplicate',
  'wait.granted',
  'wait.denied_budget',
  'wait.held_budget',
  'wait.still_waiting',
  'settle.settled',
  'settle.unknown',
  'release.granted',
  'release.waiting',
  'release.unknown',
  'budget.warning',
  'budget.rearmed',
  'budget.window_expired',
  'quota.window_expired',
  'rate_limited.blocked',
  'rate_limited.implicit_quota',
  'tick',
] as const;

export type ResourceBranch = (typeof resourceBranches)[number];

export function initialResourceState(config: ResourceConfigInput = {}): ResourceState {
  const state: ResourceState = {
    scopes: {},
    quotas: {},
    quotaKeys: [],
    quotaIndex: new Map(),
    reservations: new Map(),
    waiting: [],
    nextWakeAt: null,
    outbox: [],
    trace: [],
  };
  for (const quota of config.quotas ?? []) {
    const key = quotaKeyOf(quota.provider ?? null, quota.model ?? null);
    const existing = state.quotas[key];
    const entry = existing ?? newQuota(key, quota.provider ?? null, quota.model ?? null);
    entry.requestsPerMinute = quota.requestsPerMinute ?? entry.requestsPerMinute;
    entry.tokensPerMinute = quota.tokensPerMinute ?? entry.tokensPerMinute;
    entry.maxInFlight = quota.maxInFlight ?? entry.maxInFlight;
    if (!existing) {
      state.quotas[key] = entry;
      state.quotaKeys.push(key);
    }
  }
  if (config.concurrency !== undefined) {
    const global = newQuota(globalQuotaKey, null, null);
    global.maxInFlight = config.concurrency;
    state.quotas[globalQuotaKey] = global;
  }
  return state;
}

export function quotaKeyOf(provider: string | null, model: string | null): string {
  return `${provider ?? '*'}:${model ?? '*'}`;
}

function newQuota(key: string, provider: string | null, model: string | null): QuotaState {
  return {
    key,
    provider,
    model,
    requestsPerMinute: null,
    tokensPerMinute: null,
    maxInFlight: null,
    logTimes: [],
    logSizes: [],
    logHead: 0,
    logBase: 0,
    logTokens: 0,
    inFlight: 0,
    blockedUntil: 0,
  };
}

const resourceEventTypes: ReadonlySet<string> = new Set<ResourceEvent['type']>([
  'scope.open',
  'scope.close',
  'reserve',
  'settle',
  'release',
  'rate_limited',
  'tick',
]);

/**
 * Applies one event to `state` in place and returns it. Deterministic: the same state and event always give the
 * same result. Used by the resource manager and the runtime actor logic, which own their state.
 */
export function applyResourceEvent(state: ResourceState, event: ResourceEvent): ResourceState {
  // XState also hands the logic its own events (xstate.stop when the actor stops): they change nothing.
  if (!resourceEventTypes.has(event.type)) return state;
  state.outbox = nothingDecided;
  state.trace = noBranches;
  switch (event.type) {
    case 'scope.open':
      openScope(state, event);
      break;
    case 'scope.close':
      closeScope(state, event.scope, event.now);
      break;
    case 'reserve':
      reserve(state, event);
      break;
    case 'settle':
      settle(state, event);
      break;
    case 'release':
      release(state, event.id, event.now);
      break;
    case 'rate_limited':
      rateLimited(state, event);
      break;
    case 'tick':
      traced(state, 'tick');
      drain(state, event.now);
      break;
  }
  return state;
}

/**
 * An event's outbox and trace start as these shared empty arrays, and their first entry makes an array of one: most
 * events decide one thing and take one branch, and an empty array grown by a push would hold room for 17 (two such
 * arrays per event, several events per model call).
 */
const nothingDecided = Object.freeze([]) as unknown as ResourceOutput[];
const noBranches = Object.freeze([]) as unknown as ResourceBranch[];

/** Adds a decision to the event's outbox. */
function decided(state: ResourceState, output: ResourceOutput): void {
  if (state.outbox === nothingDecided) state.outbox = [output];
  else state.outbox.push(output);
}

/**
 * A shared, frozen trace of one branch per branch: most events take a single branch, so their trace costs no array
 * of its own; a second branch copies it into one.
 */
const onlyBranch: ReadonlyMap<ResourceBranch, ResourceBranch[]> = new Map(
  resourceBranches.map((branch) => [branch, Object.freeze([branch]) as unknown as ResourceBranch[]]),
);

/** Records a branch the event took. */
function traced(state: ResourceState, branch: ResourceBranch): void {
  const trace = state.trace;
  if (trace === noBranches) state.trace = onlyBranch.get(branch) ?? [branch];
  else if (Object.isFrozen(trace)) state.trace = [...trace, branch];
  else trace.push(branch);
}

/** The pure form: copies the state, then applies the event. For traversal, properties and anyone keeping states. */
export function resourceTransition(state: ResourceState, event: ResourceEvent): ResourceState {
  return applyResourceEvent(structuredClone(state), event);
}

/** The runtime actor logic (state owned by the actor, updated in place). */
export const resourceLogic = fromTransition(
  (state: ResourceState, event: ResourceEvent) => applyResourceEvent(state, event),
  ({ input }: { input: ResourceConfigInput | undefined }) => initialResourceState(input ?? {}),
);

/** The same logic with copy-on-transition, for xstate/graph traversal (which re-applies events to old states). */
export const pureResourceLogic = fromTransition(
  (state: ResourceState, event: ResourceEvent) => resourceTransition(state, event),
  ({ input }: { input: ResourceConfigInput | undefined }) => initialResourceState(input ?? {}),
);

export function summarize(scope: ScopeState): ScopeSummary {
  return {
    scope: scope.id,
    parent: scope.parent,
    spentTokens: scope.spentTokens,
    spentUsd: scope.spentUsd,
    windowTokens: scope.windowTokens,
    windowUsd: scope.windowUsd,
    reservedTokens: scope.reservedTokens,
    reservedUsd: scope.reservedUsd,
    tokensLimit: scope.tokensLimit,
    usdLimit: scope.usdLimit,
    windowMs: scope.windowMs,
    calls: scope.calls,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Scopes

function openScope(state: ResourceState, event: Extract<ResourceEvent, { type: 'scope.open' }>): void {
  const limit = event.limit ?? {};
  const existing = state.scopes[event.scope];
  if (event.parent !== null && state.scopes[event.parent] === undefined)
    traced(state, 'scope.unknown_parent');
  if (existing) {
    // Re-opening updates the limits (a tenant configured later, a run resumed) but keeps the spend.
    traced(state, 'scope.updated');
    existing.parent = event.parent;
    existing.tokensLimit = limit.tokens ?? null;
    existing.usdLimit = limit.usd ?? null;
    existing.windowMs = limit.windowMs ?? null;
    existing.warnAt = limit.warnAt ?? defaultWarnAt;
    return;
  }
  traced(state, 'scope.opened');
  state.scopes[event.scope] = {
    id: event.scope,
    parent: event.parent,
    tokensLimit: limit.tokens ?? null,
    usdLimit: limit.usd ?? null,
    windowMs: limit.windowMs ?? null,
    warnAt: limit.warnAt ?? defaultWarnAt,
    spentTokens: 0,
    spentUsd: 0,
    windowTokens: 0,
    windowUsd: 0,
    window: [],
    reservedTokens: 0,
    reservedUsd: 0,
    callsInFlight: 0,
    warnedTokens: false,
    warnedUsd: false,
    calls: 0,
    lastHeld: null,
  };
}

function closeScope(state: ResourceState, id: string, now: number): void {
  const scope = state.scopes[id];
  if (!scope) {
    traced(state, 'scope.close_unknown');
    return;
  }
  // A run that ends returns whatever it still holds (a call cut short by the end of the run).
  for (const reservationId of reservationsOf(state, scope)) {
    traced(state, 'scope.close_released');
    release(state, reservationId, now);
  }
  traced(state, 'scope.closed');
  decided(state, { kind: 'scope_closed', scope: id, summary: summarize(scope) });
  delete state.scopes[id];
}

/** Ids of the reservations a scope holds (waiting or granted), oldest first. */
export function reservationsOf(state: ResourceState, scope: ScopeState): string[] {
  const ids: string[] = [];
  let id = scope.lastHeld;
  while (id !== null) {
    ids.push(id);
    id = state.reservations.get(id)?.heldAfter ?? null;
  }
  return ids.reverse();
}

/** The scope and its ancestors, leaf first; null when the scope (or an ancestor) is unknown. */
function chainOf(state: ResourceState, id: string): string[] | null {
  // A run under its tenant, the usual chain, is made as a pair: a reservation keeps its chain until it settles,
  // and an array grown by push would hold room for 17.
  const scope = state.scopes[id];
  const parent = scope?.parent;
  if (scope !== undefined && parent !== null && parent !== undefined && parent !== id) {
    const above = state.scopes[parent];
    if (above !== undefined && above.parent === null) return [id, parent];
  }
  const chain: string[] = [];
  let current: string | null = id;
  while (current !== null) {
    const scope: ScopeState | undefined = state.scopes[current];
    if (!scope || chain.length > 64 || chain.includes(current)) return null;
    chain.push(current);
    current = scope.parent;
  }
  return chain;
}

function expireWindow(state: ResourceState, scope: ScopeState, now: number): void {
  if (scope.windowMs === null) return;
  const cutoff = now - scope.windowMs;
  let drop = 0;
  while (drop < scope.window.length && (scope.window[drop]?.at ?? 0) <= cutoff) {
    const entry = scope.window[drop];
    if (entry) {
      scope.windowTokens -= entry.tokens;
      scope.windowUsd -= entry.usd;
    }
    drop++;
  }
  if (drop > 0) {
    traced(state, 'budget.window_expired');
    scope.window.splice(0, drop);
    if (scope.window.length === 0) {
      // Avoid drifting float sums: an empty window spends exactly nothing.
      scope.windowTokens = 0;
      scope.windowUsd = 0;
    }
  }
}

/**
 * What the budgets of a chain say about a call: denied for good, held until calls in flight settle, or it fits,
 * with the most output tokens it may write (null when nothing caps it). A call that fits, the usual case, is
 * answered by its output cap alone, so the verdict costs it no object.
 */
type BudgetVerdict = BudgetDenial | BudgetHold | OutputCap;
type BudgetDenial = { kind: 'deny'; scope: ScopeState; reason: DenialReason; message: string };
type BudgetHold = {
  kind: 'held';
  scope: ScopeState;
  dimension: 'tokens' | 'usd';
  spent: number;
  reserved: number;
  limit: number;
};
/** The most output tokens a call that fits may write; null when nothing caps it. */
type OutputCap = number | null;

/** Whether a verdict keeps the call from starting now (denied or held), rather than letting it fit. */
function stopsCall(verdict: BudgetVerdict): verdict is BudgetDenial | BudgetHold {
  return verdict !== null && typeof verdict === 'object';
}

/**
 * Whether the budgets of the chain let a call start. A denial anywhere in the chain wins over a hold.
 *
 * A bounded call (one with an `OutputBound`) fits when every budget can pay its prompt's estimate and at least
 * `minOutputTokens` of output after its spend and what the calls in flight hold; its output is then capped at what
 * the tightest budget has left, so its own spend stays within every budget unless its prompt was under-estimated.
 * If that much is left only once the calls in flight settle, it is held; if not even their settling could leave
 * it (the spend alone is too high), it is denied.
 *
 * A call of a fixed estimate starts while anything is left of every budget after the spend and the estimates of
 * the calls in flight (so spend exceeds a budget by at most what one call spends above its estimate); it is held
 * while only the calls in flight fill a budget, and denied once a budget's spend has reached it.
 */
function budgetVerdict(
  state: ResourceState,
  chain: string[],
  model: string,
  usd: number | null,
  bound: OutputBound | null,
  now: number,
): BudgetVerdict {
  let held: BudgetHold | null = null;
  let outputCap: number | null = null;
  const minimal = bound ? Math.min(minOutputTokens, bound.maxTokens) : 0;
  for (const id of chain) {
    const scope = state.scopes[id];
    if (!scope) continue;
    expireWindow(state, scope, now);
    if (scope.usdLimit !== null && (usd === null || (bound !== null && bound.usdPerToken === null))) {
      return {
        kind: 'deny',
        scope,
        reason: 'unpriced_model',
        message: `model "${model}" has no price, but ${id} has a USD budget`,
      };
    }
    // Tokens, then USD: a loop over the two dimensions rather than a closure per call.
    for (let usdDimension = false; ; usdDimension = true) {
      const dimension = usdDimension ? 'usd' : 'tokens';
      const limit = usdDimension ? scope.usdLimit : scope.tokensLimit;
      if (limit !== null) {
        const spent = usdDimension ? scope.windowUsd : scope.windowTokens;
        const reserved = usdDimension ? scope.reservedUsd : scope.reservedTokens;
        if (!bound) {
          if (spent >= limit) return exhausted(scope, dimension, spent, limit, '');
          if (held === null && spent + reserved >= limit)
            held = { kind: 'held', scope, dimension, spent, reserved, limit };
        } else {
          // What this budget could pay for the call's output, with and without the calls in flight.
          const perToken = usdDimension ? (bound.usdPerToken ?? 0) : 1;
          const input = usdDimension ? (bound.inputUsd ?? 0) : bound.inputTokens;
          const room = limit - spent - input;
          if (outputTokensFor(room, perToken) < minimal) {
            const needs = `${shown(dimension, input)} for its prompt and ${minimal} output tokens`;
            return exhausted(
              scope,
              dimension,
              spent,
              limit,
              spent >= limit ? '' : `; the call needs ${needs}`,
            );
          }
          const besideFlight = outputTokensFor(room - reserved, perToken);
          if (besideFlight < minimal) {
            if (held === null) held = { kind: 'held', scope, dimension, spent, reserved, limit };
          } else outputCap = Math.min(outputCap ?? bound.maxTokens, besideFlight);
        }
      }
      if (usdDimension) break;
    }
  }
  return held ?? outputCap;
}

/** The denial of a call by a budget whose spend (with the call's prompt, for a bounded call) leaves it nothing. */
function exhausted(
  scope: ScopeState,
  dimension: 'tokens' | 'usd',
  spent: number,
  limit: number,
  detail: string,
): BudgetVerdict {
  const label = dimension === 'tokens' ? 'token' : 'USD';
  return {
    kind: 'deny',
    scope,
    reason: 'budget_exhausted',
    message: `${label} budget of ${scope.id} exhausted: ${shown(dimension, spent)} spent of ${shown(dimension, limit)}${detail}`,
  };
}

/** An amount of a budget's dimension as messages show it. */
function shown(dimension: 'tokens' | 'usd', value: number): string {
  return dimension === 'tokens' ? String(value) : `$${round(value)}`;
}

/** Whole output tokens that `room` pays for at `perToken` each (any number when output is free). */
function outputTokensFor(room: number, perToken: number): number {
  if (room < 0) return -1;
  if (perToken <= 0) return Number.POSITIVE_INFINITY;
  return Math.floor(room / perToken);
}

function round(usd: number): string {
  return usd.toFixed(6).replace(/0+$/, '').replace(/\.$/, '');
}

// ---------------------------------------------------------------------------------------------------------------
// Quotas

function quotasFor(state: ResourceState, provider: string, model: string): string[] {
  let byModel = state.quotaIndex.get(provider);
  if (byModel === undefined) {
    byModel = new Map();
    state.quotaIndex.set(provider, byModel);
  }
  const cached = byModel.get(model);
  if (cached) return cached;
  const keys = state.quotaKeys.filter((key) => {
    const quota = state.quotas[key];
    return (
      quota !== undefined &&
      (quota.provider === null || quota.provider === provider || provider.startsWith(`${quota.provider}-`)) &&
      (quota.model === null || quota.model === model)
    );
  });
  if (state.quotas[globalQuotaKey]) keys.push(globalQuotaKey);
  byModel.set(model, keys);
  return keys;
}

function expireLog(state: ResourceState, quota: QuotaState, now: number): void {
  const cutoff = now - quotaWindowMs;
  const start = quota.logHead;
  while (quota.logHead < quota.logTimes.length && (quota.logTimes[quota.logHead] ?? 0) <= cutoff) {
    quota.logTokens -= quota.logSizes[quota.logHead] ?? 0;
    quota.logHead++;
  }
  if (quota.logHead === start) return;
  traced(state, 'quota.window_expired');
  if (quota.logHead === quota.logTimes.length) {
    quota.logBase += quota.logTimes.length;
    quota.logTimes = [];
    quota.logSizes = [];
    quota.logHead = 0;
    quota.logTokens = 0;
  } else if (quota.logHead >= 1024 && quota.logHead * 2 >= quota.logTimes.length) {
    // Compact once the dead prefix is large, so expiry costs O(1) amortized instead of a splice per event.
    quota.logTimes.splice(0, quota.logHead);
    quota.logSizes.splice(0, quota.logHead);
    quota.logBase += quota.logHead;
    quota.logHead = 0;
  }
}

/** Calls granted in the last minute. */
export function liveRequests(quota: QuotaState): number {
  return quota.logTimes.length - quota.logHead;
}

function quotaAllows(state: ResourceState, quota: QuotaState, tokens: number, now: number): boolean {
  if (now < quota.blockedUntil) return false;
  expireLog(state, quota, now);
  if (quota.requestsPerMinute !== null && liveRequests(quota) >= quota.requestsPerMinute) return false;
  if (quota.tokensPerMinute !== null && quota.logTokens + tokens > quota.tokensPerMinute) return false;
  if (quota.maxInFlight !== null && quota.inFlight >= quota.maxInFlight) return false;
  return true;
}

function allQuotasAllow(state: ResourceState, reservation: Reservation, now: number): boolean {
  for (const key of reservation.quotas) {
    const quota = state.quotas[key];
    if (quota && !quotaAllows(state, quota, reservation.quotaTokens, now)) return false;
  }
  return true;
}

/** Whether a quota only ever tracks time (no request or token limit): then the log need not be kept. */
function logsRequests(quota: QuotaState): boolean {
  return quota.requestsPerMinute !== null || quota.tokensPerMinute !== null;
}

// ---------------------------------------------------------------------------------------------------------------
// Reservations

function reserve(state: ResourceState, event: Extract<ResourceEvent, { type: 'reserve' }>): void {
  if (state.reservations.has(event.id)) {
    denyReserve(
      state,
      event,
      'duplicate',
      event.id,
      `reservation ${event.id} already exists`,
      'reserve.duplicate',
    );
    return;
  }
  const chain = chainOf(state, event.scope);
  if (!chain) {
    denyReserve(
      state,
      event,
      'unknown_scope',
      event.scope,
      `unknown budget scope ${event.scope}`,
      'reserve.denied_unknown_scope',
    );
    return;
  }
  const bound = event.bound ?? null;
  const verdict = budgetVerdict(state, chain, event.model, event.usd, bound, event.now);
  if (stopsCall(verdict) && verdict.kind === 'deny') {
    denyReserve(
      state,
      event,
      verdict.reason,
      verdict.scope.id,
      verdict.message,
      verdict.reason === 'unpriced_model' ? 'reserve.denied_unpriced' : 'reserve.denied_budget',
    );
    return;
  }
  const quotas = quotasFor(state, event.provider, event.model);
  for (const key of quotas) {
    const limit = state.quotas[key]?.tokensPerMinute ?? null;
    if (limit !== null && event.tokens > limit) {
      // It could never be granted: saying so now beats waiting forever (every waiter is granted or denied).
      denyReserve(
        state,
        event,
        'exceeds_quota',
        key,
        `the call's estimate of ${event.tokens} tokens exceeds the ${limit} tokens-per-minute quota of ${key}`,
        'reserve.denied_exceeds_quota',
      );
      return;
    }
  }
  const reservation: Reservation = {
    id: event.id,
    scope: event.scope,
    chain,
    provider: event.provider,
    model: event.model,
    tokens: event.tokens,
    usd: event.usd,
    quotaTokens: event.tokens,
    bound,
    outputCap: null,
    quotas,
    logSeqs: noLogSeqs,
    status: 'waiting',
    requestedAt: event.now,
    heldBy: null,
    heldAfter: null,
  };
  state.reservations.set(event.id, reservation);
  const scope = state.scopes[event.scope];
  if (scope) {
    reservation.heldAfter = scope.lastHeld;
    scope.lastHeld = event.id;
  }
  if (stopsCall(verdict)) {
    // Only calls in flight stand in the way: wait for them to settle, then grant or deny.
    traced(state, 'reserve.held_budget');
    state.waiting.push(event.id);
    holdBack(state, reservation, verdict);
    return;
  }
  // FIFO per quota: a newcomer never overtakes a waiting call that shares one of its quotas.
  const behind = state.waiting.length > 0 && sharesQuotaWithWaiter(state, quotas);
  if (!behind && allQuotasAllow(state, reservation, event.now)) {
    traced(state, 'reserve.granted');
    grant(state, reservation, verdict, event.now);
    return;
  }
  traced(state, 'reserve.queued');
  state.waiting.push(event.id);
  decided(state, {
    kind: 'waiting',
    id: event.id,
    scope: event.scope,
    quota: blockingQuota(state, reservation, event.now),
    position: state.waiting.length,
  });
  state.nextWakeAt = nextWake(state, event.now);
}

/** Denies a reservation as it is asked for. */
function denyReserve(
  state: ResourceState,
  event: Extract<ResourceEvent, { type: 'reserve' }>,
  reason: DenialReason,
  blocking: string,
  message: string,
  branch: ResourceBranch,
): void {
  traced(state, branch);
  decided(state, { kind: 'denied', id: event.id, scope: event.scope, reason, blocking, message });
}

/** Removes a reservation (settled, released or denied) from the table and from what its scope holds. */
function forget(state: ResourceState, reservation: Reservation): void {
  state.reservations.delete(reservation.id);
  const scope = state.scopes[reservation.scope];
  if (!scope) return;
  // Usually the scope's latest call (a run has one call in flight at a time).
  if (scope.lastHeld === reservation.id) {
    scope.lastHeld = reservation.heldAfter;
    return;
  }
  let later = scope.lastHeld === null ? undefined : state.reservations.get(scope.lastHeld);
  while (later !== undefined && later.heldAfter !== reservation.id)
    later = later.heldAfter === null ? undefined : state.reservations.get(later.heldAfter);
  if (later !== undefined) later.heldAfter = reservation.heldAfter;
}

/** The log sequence numbers of a reservation not granted yet (shared: it is replaced at the grant). */
const noLogSeqs = Object.freeze([]) as unknown as number[];

function sharesQuotaWithWaiter(state: ResourceState, quotas: string[]): boolean {
  if (quotas.length === 0) return false;
  for (const id of state.waiting) {
    const waiter = state.reservations.get(id);
    if (waiter && waiter.heldBy === null && waiter.quotas.some((key) => quotas.includes(key))) return true;
  }
  return false;
}

function blockingQuota(state: ResourceState, reservation: Reservation, now: number): string {
  for (const key of reservation.quotas) {
    const quota = state.quotas[key];
    if (quota && !quotaAllows(state, quota, reservation.quotaTokens, now)) return key;
  }
  return reservation.quotas[0] ?? globalQuotaKey;
}

/**
 * Grants a reservation. A bounded one under a budget holds its prompt plus `outputCap` output tokens from here on
 * (decided in the same event as the budgets it was checked against, so no other grant comes in between).
 */
function grant(state: ResourceState, reservation: Reservation, outputCap: number | null, now: number): void {
  reservation.status = 'granted';
  const bound = reservation.bound;
  if (bound && outputCap !== null) {
    reservation.outputCap = outputCap;
    reservation.tokens = bound.inputTokens + outputCap;
    reservation.usd =
      bound.inputUsd === null || bound.usdPerToken === null
        ? null
        : bound.inputUsd + outputCap * bound.usdPerToken;
  }
  for (const id of reservation.chain) {
    const scope = state.scopes[id];
    if (!scope) continue;
    scope.reservedTokens += reservation.tokens;
    scope.reservedUsd += reservation.usd ?? 0;
    scope.callsInFlight += 1;
  }
  const { quotas } = reservation;
  let logSeqs: number[] | null = null;
  for (let index = 0; index < quotas.length; index++) {
    const quota = state.quotas[quotas[index] as string];
    if (!quota) continue;
    quota.inFlight += 1;
    if (logsRequests(quota)) {
      logSeqs ??= new Array<number>(quotas.length).fill(-1);
      logSeqs[index] = quota.logBase + quota.logTimes.length;
      quota.logTimes.push(now);
      quota.logSizes.push(reservation.quotaTokens);
      quota.logTokens += reservation.quotaTokens;
    }
  }
  if (logSeqs !== null) reservation.logSeqs = logSeqs;
  decided(state, {
    kind: 'granted',
    id: reservation.id,
    scope: reservation.scope,
    waitedMs: now - reservation.requestedAt,
    maxOutputTokens: reservation.outputCap,
  });
}

/** Gives back what a granted reservation holds: its estimate in every scope, its in-flight slot in every quota. */
function unreserve(state: ResourceState, reservation: Reservation): void {
  for (const id of reservation.chain) {
    const scope = state.scopes[id];
    if (!scope) continue;
    scope.reservedTokens -= reservation.tokens;
    scope.reservedUsd -= reservation.usd ?? 0;
    scope.callsInFlight -= 1;
    if (scope.callsInFlight <= 0) {
      // Nothing in flight holds exactly nothing: no float residue may hold a waiting call back.
      scope.callsInFlight = 0;
      scope.reservedTokens = 0;
      scope.reservedUsd = 0;
    } else if (Math.abs(scope.reservedUsd) < 1e-12) scope.reservedUsd = 0;
  }
  for (const key of reservation.quotas) {
    const quota = state.quotas[key];
    if (quota) quota.inFlight -= 1;
  }
}

function settle(state: ResourceState, event: Extract<ResourceEvent, { type: 'settle' }>): void {
  const reservation = state.reservations.get(event.id);
  if (reservation?.status !== 'granted') {
    // Settling twice, or a call never granted: nothing to return, nothing to count again.
    traced(state, 'settle.unknown');
    return;
  }
  traced(state, 'settle.settled');
  unreserve(state, reservation);
  forget(state, reservation);
  const usd = event.usd ?? 0;
  for (const id of reservation.chain) {
    const scope = state.scopes[id];
    if (!scope) continue;
    scope.spentTokens += event.tokens;
    scope.spentUsd += usd;
    scope.calls += 1;
    if (scope.windowMs !== null) {
      expireWindow(state, scope, event.now);
      scope.window.push({ at: event.now, tokens: event.tokens, usd });
    }
    scope.windowTokens += event.tokens;
    scope.windowUsd += usd;
    warnIfCrossed(state, scope, reservation.scope);
  }
  // Quotas count what the call really used once it is known.
  const { quotas, logSeqs } = reservation;
  for (let which = 0; which < logSeqs.length; which++) {
    const seq = logSeqs[which] as number;
    const quota = seq < 0 ? undefined : state.quotas[quotas[which] as string];
    if (!quota) continue;
    // Entries leave only from the front, so `seq` still names this call's entry unless it left the window (then
    // it no longer counts, and there is nothing to correct).
    const index = seq - quota.logBase;
    const logged = index >= quota.logHead ? quota.logSizes[index] : undefined;
    if (logged !== undefined) {
      quota.logTokens += event.tokens - logged;
      quota.logSizes[index] = event.tokens;
    }
  }
  decided(state, {
    kind: 'spend',
    id: event.id,
    scope: reservation.scope,
    tokens: event.tokens,
    usd: event.usd,
    returnedTokens: reservation.tokens - event.tokens,
    returnedUsd: reservation.usd === null || event.usd === null ? null : reservation.usd - event.usd,
  });
  drain(state, event.now);
}

function warnIfCrossed(state: ResourceState, scope: ScopeState, origin: string): void {
  scope.warnedTokens = warnedAfter(
    state,
    scope,
    origin,
    'tokens',
    scope.windowTokens,
    scope.tokensLimit,
    scope.warnedTokens,
  );
  scope.warnedUsd = warnedAfter(
    state,
    scope,
    origin,
    'usd',
    scope.windowUsd,
    scope.usdLimit,
    scope.warnedUsd,
  );
}

/**
 * Whether a budget's dimension stands warned after a spend: warns when its spend crosses the threshold, re-arms when
 * a rolling window took it back under. A function of its own, not a closure per settlement.
 */
function warnedAfter(
  state: ResourceState,
  scope: ScopeState,
  origin: string,
  dimension: 'tokens' | 'usd',
  spent: number,
  limit: number | null,
  warned: boolean,
): boolean {
  if (limit === null || limit <= 0) return warned;
  const crossed = spent >= limit * scope.warnAt;
  if (crossed && !warned) {
    traced(state, 'budget.warning');
    decided(state, {
      kind: 'budget_warning',
      scope: scope.id,
      origin,
      dimension,
      spent,
      limit,
      threshold: scope.warnAt,
    });
    return true;
  }
  if (!crossed && warned) {
    // A rolling window moved on: the next crossing warns again.
    traced(state, 'budget.rearmed');
    return false;
  }
  return warned;
}

function release(state: ResourceState, id: string, now: number): void {
  const reservation = state.reservations.get(id);
  if (!reservation) {
    // Released before, settled, or never known: returned exactly once, so nothing happens now.
    traced(state, 'release.unknown');
    return;
  }
  forget(state, reservation);
  if (reservation.status === 'waiting') {
    traced(state, 'release.waiting');
    state.waiting.splice(state.waiting.indexOf(id), 1);
    decided(state, { kind: 'released', id, scope: reservation.scope, tokens: 0, usd: 0 });
  } else {
    traced(state, 'release.granted');
    unreserve(state, reservation);
    decided(state, {
      kind: 'released',
      id,
      scope: reservation.scope,
      tokens: reservation.tokens,
      usd: reservation.usd,
    });
  }
  drain(state, now);
}

function rateLimited(state: ResourceState, event: Extract<ResourceEvent, { type: 'rate_limited' }>): void {
  // Providers limit per model: a 429 blocks the quotas of that model, not a provider-wide (account) quota.
  let keys = quotasFor(state, event.provider, event.model).filter(
    (key) => key !== globalQuotaKey && state.quotas[key]?.model === event.model,
  );
  if (keys.length === 0) {
    // No quota was configured for this model: the provider's 429 creates one, so the next calls are paced.
    traced(state, 'rate_limited.implicit_quota');
    const key = quotaKeyOf(event.provider, event.model);
    state.quotas[key] = newQuota(key, event.provider, event.model);
    state.quotaKeys.push(key);
    state.quotaIndex = new Map();
    keys = [key];
    // Calls already waiting for this model wait on the new quota too (granted ones hold no slot in it). Each gets
    // a list of its own: reservations of one model share the list their quotas were looked up in, granted ones too,
    // and a granted call must not give back a slot it never took.
    for (const id of state.waiting) {
      const waiter = state.reservations.get(id);
      if (waiter && waiter.provider === event.provider && waiter.model === event.model)
        waiter.quotas = [...waiter.quotas, key];
    }
  }
  const until = event.now + Math.max(0, event.retryAfterMs);
  for (const key of keys) {
    const quota = state.quotas[key];
    if (!quota) continue;
    traced(state, 'rate_limited.blocked');
    quota.blockedUntil = Math.max(quota.blockedUntil, until);
    decided(state, { kind: 'rate_limited', quota: key, until: quota.blockedUntil });
  }
  state.nextWakeAt = nextWake(state, event.now);
}

/**
 * Grants (or denies) waiting reservations in arrival order, keeping FIFO per quota. A call held by its budget's
 * calls in flight keeps waiting without holding back the calls behind it in its quotas' queues.
 */
function drain(state: ResourceState, now: number): void {
  if (state.waiting.length === 0) {
    state.nextWakeAt = null;
    return;
  }
  const blocked = new Set<string>();
  const still: string[] = [];
  for (const id of state.waiting) {
    const reservation = state.reservations.get(id);
    if (!reservation) continue;
    const verdict = budgetVerdict(
      state,
      reservation.chain,
      reservation.model,
      reservation.usd,
      reservation.bound,
      now,
    );
    if (stopsCall(verdict) && verdict.kind === 'deny') {
      traced(state, 'wait.denied_budget');
      forget(state, reservation);
      decided(state, {
        kind: 'denied',
        id,
        scope: reservation.scope,
        reason: verdict.reason,
        blocking: verdict.scope.id,
        message: verdict.message,
      });
      continue;
    }
    if (stopsCall(verdict)) {
      traced(state, 'wait.held_budget');
      holdBack(state, reservation, verdict);
      still.push(id);
      continue;
    }
    reservation.heldBy = null;
    if (!reservation.quotas.some((key) => blocked.has(key)) && allQuotasAllow(state, reservation, now)) {
      traced(state, 'wait.granted');
      grant(state, reservation, verdict, now);
      continue;
    }
    for (const key of reservation.quotas) blocked.add(key);
    still.push(id);
  }
  if (still.length > 0) traced(state, 'wait.still_waiting');
  state.waiting = still;
  state.nextWakeAt = nextWake(state, now);
}

/** Marks a waiting reservation as held by its budget's calls in flight; says so once, when it starts. */
function holdBack(state: ResourceState, reservation: Reservation, verdict: BudgetHold): void {
  if (reservation.heldBy !== null) return;
  reservation.heldBy = verdict.scope.id;
  decided(state, {
    kind: 'budget_wait',
    id: reservation.id,
    scope: reservation.scope,
    blocking: verdict.scope.id,
    dimension: verdict.dimension,
    spent: verdict.spent,
    reserved: verdict.reserved,
    limit: verdict.limit,
  });
}

/**
 * The earliest time at which a waiting reservation may become grantable by the passing of time: a retry-after
 * ending or the oldest call leaving a quota's window. Calls waiting on in-flight slots or held by their budget are
 * woken by settle and release instead. Null when nothing waits on time.
 */
function nextWake(state: ResourceState, now: number): number | null {
  if (state.waiting.length === 0) return null;
  let wake: number | null = null;
  const seen = new Set<string>();
  for (const id of state.waiting) {
    const reservation = state.reservations.get(id);
    // A call held by its budget is woken by the settlement it waits for, not by time.
    if (!reservation || reservation.heldBy !== null) continue;
    for (const key of reservation.quotas) {
      if (seen.has(key)) continue;
      seen.add(key);
      const quota = state.quotas[key];
      if (!quota) continue;
      let at: number | null = null;
      if (quota.blockedUntil > now) at = quota.blockedUntil;
      else if (liveRequests(quota) > 0) at = (quota.logTimes[quota.logHead] ?? now) + quotaWindowMs;
      if (at !== null && at > now && (wake === null || at < wake)) wake = at;
    }
  }
  return wake;
}
