import type { Clock } from '../core/clock.ts';
import { ConfigError } from '../core/errors.ts';
import type { EventBus } from '../core/event-bus.ts';
import type { BudgetLimit } from './ledger.ts';
import {
  createResourceManager,
  type OpenRunOptions,
  type ResourceManager,
  type ResourceNotice,
} from './resource-manager.ts';
import { sinkIgnoresGranted } from './resource-notices.ts';

/** The resource options of a run (see RunOptions). */
export interface RunResourceOptions {
  resources?: ResourceManager | undefined;
  budget?: BudgetLimit | undefined;
  tenant?: string | undefined;
  parentScope?: string | undefined;
}

/**
 * Opens a run's budget scope before it starts and returns what closes it when it ends. A run with a budget and
 * no manager gets a private one (so `run(agent, input, { budget: { tokens: 2000 } })` just works); a run with
 * neither has no manager and pays nothing. Throws ConfigError (bad budget, unpriced model under a USD budget)
 * before anything runs.
 */
export function attachResources(
  options: RunResourceOptions,
  caller: ResourceCaller | undefined,
  run: { sessionId: string; agent: string; provider: string; model: string; clock: Clock; bus: EventBus },
): { manager: ResourceManager; detach: () => void } | undefined {
  const shared = sharedManagerOf(options, caller);
  const parentScope = parentScopeOf(options, caller);
  const manager =
    shared ?? (options.budget !== undefined ? createResourceManager({ clock: run.clock }) : undefined);
  if (!manager) return undefined;
  const owned = manager !== shared;
  const budget: BudgetLimit | undefined = options.budget;
  const open: OpenRunOptions & { [sinkIgnoresGranted]: true } = {
    session: run.sessionId,
    provider: run.provider,
    model: run.model,
    ...(options.tenant !== undefined ? { tenant: options.tenant } : {}),
    ...(parentScope !== undefined && !owned ? { parentSession: parentScope } : {}),
    ...(budget !== undefined ? { budget } : {}),
    onNotice: (notice) => forward(run.bus, run.agent, notice),
    // The run's stream has no event for a grant (see forward).
    [sinkIgnoresGranted]: true,
  };
  try {
    manager.openRun(open);
  } catch (error) {
    if (owned) manager.stop();
    throw error;
  }
  return {
    manager,
    detach: () => {
      manager.closeRun(run.sessionId);
      if (owned) manager.stop();
    },
  };
}

/** The run a nested run draws on: its manager, budget scope and bus. */
export interface ResourceCaller {
  resources?: ResourceManager | undefined;
  resourceScope?: (() => string) | undefined;
  bus: EventBus;
}

/** The budget scope a run's spend also counts on: the one its options name, else its caller's (turn, else run). */
export function parentScopeOf(
  options: RunResourceOptions,
  caller: ResourceCaller | undefined,
): string | undefined {
  if (options.parentScope !== undefined) return options.parentScope;
  return caller?.resources ? (caller.resourceScope?.() ?? caller.bus.sessionId) : undefined;
}

/**
 * The manager a run shares: its own option, else its caller's (a nested run draws on its caller's budgets). A
 * `parentScope` names a scope of a manager, so it needs one.
 */
export function sharedManagerOf(
  options: RunResourceOptions,
  caller?: ResourceCaller | undefined,
): ResourceManager | undefined {
  if (options.resources) return options.resources;
  if (caller?.resources) return caller.resources;
  if (options.parentScope !== undefined)
    throw new ConfigError(
      `parentScope "${options.parentScope}" names a budget scope of a resource manager: give that manager as \`resources\`, or pass the tool's context as \`parent\` to draw on the calling run's budgets.`,
    );
  return undefined;
}

/** A run's own notices become events on its stream. */
function forward(bus: EventBus, agent: string, notice: ResourceNotice): void {
  switch (notice.type) {
    case 'budget_warning':
      bus.emit(agent, 'budget_warning', {
        scope: notice.scope,
        dimension: notice.dimension,
        spent: notice.spent,
        limit: notice.limit,
        threshold: notice.threshold,
      });
      return;
    case 'quota_wait':
      bus.emit(agent, 'quota_wait', { quota: notice.quota, position: notice.position });
      return;
    case 'budget_wait':
      bus.emit(agent, 'budget_wait', { scope: notice.scope, dimension: notice.dimension });
      return;
    case 'spend':
      bus.emit(agent, 'spend', {
        model: notice.model,
        tokens: notice.tokens,
        usd: notice.usd,
        usage: notice.usage,
        returnedTokens: notice.returnedTokens,
        returnedUsd: notice.returnedUsd,
      });
      return;
    default:
      // Denials end the run (its result says why); rate limits are manager-wide; budget waits have no run event
      // type yet, so only the manager's subscribers see them.
      return;
  }
}
