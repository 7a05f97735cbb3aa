import type { AgentEvent } from '../machines/agent.ts';
import type { AgentReach, GraphWalk } from './agent-reach.ts';

/**
 * Walks to the end of a run that together take every transition the agent can: the shortest walk to each way of
 * ending, then, for each transition none of those takes, the shortest walk that takes it, ended by `ending` (the
 * caller's abort, which ends a run from any state) when it does not end by itself. Shortest first.
 */
export function coveringWalks(reach: AgentReach, ending: AgentEvent): GraphWalk[] {
  const chosen = [...reach.endings.values()];
  const taken = new Set(chosen.flatMap((walk) => walk.transitions));
  for (const [id, walk] of reach.transitions) {
    if (taken.has(id)) continue;
    const ended = walk.states[walk.states.length - 1]?.status === 'done' ? walk : reach.extend(walk, ending);
    chosen.push(ended);
    for (const other of ended.transitions) taken.add(other);
  }
  return chosen.sort((a, b) => a.events.length - b.events.length);
}
