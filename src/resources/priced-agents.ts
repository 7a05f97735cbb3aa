import type { Agent } from '../agent/define-agent.ts';
import { ConfigError } from '../core/errors.ts';
import { defaultPrices, findPrice } from '../core/prices.ts';
import {
  parentScopeOf,
  type ResourceCaller,
  type RunResourceOptions,
  sharedManagerOf,
} from './resource-run.ts';
import { sessionScope } from './scope-names.ts';

/** What the check needs to know of the run about to start. */
export interface PriceCheckRun {
  sessionId: string;
  /** Agents known by name, for handoff targets given as names (a system's `agents`). */
  known?: ReadonlyMap<string, Agent<unknown>> | undefined;
  /** The run that starts this one, whose budgets it draws on. */
  caller?: ResourceCaller | undefined;
}

/**
 * Checks, before a run or session starts, that every model it can reach has a price when a USD budget applies to
 * it: the given agents, their handoff targets (agents, or names found in `known`) and the agents their agentTool
 * tools delegate to, recursively. Without this, a handoff target or sub-agent on a model without a price would be
 * refused at its first call, in the middle of the run; here it is a ConfigError naming the model, the agent that
 * uses it and how the run reaches it. Runs without a USD budget pay one lookup.
 */
export function checkReachablePrices(
  agents: Iterable<Agent<unknown>>,
  options: RunResourceOptions,
  run: PriceCheckRun,
): void {
  const manager = sharedManagerOf(options, run.caller);
  const parentScope = parentScopeOf(options, run.caller);
  let usdScope: string | null;
  if (manager) {
    usdScope = manager.usdBudgetFor({
      session: run.sessionId,
      ...(options.tenant !== undefined ? { tenant: options.tenant } : {}),
      ...(parentScope !== undefined ? { parentSession: parentScope } : {}),
      ...(options.budget !== undefined ? { budget: options.budget } : {}),
    });
  } else {
    // A run with a budget and no manager gets a private one, priced with the default prices.
    usdScope = options.budget?.usd !== undefined ? sessionScope(run.sessionId) : null;
  }
  if (usdScope === null) return;
  const priced = (model: string) =>
    (manager ? manager.priceOf(model) : findPrice(defaultPrices, model)) !== undefined;
  const where = `run(${JSON.stringify(run.sessionId)})`;
  const seen = new Set<Agent<unknown>>();
  const visit = (agent: Agent<unknown>, path: readonly string[]) => {
    if (seen.has(agent)) return;
    seen.add(agent);
    const { model } = agent.model;
    if (!priced(model)) {
      const reached = path.length > 0 ? `, reached through ${[...path, agent.name].join(' → ')}` : '';
      throw new ConfigError(
        `${where}: model "${model}" has no price, but ${usdScope} has a USD budget (agent "${agent.name}"${reached}). ` +
          'Add it with createResourceManager({ prices: { "<model>": { input, output } } }) (USD per million tokens).',
      );
    }
    const next = [...path, agent.name];
    for (const target of agent.handoffs) {
      const found = typeof target === 'string' ? run.known?.get(target) : target;
      if (found?.kind === 'agent') visit(found as Agent<unknown>, next);
    }
    for (const name of agent.tools.names) {
      const delegate = delegateOf(agent.tools.find(name));
      if (delegate) visit(delegate, next);
    }
  };
  for (const agent of agents) visit(agent, []);
}

/** The agent an agentTool tool runs (its own `delegate` property), if the tool is one. */
function delegateOf(tool: object | undefined): Agent<unknown> | undefined {
  if (!tool || !Object.hasOwn(tool, 'delegate')) return undefined;
  const delegate = (tool as { delegate?: unknown }).delegate;
  return (delegate as Agent<unknown> | undefined)?.kind === 'agent'
    ? (delegate as Agent<unknown>)
    : undefined;
}
