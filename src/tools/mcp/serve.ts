import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AuthInfo, McpServer, ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Agent } from '../../agent/define-agent.ts';
import { ConfigError } from '../../core/errors.ts';
import { checkOptionObject, isPlainObject } from '../../core/options.ts';
import type { RunResult } from '../../core/result.ts';
import { stream } from '../../sessions/run.ts';
import type { AgentSystem } from '../../sessions/system.ts';
import type { McpServerSdk } from './sdk.ts';
import { assertMcpSdkInstalled, loadMcpSdk } from './sdk.ts';
import { type McpHttpGate, serveMcpHttpRequest } from './serve-http.ts';
import { RunProgressReporter } from './serve-progress.ts';
import { LastResults, type LastResultsSetting, lastResultUri } from './serve-results.ts';

/** How the agents are served: on this process's stdin and stdout, or over Streamable HTTP. */
export type ServeMcpTransport = 'stdio' | ServeMcpHttpTransport;

/** Streamable HTTP, guarded against other sites, rebound DNS names, oversized bodies and (optionally) strangers. */
export interface ServeMcpHttpTransport {
  type: 'http';
  /** Default 0: a free port (read it from `url`). */
  port?: number | undefined;
  /** The address to listen on. Default `127.0.0.1`. */
  host?: string | undefined;
  /** Default `/mcp`. */
  path?: string | undefined;
  /**
   * Hostnames a request's `Host` header may name (no port; IPv6 in brackets, `[::1]`); any other gets 403, which
   * stops DNS rebinding (a page whose own name was pointed at this machine). Default: the loopback names
   * (`localhost`, `127.0.0.1`, `[::1]`). Serving on a network, list the names clients use (`mcp.example.com`).
   */
  allowedHosts?: readonly string[] | undefined;
  /**
   * Hostnames a browser's `Origin` header may name; a request from a page elsewhere gets 403. Requests without
   * `Origin` (clients that are not browsers) pass. Default: `allowedHosts`.
   */
  allowedOrigins?: readonly string[] | undefined;
  /**
   * Largest request body in bytes. A larger one is answered 413 as soon as the limit is passed (or at once when
   * its declared length is larger), and the rest is never read. Default 4 MiB.
   */
  maxBodyBytes?: number | undefined;
  /** Bearer-token authentication: without a token it accepts, a request gets 401 (and runs nothing). */
  auth?: ServeMcpAuth | undefined;
}

/** Who called: what `auth.verify` returned for the request's bearer token. */
export interface McpIdentity {
  /** The caller (a user id, a client id). Each caller sees only its own last results. */
  subject: string;
  /** What the token allows (checked against `auth.requiredScopes`). */
  scopes?: readonly string[] | undefined;
  /** When the token stops being accepted, in seconds since the epoch. Default: it does not expire. */
  expiresAt?: number | undefined;
  /** Anything else the verifier knows about the caller. */
  claims?: Readonly<Record<string, unknown>> | undefined;
}

export interface ServeMcpAuth {
  /** Checks a bearer token: the caller's identity, or undefined to refuse it (401). May be async. */
  verify(token: string): McpIdentity | undefined | Promise<McpIdentity | undefined>;
  /** Scopes every token must have; a token without them gets 403 `insufficient_scope`. */
  requiredScopes?: readonly string[] | undefined;
  /** The protected-resource metadata URL (RFC 9728) named in the 401 challenge, for OAuth clients to discover. */
  resourceMetadataUrl?: string | undefined;
}

/** What the `context` option gets for each call. */
export interface McpCall {
  /** The served agent called. */
  agent: string;
  /** The verified caller, with `auth`; undefined without it (and over stdio). */
  identity: McpIdentity | undefined;
}

export interface ServeMcpOptions {
  transport: ServeMcpTransport;
  /** With a system: the agents to offer (each becomes a tool named after it). */
  agents?: readonly Agent<unknown>[] | undefined;
  /** The server's name in the MCP handshake. Default `troupe`. */
  name?: string | undefined;
  version?: string | undefined;
  /**
   * The run context of each call (what tools get as `ctx.context`), made from the caller. Default: the caller's
   * identity (undefined without `auth`).
   */
  context?: ((call: McpCall) => unknown) | undefined;
  /**
   * Each agent's last finished run, per caller, as the resource `troupe://agents/{name}/last-result` (JSON):
   * `'result'` (status, stop reason, text, output, usage; the default), `'transcript'` (also the run's messages,
   * tool results included), or `'off'`.
   */
  lastResults?: LastResultsSetting | undefined;
}

