import { ConfigError } from '../core/errors.ts';

/**
 * Two of an agent's tools share a name once a tool source (an MCP server) lists its tools: the agent's own tool and
 * a server's, or two servers'. The run fails rather than offering the model one of them at random; a `prefix` on
 * the server (or leaving the tool out with its `tools` filter) keeps the names apart.
 */
export class ToolNameCollisionError extends ConfigError {
  /** The name both tools have. */
  readonly toolName: string;
  /** Where each comes from: `agent` for the agent's own tools, otherwise the tool source's name. */
  readonly sources: readonly [string, string];
  constructor(toolName: string, first: string | undefined, second: string) {
    const where = (source: string | undefined): string =>
      source === undefined ? "the agent's own tools" : `the tool source "${source}"`;
    super(
      `Tool "${toolName}" is offered by both ${where(first)} and ${where(second)}: give the MCP server "${second}" a prefix (mcpServer({ prefix: '${prefixFor(second)}' })) or leave the tool out with its tools filter (mcpServer({ tools: [...] })).`,
    );
    this.toolName = toolName;
    this.sources = [first ?? 'agent', second];
  }
}

function prefixFor(source: string): string {
  const prefix = source.replace(/[^a-zA-Z0-9_-]/g, '_');
  return prefix === '' ? 'server_' : `${prefix}_`;
}
