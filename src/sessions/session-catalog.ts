import type { Agent } from '../agent/define-agent.ts';
import { ConfigError } from '../core/errors.ts';
import { definedFields } from '../core/options.ts';
import { guardrailInput } from '../guardrails/guardrail-plan.ts';
import type { AgentDescriptor, SupervisionOptions, SupervisionPolicy } from '../machines/session.ts';

/**
 * Every agent the entry can reach through handoffs. A target given by name is one of the agents reached through
 * targets given as agents (so A -> B as an agent, B -> 'A' by name works with plain run()), or else one of the
 * environment's named agents.
 */
export function agentCatalog(
  entry: Agent<unknown>,
  known: ReadonlyMap<string, Agent<unknown>>,
): Map<string, Agent<unknown>> {
  const catalog = new Map<string, Agent<unknown>>();
  const named: { from: string; target: string }[] = [];
  const visit = (agent: Agent<unknown>) => {
    const existing = catalog.get(agent.name);
    if (existing) {
      if (existing !== agent)
        throw new ConfigError(`Two different agents are named "${agent.name}"; agent names must be unique.`);
      return;
    }
    catalog.set(agent.name, agent);
    for (const target of agent.handoffs) {
      if (typeof target === 'string') named.push({ from: agent.name, target });
      else visit(target as Agent<unknown>);
    }
  };
  visit(entry);
  // Names resolve once every agent given as an object has been reached; a known agent found here may add more.
  for (let i = 0; i < named.length; i++) {
    const { from, target } = named[i] as { from: string; target: string };
    const agent = known.get(target) ?? catalog.get(target);
    if (!agent)
      throw new ConfigError(
        `Agent "${from}" hands off to "${target}", which is neither an agent reachable from "${entry.name}" through handoffs given as agents nor one this system knows: pass it in createAgentSystem({ agents }) or give the agent itself.`,
      );
    visit(agent);
  }
  return catalog;
}

/** What the session machine needs to know about an agent: data only. */
export function descriptorOf(agent: Agent<unknown>): AgentDescriptor {
  return {
    limits: agent.limits,
    toolNames: agent.tools.names,
    hasOutputSchema: agent.outputSchema !== undefined,
    handoffTools: { ...agent.handoffTools },
    ...guardrailInput(agent.guardrails),
  };
}

/** The session's supervision policy: the system's default with the session's overrides, checked. */
export function supervisionOf(
  base: SupervisionPolicy,
  given: SupervisionOptions | undefined,
): SupervisionPolicy {
  const policy = { ...base, ...definedFields(given) };
  if (!['restart', 'stop', 'escalate'].includes(policy.strategy))
    throw new ConfigError(
      `supervision.strategy must be restart, stop or escalate, got ${String(policy.strategy)}.`,
    );
  if (!['stop', 'escalate'].includes(policy.onExhausted))
    throw new ConfigError(`supervision.onExhausted must be stop or escalate.`);
  for (const key of ['maxRestarts', 'backoffMs', 'backoffFactor', 'maxBackoffMs'] as const) {
    const value = policy[key];
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      throw new ConfigError(`supervision.${key} must be a non-negative number, got ${String(value)}.`);
  }
  return policy;
}
