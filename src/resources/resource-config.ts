import type { Clock } from '../core/clock.ts';
import { ConfigError } from '../core/errors.ts';
import { defaultPrices, type ModelPrice, type PriceTable, validatePrices } from '../core/prices.ts';
import type { BudgetLimit, QuotaLimit } from './ledger.ts';

/** Budgets by scope. A run's own `budget` option overrides `perRun`; `tenants` overrides `perTenant` by name. */
export interface BudgetsConfig {
  /** Every tenant's budget unless `tenants` names it. */
  perTenant?: BudgetLimit | undefined;
  tenants?: Readonly<Record<string, BudgetLimit>> | undefined;
  /** Every run's budget unless the run sets its own. */
  perRun?: BudgetLimit | undefined;
}

/** What `createResourceManager` reads. */
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
  /**
   * The most output tokens a call under a budget may write when its agent's settings give no `maxOutputTokens`
   * (the budget's reservation must bound every call). Default 4,096.
   */
  maxOutputTokens?: number | undefined;
}

/** See `ResourceManagerConfig.maxOutputTokens`. */
export const defaultMaxOutputTokens = 4_096;

/** Throws a ConfigError naming the first bad budget, quota or concurrency setting. */
export function checkConfig(config: ResourceManagerConfig, where: string): void {
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
  const ceiling = config.maxOutputTokens;
  if (ceiling !== undefined && !(Number.isInteger(ceiling) && ceiling > 0))
    throw new ConfigError(`${where}: maxOutputTokens must be a whole number > 0.`);
}

/** Throws a ConfigError unless every limit is a number > 0 and `warnAt` a fraction in (0, 1]. */
export function checkBudget(budget: BudgetLimit, where: string): void {
  if (typeof budget !== 'object' || budget === null) throw new ConfigError(`${where} must be an object.`);
  for (const field of ['tokens', 'usd', 'windowMs'] as const) {
    const value = budget[field];
    if (value !== undefined && !(typeof value === 'number' && Number.isFinite(value) && value > 0))
      throw new ConfigError(`${where}.${field} must be a number > 0.`);
  }
  if (budget.warnAt !== undefined && !(budget.warnAt > 0 && budget.warnAt <= 1))
    throw new ConfigError(`${where}.warnAt must be a fraction in (0, 1].`);
}

/** The manager's price table: the user's prices (checked) over the defaults. */
export function priceTableOf(config: ResourceManagerConfig, where: string): PriceTable {
  return config.prices ? { ...defaultPrices, ...validatePrices({ ...config.prices }, where) } : defaultPrices;
}

/** The budget of a tenant: its own entry in `tenants` (looked up as an own key only), else `perTenant`. */
export function tenantBudget(budgets: BudgetsConfig | undefined, tenant: string): BudgetLimit | undefined {
  const named = budgets?.tenants;
  const own = named && Object.hasOwn(named, tenant) ? named[tenant] : undefined;
  return own ?? budgets?.perTenant;
}
