import { type ResourceState, type ScopeState, type ScopeSummary, summarize } from './ledger.ts';
import { sessionScope, tenantScope } from './scope-names.ts';

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

/** Closed runs whose usage can still be asked for. */
const keepClosedRuns = 10_000;

/** The final usage of the last closed runs (the oldest forgotten first), with the tenant each belonged to. */
export class ClosedRuns {
  readonly #runs = new Map<string, { tenant: string; summary: ScopeSummary }>();

  add(session: string, tenant: string, summary: ScopeSummary): void {
    this.#runs.set(session, { tenant, summary });
    if (this.#runs.size > keepClosedRuns) {
      const oldest = this.#runs.keys().next().value;
      if (oldest !== undefined) this.#runs.delete(oldest);
    }
  }

  get(session: string): { tenant: string; summary: ScopeSummary } | undefined {
    return this.#runs.get(session);
  }
}

/** What `usage()` reads besides the manager's state. */
export interface UsageSources {
  closed: ClosedRuns;
  /** The tenant of an open run. */
  tenantOf(session: string): string | undefined;
  defaultTenant: string;
}

/**
 * The usage of a session (open, or among the last closed) and of a tenant: the query's tenant, else the session's,
 * else the default tenant.
 */
export function resourceUsage(
  state: ResourceState,
  query: { tenant?: string | undefined; session?: string | undefined },
  sources: UsageSources,
  now: number,
): ResourceUsage {
  const session = query.session;
  let sessionUsage: ScopeUsage | null = null;
  let tenant = query.tenant;
  if (session !== undefined) {
    const open = state.scopes[sessionScope(session)];
    if (open) {
      sessionUsage = scopeUsage(state, summarize(open), true, now);
      tenant ??= sources.tenantOf(session);
    } else {
      const record = sources.closed.get(session);
      if (record) {
        sessionUsage = scopeUsage(state, record.summary, false, now);
        tenant ??= record.tenant;
      }
    }
  }
  const tenantState = state.scopes[tenantScope(tenant ?? sources.defaultTenant)];
  return {
    tenant: scopeUsage(state, tenantState ? summarize(tenantState) : undefined, true, now),
    session: sessionUsage,
  };
}

function scopeUsage(
  state: ResourceState,
  summary: ScopeSummary | undefined,
  open: boolean,
  now: number,
): ScopeUsage | null {
  if (!summary) return null;
  const current = open ? windowed(state.scopes[summary.scope], summary, now) : summary;
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
