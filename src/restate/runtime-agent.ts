import type { Agent } from '../agent/define-agent.ts';
import type { AgentTool } from '../system/agent-tool.ts';
import { ToolRegistry } from '../tools/registry.ts';
import type { Tool } from '../tools/tool.ts';

/** The agent a tool runs, when it is an agent used as a tool (agentTool). */
export function delegateOf(tool: Tool | undefined): Agent<unknown> | undefined {
  return tool !== undefined && Object.hasOwn(tool, 'delegate') ? (tool as AgentTool).delegate : undefined;
}

const adapted = new WeakMap<Agent<unknown>, Agent<unknown>>();

/**
 * The agent as a turn on Restate runs it. Its tool timeout (`limits.toolTimeoutMs`) moves onto its own tools,
 * whose calls are journaled with the timeout's outcome; an agent used as a tool gets none, because a timer racing a
 * durable call to another object is not journaled (the caller's tool timeout bounds the sub-agent's run instead).
 */
export function forTurn(agent: Agent<unknown>): Agent<unknown> {
  const known = adapted.get(agent);
  if (known) return known;
  const timeoutMs = agent.limits.toolTimeoutMs;
  let result = agent;
  if (timeoutMs !== null) {
    const tools = agent.tools.names.map((name): Tool => {
      const found = agent.tools.get(name);
      if (delegateOf(found) !== undefined || found.timeoutMs !== undefined) return found;
      return { ...found, timeoutMs };
    });
    result = Object.freeze({
      ...agent,
      limits: { ...agent.limits, toolTimeoutMs: null },
      tools: new ToolRegistry(tools),
    });
  }
  adapted.set(agent, result);
  return result;
}