/** Agents being served: stop with `close()` or `await using`. */
export interface McpServing extends AsyncDisposable {
  /** The endpoint, for the HTTP transport. */
  readonly url: string | undefined;
  close(): Promise<void>;
}

const optionKeys: readonly string[] = ['transport', 'agents', 'name', 'version', 'context', 'lastResults'];
const httpKeys: readonly string[] = [
  'type',
  'port',
  'host',
  'path',
  'allowedHosts',
  'allowedOrigins',
  'maxBodyBytes',
  'auth',
];
const authKeys: readonly string[] = ['verify', 'requiredScopes', 'resourceMetadataUrl'];
const defaultMaxBodyBytes = 4 * 1024 * 1024;

const agentInput = z.object({ input: z.string().describe('What to ask the agent') });

/**
 * Serves agents as an MCP server: each agent is a tool taking `input` (text) and answering with the agent's final
 * text, or its structured output as `structuredContent`. Served from an agent (or a list of agents), each call is
 * a run with the agent's limits; served from a system, each call is a session of that system, so its resource
 * manager's budgets and quotas apply. A run that a limit or budget stopped, or that failed, answers with an
 * `isError` result saying why; a client cancelling the call aborts the run. While an agent runs, the client gets
 * progress notifications (when it sent a progress token) and log messages from the run's events; each agent's
 * last result is a resource. Over HTTP, `Host` and `Origin` are checked (loopback names by default), the body is
 * bounded while it is read, and `auth` makes every request show a bearer token.
 */
