import type { Agent } from '../agent/define-agent.ts';
import { ConfigError } from '../core/errors.ts';
import type { AgentDescriptor, SupervisionPolicy } from '../machines/session.ts';

/** Every agent the entry can reach through handoffs given as agents, plus the environment's named agents. */
export function agentCatalog(
  entry: Agent<unknown>,
  known: ReadonlyMap<string, Agent<unknown>>,
): Map<string, Agent<unknown>> {
  const catalog = new Map<string, Agent<unknown>>();
  const visit = (agent: Agent<unknown>) => {
    const existing = catalog.get(agent.name);
    if (existing) {
      if (existing !== agent)
        throw new ConfigError(`Two different agents are named "${agent.name}"; agent names must be unique.`);
      return;
    }
    catalog.set(agent.name, agent);
    for (const target of agent.handoffs) {
      if (typeof target === 'string') {
        const named = known.get(target);
        if (!named)
          throw new ConfigError(
            `Agent "${agent.name}" hands off to "${target}", which this system does not know: define it and pass it in createAgentSystem({ agents }).`,
          );
        visit(named);
      } else visit(target as Agent<unknown>);
    }
  };
  visit(entry);
  return catalog;
}

/** What the session machine needs to know about an agent: data only. */
export function descriptorOf(agent: Agent<unknown>): AgentDescriptor {
  return {
    limits: agent.limits,
    toolNames: agent.tools.names,
    hasOutputSchema: agent.outputSchema !== undefined,
    handoffTools: { ...agent.handoffTools },
  };
}

/** The session's supervision policy: the system's default with the session's overrides, checked. */
export function supervisionOf(
  base: SupervisionPolicy,
  given: Partial<SupervisionPolicy> | undefined,
): SupervisionPolicy {
  const policy = { ...base, ...given };
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
