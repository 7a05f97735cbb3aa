import { type AgentOptions, contextType, defineAgent, type Tool, type ToolSource, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';

/**
 * An agent's `tools` may be a list built anywhere: written inline, or kept in a variable that mixes `tool(...)`
 * definitions and tool sources such as MCP servers (`(Tool | ToolSource)[]`, `[...tools, ...servers]`). A tool that
 * needs a run context is still refused for an agent without that context. Checked by `tsc` (npm run typecheck); the
 * agents are never run.
 */

interface AppContext {
  userId: string;
}

const model = scriptedModel([]);
/** Type-checks `check` without running it: the servers below exist for the compiler only. */
const compileOnly = (_check: () => unknown): void => undefined;
/**
 * Stands for `mcpServer(...)` of troupe/mcp: a tool source with members of its own. (Importing troupe/mcp here would
 * bring the MCP client's types into every project that compiles test/types.)
 */
interface McpServerLike extends ToolSource {
  readonly transport: 'stdio' | 'http';
  close(): Promise<void>;
}
declare const server: McpServerLike;
declare const source: ToolSource;

const clock = tool({
  name: 'clock',
  description: 'The time.',
  input: z.object({}),
  execute: () => 'noon',
});

const whoami = tool({
  name: 'whoami',
  description: 'The user.',
  input: z.object({}),
  contextType: contextType<AppContext>(),
  execute: (_args, ctx) => ctx.context.userId,
});

describe('an agent tools list built outside defineAgent', () => {
  it('mixes tools and tool sources in an annotated array', () => {
    compileOnly(() => {
      const tools: (Tool | ToolSource)[] = [clock, source];
      const readonlyTools: readonly (Tool | ToolSource)[] = [clock, server];
      defineAgent({ name: 'a', instructions: '', model, tools });
      defineAgent({ name: 'b', instructions: '', model, tools: readonlyTools });
      defineAgent({ name: 'c', instructions: '', model, tools, contextType: contextType<AppContext>() });
    });
  });

  it("fits AgentOptions['tools'], the type of an agent's tools option", () => {
    compileOnly(() => {
      const tools: AgentOptions['tools'] = [clock, server];
      defineAgent({ name: 'j', instructions: '', model, tools });
      const options: AgentOptions = { name: 'k', instructions: '', model, tools: [clock, source] };
      defineAgent(options);
    });
  });

  it('mixes tools and MCP servers by spreading', () => {
    compileOnly(() => {
      const local = [clock];
      const servers = [server];
      const agent = defineAgent({ name: 'd', instructions: '', model, tools: [...local, ...servers] });
      expectTypeOf(agent.name).toBeString();
      const all = [...local, ...servers];
      defineAgent({ name: 'e', instructions: '', model, tools: all });
      const sources: ToolSource[] = [server, source];
      defineAgent({ name: 'f', instructions: '', model, tools: [clock, ...sources] });
    });
  });

  it('still refuses a tool that needs a context the agent does not declare', () => {
    compileOnly(() => {
      const withContext = [whoami, ...[server]];
      defineAgent({
        name: 'g',
        instructions: '',
        model,
        // @ts-expect-error: whoami needs an AppContext, and this agent declares no context
        tools: withContext,
      });
      defineAgent({
        name: 'h',
        instructions: '',
        model,
        // @ts-expect-error: the same, written inline beside a server
        tools: [whoami, server],
      });
      defineAgent({
        name: 'i',
        instructions: '',
        model,
        tools: withContext,
        contextType: contextType<AppContext>(),
      });
    });
  });
});
