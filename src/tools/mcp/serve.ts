import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Agent } from '../../agent/define-agent.ts';
import { ConfigError } from '../../core/errors.ts';
import { checkOptionObject, isPlainObject } from '../../core/options.ts';
import type { RunResult } from '../../core/result.ts';
import { run } from '../../run/run.ts';
import type { AgentSystem } from '../../system/system.ts';
import { serveWithFetch } from './node-http.ts';
import { assertMcpSdkInstalled, loadMcpSdk } from './sdk.ts';

/** How the agents are served: on this process's stdin and stdout, or over Streamable HTTP. */
export type ServeMcpTransport =
  | 'stdio'
  | {
      type: 'http';
      /** Default 0: a free port (read it from `url`). */
      port?: number | undefined;
      /** Default `127.0.0.1`. */
      host?: string | undefined;
      /** Default `/mcp`. */
      path?: string | undefined;
    };

export interface ServeMcpOptions {
  transport: ServeMcpTransport;
  /** With a system: the agents to offer (each becomes a tool named after it). */
  agents?: readonly Agent<unknown>[] | undefined;
  /** The server's name in the MCP handshake. Default `troupe`. */
  name?: string | undefined;
  version?: string | undefined;
}

/** Agents being served: stop with `close()` or `await using`. */
export interface McpServing extends AsyncDisposable {
  /** The endpoint, for the HTTP transport. */
  readonly url: string | undefined;
  close(): Promise<void>;
}

const optionKeys: readonly string[] = ['transport', 'agents', 'name', 'version'];

const agentInput = z.object({ input: z.string().describe('What to ask the agent') });

/**
 * Serves agents as an MCP server: each agent is a tool taking `input` (text) and answering with the agent's final
 * text, or its structured output as `structuredContent`. Served from an agent (or a list of agents), each call is
 * a run with the agent's limits; served from a system, each call is a session of that system, so its resource
 * manager's budgets and quotas apply. A run that a limit or budget stopped, or that failed, answers with an
 * `isError` result saying why; a client cancelling the call aborts the run.
 */
export async function serveMcp(
  target: Agent<unknown> | readonly Agent<unknown>[] | AgentSystem,
  options: ServeMcpOptions,
): Promise<McpServing> {
  const where = 'serveMcp()';
  if (!isPlainObject(options)) throw new ConfigError(`${where}: options must be an object.`);
  checkOptionObject(options, optionKeys, where);
  assertMcpSdkInstalled('@modelcontextprotocol/server', where);
  const { agents, answer } = servedAgents(target, options, where);
  const sdk = await loadMcpSdk('@modelcontextprotocol/server', where);
  const factory = (): McpServer => {
    const server = new sdk.McpServer({ name: options.name ?? 'troupe', version: options.version ?? '0.1.0' });
    for (const agent of agents.values()) {
      server.registerTool(
        agent.name,
        {
          description: agent.description || `Asks the agent "${agent.name}".`,
          inputSchema: agentInput,
        },
        async ({ input }, ctx) => toolResult(await answer(agent, input, ctx.mcpReq.signal)),
      );
    }
    return server;
  };
  const transport = options.transport;
  if (transport === 'stdio') {
    const stdio = await loadMcpSdk('@modelcontextprotocol/server/stdio', where);
    const handle = stdio.serveStdio(factory);
    const close = () => handle.close();
    return { url: undefined, close, [Symbol.asyncDispose]: close };
  }
  if (!isPlainObject(transport) || transport.type !== 'http')
    throw new ConfigError(`${where}: transport must be 'stdio' or { type: 'http', port?, host?, path? }.`);
  const handler = sdk.createMcpHandler(factory);
  const path = transport.path ?? '/mcp';
  const http: Server = createServer((req, res) => {
    if ((req.url ?? '/').split('?')[0] !== path) {
      res.writeHead(404).end();
      return;
    }
    void serveWithFetch(req, res, handler.fetch);
  });
  const host = transport.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(transport.port ?? 0, host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  const { port } = http.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      await handler.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    })();
    return closing;
  };
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}${path}`,
    close,
    [Symbol.asyncDispose]: close,
  };
}

type Answer = (agent: Agent<unknown>, input: string, signal: AbortSignal) => Promise<RunResult<unknown>>;

function servedAgents(
  target: Agent<unknown> | readonly Agent<unknown>[] | AgentSystem,
  options: ServeMcpOptions,
  where: string,
): { agents: Map<string, Agent<unknown>>; answer: Answer } {
  const isAgent = (value: unknown): value is Agent<unknown> =>
    (value as { kind?: unknown })?.kind === 'agent';
  let list: readonly Agent<unknown>[];
  let answer: Answer;
  if (isAgent(target) || Array.isArray(target)) {
    if (options.agents !== undefined) throw new ConfigError(`${where}: agents is for serving a system.`);
    list = isAgent(target) ? [target] : target;
    answer = (agent, input, signal) => run(agent, input, { signal });
  } else {
    const system = target as AgentSystem;
    if (typeof system?.spawn !== 'function')
      throw new ConfigError(`${where}: serve an agent, a list of agents, or a system with { agents }.`);
    list = options.agents ?? [];
    answer = async (agent, input, signal) => {
      const session = system.spawn(agent, input, { signal });
      try {
        return await session.result;
      } finally {
        await session.stop();
      }
    };
  }
  const agents = new Map<string, Agent<unknown>>();
  for (const agent of list) {
    if (!isAgent(agent)) throw new ConfigError(`${where}: every agent must come from defineAgent().`);
    if (agents.has(agent.name)) throw new ConfigError(`${where}: two agents are named "${agent.name}".`);
    agents.set(agent.name, agent);
  }
  if (agents.size === 0) throw new ConfigError(`${where}: there is no agent to serve.`);
  return { agents, answer };
}

/** The MCP answer for a run: its text and structured output, or an error result saying why it stopped. */
function toolResult(result: RunResult<unknown>): {
  content: { type: 'text'; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
} {
  if (result.status !== 'completed') {
    const why = result.error?.message ? `: ${result.error.message}` : '';
    const partial = result.text ? `\nLast text: ${result.text}` : '';
    return {
      content: [
        {
          type: 'text',
          text: `The agent ${result.status === 'failed' ? 'failed' : 'stopped'} (${result.stopReason})${why}${partial}`,
        },
      ],
      isError: true,
    };
  }
  const output = result.output;
  if (output !== undefined) {
    const text = JSON.stringify(output);
    return isPlainObject(output)
      ? { content: [{ type: 'text', text }], structuredContent: output as Record<string, unknown> }
      : { content: [{ type: 'text', text }] };
  }
  return { content: [{ type: 'text', text: result.text }] };
}
