import type { Agent } from '../agent/define-agent.ts';
import type { JsonValue } from '../core/json.ts';
import type { ResolvedLimits } from '../core/limits.ts';
import type { ModelProvider } from '../core/model.ts';
import { ToolRegistry } from '../tools/registry.ts';
import type { Tool, ToolContext } from '../tools/tool.ts';

/** Replacements for tools in a test: by name, a function that answers instead of the real `execute`. */
export type ToolStubs = Readonly<Record<string, (args: JsonValue, context: ToolContext) => unknown>>;

/**
 * The same agent (name, instructions, schema, handoffs) on another model, with other limits if given, and with
 * some of its tools answered by stubs: `'all'` stubs every tool with one that answers "ok", a record stubs the tools it names.
 */
export function agentVariant<TOutput>(
  agent: Agent<TOutput>,
  model: ModelProvider,
  stubs: ToolStubs | 'all' | undefined = undefined,
  limits: ResolvedLimits = agent.limits,
): Agent<TOutput> {
  let tools = agent.tools;
  if (stubs !== undefined) {
    const replaced: Tool[] = agent.tools.names.map((name) => {
      const original = agent.tools.get(name);
      const stub = stubs === 'all' ? stubAnswer : Object.hasOwn(stubs, name) ? stubs[name] : undefined;
      if (stub === undefined || Object.hasOwn(agent.handoffTools, name)) return original;
      return Object.freeze({
        ...original,
        execute: (args: unknown, context: ToolContext) => stub(args as JsonValue, context),
      });
    });
    tools = new ToolRegistry(replaced);
  }
  return Object.freeze({ ...agent, model, tools, limits });
}

const stubAnswer = () => 'ok';