export async function serveMcp(
  target: Agent<unknown> | readonly Agent<unknown>[] | AgentSystem,
  options: ServeMcpOptions,
): Promise<McpServing> {
  const where = 'serveMcp()';
  if (!isPlainObject(options)) throw new ConfigError(`${where}: options must be an object.`);
  checkOptionObject(options, optionKeys, where);
  if (options.context !== undefined && typeof options.context !== 'function')
    throw new ConfigError(`${where}: context must be a function of the call ({ agent, identity }).`);
  const lastResultsSetting = options.lastResults ?? 'result';
  if (!['result', 'transcript', 'off'].includes(lastResultsSetting))
    throw new ConfigError(`${where}: lastResults must be 'result', 'transcript' or 'off'.`);
  const transport = options.transport;
  if (transport !== 'stdio' && (!isPlainObject(transport) || transport.type !== 'http'))
    throw new ConfigError(
      `${where}: transport must be 'stdio' or { type: 'http', port?, host?, path?, allowedHosts?, allowedOrigins?, maxBodyBytes?, auth? }.`,
    );
  if (transport !== 'stdio') checkHttpTransport(transport, where);
  assertMcpSdkInstalled('@modelcontextprotocol/server', where);
  const { agents, answer } = servedAgents(target, options, where);
  const sdk = await loadMcpSdk('@modelcontextprotocol/server', where);
  const lastResults = lastResultsSetting === 'off' ? undefined : new LastResults(lastResultsSetting);
  const contextOf = options.context ?? ((call: McpCall) => call.identity);
  const factory = (request: { authInfo?: AuthInfo | undefined }): McpServer => {
    const identity = identityOf(request.authInfo);
    const caller = identity?.subject ?? '';
    const server = new sdk.McpServer(
      { name: options.name ?? 'troupe', version: options.version ?? '0.1.0' },
      { capabilities: { logging: {} } },
    );
    for (const agent of agents.values()) {
      server.registerTool(
        agent.name,
        {
          description: agent.description || `Asks the agent "${agent.name}".`,
          inputSchema: agentInput,
        },
        async ({ input }, ctx) => {
          const reporter = new RunProgressReporter(ctx as ServerContext);
          const context = contextOf({ agent: agent.name, identity });
          const result = await answer(agent, input, { signal: ctx.mcpReq.signal, context, reporter });
          await reporter.flush();
          lastResults?.record(caller, agent.name, result);
          return toolResult(result);
        },
      );
      if (lastResults)
        server.registerResource(
          `${agent.name} last result`,
          lastResultUri(agent.name),
          {
            description: `The last finished run of the agent "${agent.name}" for this caller (JSON).`,
            mimeType: 'application/json',
          },
          (uri) => ({
            contents: [
              { uri: uri.href, mimeType: 'application/json', text: lastResults.read(caller, agent.name) },
            ],
          }),
        );
    }
    return server;
  };
  if (transport === 'stdio') {
    const stdio = await loadMcpSdk('@modelcontextprotocol/server/stdio', where);
    const handle = stdio.serveStdio(() => factory({}));
    const close = () => handle.close();
    return { url: undefined, close, [Symbol.asyncDispose]: close };
  }
  const maxBodyBytes = transport.maxBodyBytes ?? defaultMaxBodyBytes;
  const handler = sdk.createMcpHandler(factory, { maxRequestBodySize: maxBodyBytes });
  const path = transport.path ?? '/mcp';
  const allowedHosts = transport.allowedHosts ?? sdk.localhostAllowedHostnames();
  const gate: McpHttpGate = {
    path,
    allowedHosts,
    allowedOrigins: transport.allowedOrigins ?? allowedHosts,
    maxBodyBytes,
    authenticate: transport.auth ? bearerGate(sdk, transport.auth) : undefined,
  };
  const http: Server = createServer((req, res) => {
    void serveMcpHttpRequest(req, res, gate, sdk, handler.fetch);
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

function checkHttpTransport(transport: ServeMcpHttpTransport, where: string): void {
  checkOptionObject(transport, httpKeys, `${where}: transport`);
  for (const key of ['allowedHosts', 'allowedOrigins'] as const) {
    const list = transport[key];
    if (
      list !== undefined &&
      (!Array.isArray(list) ||
        list.some((name) => typeof name !== 'string' || name === '' || name.includes('/')))
    )
      throw new ConfigError(
        `${where}: transport.${key} must be a list of hostnames without scheme or port (e.g. ['mcp.example.com']).`,
      );
  }
  const limit = transport.maxBodyBytes;
  if (limit !== undefined && (typeof limit !== 'number' || !Number.isInteger(limit) || limit <= 0))
    throw new ConfigError(`${where}: transport.maxBodyBytes must be a positive integer.`);
  const auth = transport.auth;
  if (auth !== undefined) {
    checkOptionObject(auth, authKeys, `${where}: transport.auth`);
    if (typeof auth.verify !== 'function')
      throw new ConfigError(
        `${where}: transport.auth.verify must be a function (token) => identity | undefined.`,
      );
  }
}

/** The SDK's bearer check around the user's verifier: the identity travels in the AuthInfo's `extra`. */
function bearerGate(
  sdk: McpServerSdk,
  auth: ServeMcpAuth,
): (request: Request) => Promise<AuthInfo | Response> {
  return sdk.requireBearerAuth({
    verifier: {
      async verifyAccessToken(token) {
        const identity = await auth.verify(token);
        if (identity === undefined || typeof identity?.subject !== 'string')
          throw new sdk.OAuthError(sdk.OAuthErrorCode.InvalidToken, 'The token was not accepted.');
        return {
          token,
          clientId: identity.subject,
          scopes: [...(identity.scopes ?? [])],
          // The SDK refuses tokens without an expiry; one the verifier did not give never expires.
          expiresAt: identity.expiresAt ?? Number.MAX_SAFE_INTEGER,
          extra: { identity },
        };
      },
    },
    ...(auth.requiredScopes ? { requiredScopes: [...auth.requiredScopes] } : {}),
    ...(auth.resourceMetadataUrl ? { resourceMetadataUrl: auth.resourceMetadataUrl } : {}),
  });
}

function identityOf(authInfo: AuthInfo | undefined): McpIdentity | undefined {
  const identity = authInfo?.extra?.identity as McpIdentity | undefined;
  return identity;
}

interface CallOptions {
  signal: AbortSignal;
  context: unknown;
  reporter: RunProgressReporter;
}

type Answer = (agent: Agent<unknown>, input: string, call: CallOptions) => Promise<RunResult<unknown>>;

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
    answer = async (agent, input, { signal, context, reporter }) => {
      const running = stream(agent, input, { signal, context });
      for await (const event of running) reporter.report(event);
      return running.result;
    };
  } else {
    const system = target as AgentSystem;
    if (typeof system?.spawn !== 'function')
      throw new ConfigError(`${where}: serve an agent, a list of agents, or a system with { agents }.`);
    list = options.agents ?? [];
    answer = async (agent, input, { signal, context, reporter }) => {
      const session = system.spawn(agent, input, { signal, context });
      const watching = new AbortController();
      try {
        // The turn's events end with its run_end.
        for await (const event of session.events({ signal: watching.signal })) reporter.report(event);
        return await session.result;
      } finally {
        watching.abort();
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
