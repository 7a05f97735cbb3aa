import type { Agent } from '../agent/define-agent.ts';
import type { AgentTool } from '../sessions/agent-tool.ts';
import { ToolRegistry } from '../tools/registry.ts';
import type { Tool } from '../tools/tool.ts';
import type { ToolSource } from '../tools/tool-source.ts';

/** The agent a tool runs, when it is an agent used as a tool (agentTool). */
export function delegateOf(tool: Tool | undefined): Agent<unknown> | undefined {
  return tool !== undefined && Object.hasOwn(tool, 'delegate') ? (tool as AgentTool).delegate : undefined;
}

const adapted = new WeakMap<Agent<unknown>, Agent<unknown>>();

/**
 * The agent as a turn on Restate runs it. Its tool timeout (`limits.toolTimeoutMs`) moves onto its own tools,
 * whose calls are journaled with the timeout's outcome; an agent used as a tool gets none, because a timer racing a
 * durable call to another object is not journaled (the caller's tool timeout bounds the sub-agent's run instead).
 * Tool sources (MCP servers) stay sources: their tools get the timeout as they are listed.
 */
export function forTurn(agent: Agent<unknown>): Agent<unknown> {
  const known = adapted.get(agent);
  if (known) return known;
  const timeoutMs = agent.limits.toolTimeoutMs;
  let result = agent;
  if (timeoutMs !== null) {
    const sources = agent.tools.sources;
    const listed = new Set(sources.flatMap((source) => source.current()));
    const tools: (Tool | ToolSource)[] = [];
    for (const name of agent.tools.names) {
      const found = agent.tools.find(name);
      // A source's tools (and the stand-in name of a source not listed yet) come with the source below.
      if (found === undefined || listed.has(found)) continue;
      tools.push(withTimeout(found, timeoutMs));
    }
    for (const source of sources) tools.push(timedSource(source, timeoutMs));
    result = Object.freeze({
      ...agent,
      limits: { ...agent.limits, toolTimeoutMs: null },
      tools: new ToolRegistry(tools),
    });
  }
  adapted.set(agent, result);
  return result;
}

function withTimeout(tool: Tool, timeoutMs: number): Tool {
  if (delegateOf(tool) !== undefined || tool.timeoutMs !== undefined) return tool;
  return { ...tool, timeoutMs };
}

/** The source with the agent's tool timeout on each tool it lists (one copy per listing). */
function timedSource(source: ToolSource, timeoutMs: number): ToolSource {
  let version = -1;
  let tools: readonly Tool[] = [];
  return {
    kind: 'tool-source',
    name: source.name,
    get version() {
      return source.version;
    },
    current() {
      if (version !== source.version) {
        tools = source.current().map((tool) => withTimeout(tool, timeoutMs));
        version = source.version;
      }
      return tools;
    },
    isReady: (scope) => source.isReady(scope),
    prepare: (scope) => source.prepare(scope),
  };
}
