import { readFileSync } from 'node:fs';
import type {
  Client,
  ClientCapabilities,
  CreateMessageRequest,
  CreateMessageResult,
  ElicitRequest,
  ElicitResult,
  ListRootsResult,
} from '@modelcontextprotocol/client';
import { abortError } from '../../core/abort.ts';
import { McpAuthorizationError, McpCommandNotFoundError, McpConnectionError } from './errors.ts';
import { isAuthorizationRefusal, isConnectionLoss, neverReachedServer } from './failures.ts';
import type { McpOAuth } from './oauth.ts';
import type { McpToolResult } from './result-content.ts';
import { loadMcpSdk, type McpClientSdk } from './sdk.ts';

/** Where one connection goes: a command to start (stdio) or a URL (Streamable HTTP). */
export type McpTarget =
  | {
      kind: 'stdio';
      command: string;
      args: string[];
      env: Record<string, string> | undefined;
      cwd: string | undefined;
      stderr: 'pipe' | 'inherit' | 'ignore';
    }
  | {
      kind: 'http';
      url: URL;
      headers: Record<string, string> | undefined;
      /** OAuth for this connection's user, when the server is declared with `auth`. */
      oauth: McpOAuth | undefined;
      /** The session the connection belongs to (empty when shared by the process), told to `onAuthorize`. */
      sessionId: string;
    };

/** How often and how patiently a lost connection is opened again. */
export interface ReconnectPolicy {
  /** Attempts to connect before giving up with McpConnectionError. Default 4. */
  attempts: number;
  /** Wait before the second attempt; doubles each time. Default 100 ms. */
  initialDelayMs: number;
  /** The longest wait between attempts. Default 2000 ms. */
  maxDelayMs: number;
}

/** A tool as the server lists it (the SDK's Tool, read structurally). */
export interface ListedMcpTool {
  name: string;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
  /** The server's hints about the tool (untrusted): `idempotentHint: true` lets a failed call be sent again. */
  annotations?: { idempotentHint?: boolean | undefined } | undefined;
}

/** What a listing returns: the tools, and how long the server said they stay valid (2026-07-28 cache hints). */
export interface McpToolListing {
  tools: ListedMcpTool[];
  ttlMs: number | undefined;
}

/** The cached answer to "does this server speak the stateless protocol?", shared by connections to one target. */
export type EraVerdict =
  | { kind: 'legacy' }
  | { kind: 'modern'; discover: NonNullable<ReturnType<Client['getDiscoverResult']>> };

export interface ConnectionHooks {
  /** The server said its tool list changed. */
  toolsChanged(): void;
  /** The verdict a previous connection to the same target reached, to skip the probe. */
  verdict(): EraVerdict | undefined;
  remember(verdict: EraVerdict | undefined): void;
  /** What this client answers when the server asks (each opt-in per server); absent: nothing is offered. */
  requests?: ServerRequestHandlers | undefined;
}

/**
 * The server's requests this client serves, with the capabilities it declares for them. On a 2025-era connection
 * the server sends them while a call runs; on a 2026-07-28 one they come inside an `input_required` result, are
 * served by the same handlers, and the call is sent again with the answers (the protocol's next round, not a retry).
 */
export interface ServerRequestHandlers {
  capabilities: ClientCapabilities;
  sampling?:
    | ((params: CreateMessageRequest['params'], signal: AbortSignal) => Promise<CreateMessageResult>)
    | undefined;
  roots?: ((signal: AbortSignal) => Promise<ListRootsResult>) | undefined;
  elicitation?: ((params: ElicitRequest['params'], signal: AbortSignal) => Promise<ElicitResult>) | undefined;
}

/** A request timeout the SDK cannot reach: a call ends when the run's signal (its tool timeout) says so. */
const unlimited = 2_147_483_647;
const stderrTailChars = 2_000;
/** How long `close()` waits for the server to acknowledge the end of an HTTP session. */
const terminateTimeoutMs = 2_000;
/** Consent rounds in one connection attempt or request (a step-up may follow the first consent). */
const maxConsents = 2;

/** When a failed request may be sent again on a new connection. */
export type Resend = 'after-any-loss' | 'only-if-never-sent';

/**
 * One connection to an MCP server, opened on first use. It speaks the current protocol when the server does
 * (the SDK's `server/discover` probe) and the 2025 `initialize` handshake with older servers, remembering which
 * for the next connection. A connection that is lost (the process exited, the HTTP session expired with a 404,
 * the server restarted) is opened again with back-off on the next request. The failed request is sent once more
 * only when it may be repeated (`resend`): a tool call that is not idempotent only when the failure proves it never
 * reached the server. A server that answers 401 is authorized through `auth` (OAuth), or refused with
 * McpAuthorizationError when none is configured.
 */
export class McpConnection {
  readonly #server: string;
  readonly #target: McpTarget;
  readonly #hooks: ConnectionHooks;
  readonly #reconnect: ReconnectPolicy;
  readonly #connectTimeoutMs: number;
  #client: Client | undefined;
  #transport: import('@modelcontextprotocol/client').StreamableHTTPClientTransport | undefined;
  #sdk: McpClientSdk | undefined;
  #connecting: Promise<Client> | undefined;
  #closed = false;
  #stderrTail = '';
  #pid: number | null = null;

  constructor(
    server: string,
    target: McpTarget,
    reconnect: ReconnectPolicy,
    connectTimeoutMs: number,
    hooks: ConnectionHooks,
  ) {
    this.#server = server;
    this.#connectTimeoutMs = connectTimeoutMs;
    this.#target = target;
    this.#reconnect = reconnect;
    this.#hooks = hooks;
  }

  /** The child process's id while a stdio connection is open. */
  get pid(): number | null {
    return this.#client ? this.#pid : null;
  }

  get connected(): boolean {
    return this.#client !== undefined;
  }

  /** The protocol version the server and this connection agreed on, once connected. */
  get protocolVersion(): string | undefined {
    return this.#client?.getNegotiatedProtocolVersion();
  }

  /** Opens the connection now (it is otherwise opened by the first request). */
  async open(signal?: AbortSignal): Promise<void> {
    await this.#ensure(signal);
  }

  async listTools(signal?: AbortSignal): Promise<McpToolListing> {
    const result = await this.#request(
      (client) => client.listTools(undefined, { signal, timeout: unlimited, cacheMode: 'refresh' }),
      signal,
      'after-any-loss',
    );
    const ttl = (result as { ttlMs?: unknown }).ttlMs;
    return {
      tools: result.tools as ListedMcpTool[],
      ttlMs: typeof ttl === 'number' && ttl > 0 ? ttl : undefined,
    };
  }

  /**
   * Calls a tool. With `resend: 'only-if-never-sent'` (a tool not marked idempotent) a failure after the request
   * may have reached the server (a reset, a timeout, a 5xx, an unreadable result) is thrown, never sent again.
   */
  callTool(
    name: string,
    args: Record<string, unknown>,
    signal: AbortSignal | undefined,
    resend: Resend,
  ): Promise<McpToolResult> {
    return this.#request(
      (client) => client.callTool({ name, arguments: args }, { signal, timeout: unlimited }),
      signal,
      resend,
    ) as Promise<McpToolResult>;
  }

  /**
   * Closes the connection: a 2025-era HTTP session is ended on the server (`DELETE` with its `Mcp-Session-Id`,
   * waiting up to 2 s for the answer), a stdio server's process stopped and waited for. Idempotent.
   */
  async close(): Promise<void> {
    this.#closed = true;
    const connecting = this.#connecting;
    this.#connecting = undefined;
    const client = this.#client ?? (await connecting?.catch(() => undefined));
    const transport = this.#transport;
    this.#client = undefined;
    this.#transport = undefined;
    if (client && transport) await endSession(transport);
    await client?.close().catch(() => undefined);
  }

  async #request<T>(
    send: (client: Client) => Promise<T>,
    signal: AbortSignal | undefined,
    resend: Resend,
  ): Promise<T> {
    let client = await this.#ensure(signal);
    if (this.#processGone()) {
      // The server's process died since the last request and its end has not been reported yet: a request sent
      // now would fail as "connection closed", indistinguishable from a crash while running it.
      await this.#drop(client);
      client = await this.#ensure(signal);
    }
    for (let consents = 0; ; consents++) {
      try {
        return await send(client);
      } catch (error) {
        if (signal?.aborted || this.#closed) throw error;
        if (this.#isUnauthorized(error)) {
          // The server refused the request before running it (a token that could not be refreshed, or a step-up
          // to a wider scope): ask for consent, then send it again.
          const oauth = this.#target.kind === 'http' ? this.#target.oauth : undefined;
          const transport = this.#transport;
          if (!oauth?.interactive || transport === undefined || consents >= maxConsents)
            throw this.#authorizationError(error);
          await oauth.authorize(
            (callback) => transport.finishAuth(callback),
            this.#sessionId,
            signal ?? neverAborted,
          );
          continue;
        }
        if (this.#isAuthorizationFailure(error)) throw this.#authorizationError(error);
        if (!isConnectionLoss(error)) throw error;
        await this.#drop(client);
        // The server went away under the request (restarted, session expired): reconnect and send it once more,
        // unless it may have run and must not run twice.
        if (resend === 'only-if-never-sent' && !neverReachedServer(error)) throw error;
        client = await this.#ensure(signal);
        return send(client);
      }
    }
  }

  /** Whether a stdio server's process is known to have exited (it no longer exists). */
  #processGone(): boolean {
    if (this.#target.kind !== 'stdio' || this.#pid === null) return false;
    try {
      process.kill(this.#pid, 0);
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'ESRCH';
    }
    // A process that exited but was not reaped yet (state Z on Linux, read from /proc) is gone too.
    try {
      const stat = readFileSync(`/proc/${this.#pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
    } catch {
      return false;
    }
  }

  get #sessionId(): string {
    return this.#target.kind === 'http' ? this.#target.sessionId : '';
  }

  #isUnauthorized(error: unknown): boolean {
    return this.#sdk?.UnauthorizedError.isInstance(error) === true;
  }

  /** A refusal, or a failure of the OAuth flow itself (discovery, registration, a token request): not retried. */
  #isAuthorizationFailure(error: unknown): boolean {
    const sdk = this.#sdk;
    if (isAuthorizationRefusal(error)) return true;
    if (sdk === undefined) return false;
    return (
      sdk.UnauthorizedError.isInstance(error) ||
      sdk.OAuthError.isInstance(error) ||
      sdk.OAuthClientFlowError.isInstance(error)
    );
  }

  #authorizationError(error: unknown): McpAuthorizationError {
    const configured = this.#target.kind === 'http' && this.#target.oauth !== undefined;
    const reason = error instanceof Error ? error.message : String(error);
    return new McpAuthorizationError(
      this.#server,
      configured
        ? `MCP server "${this.#server}": the authorization failed: ${reason}`
        : `MCP server "${this.#server}" needs authorization (it answered 401 Unauthorized): declare it with mcpServer({ url, auth }) (OAuth with onAuthorize, or clientCredentials), or pass the credentials it expects in headers.`,
      { cause: error },
    );
  }

  async #drop(client: Client): Promise<void> {
    if (this.#client === client) {
      this.#client = undefined;
      this.#transport = undefined;
    }
    await client.close().catch(() => undefined);
  }

  #ensure(signal: AbortSignal | undefined): Promise<Client> {
    if (this.#closed)
      return Promise.reject(
        new McpConnectionError(this.#server, `MCP server "${this.#server}": the connection was closed.`),
      );
    if (this.#client) return Promise.resolve(this.#client);
    this.#connecting ??= this.#connectWithBackoff(signal).finally(() => {
      this.#connecting = undefined;
    });
    return this.#connecting;
  }

  async #connectWithBackoff(signal: AbortSignal | undefined): Promise<Client> {
    const { attempts, initialDelayMs, maxDelayMs } = this.#reconnect;
    let delay = initialDelayMs;
    let lastError: unknown;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (signal?.aborted) throw abortError(signal);
      try {
        const client = await this.#connectOnce(signal);
        if (this.#closed) {
          await client.close().catch(() => undefined);
          throw new McpConnectionError(
            this.#server,
            `MCP server "${this.#server}": the connection was closed.`,
          );
        }
        this.#client = client;
        return client;
      } catch (error) {
        if (signal?.aborted) throw abortError(signal);
        if (error instanceof McpConnectionError) throw error;
        lastError = error;
        // A remembered verdict may be stale (the server was upgraded or replaced): probe afresh next time.
        this.#hooks.remember(undefined);
      }
      if (attempt < attempts) {
        await sleep(delay, signal);
        delay = Math.min(delay * 2, maxDelayMs);
      }
    }
    const reason = lastError instanceof Error ? lastError.message : String(lastError);
    const stderr = this.#stderrTail.trim();
    throw new McpConnectionError(
      this.#server,
      `MCP server "${this.#server}" could not be reached after ${attempts} attempt(s): ${reason}${stderr ? `\nIts stderr ended with:\n${stderr.slice(-500)}` : ''}`,
      { cause: lastError },
    );
  }

  async #connectOnce(signal: AbortSignal | undefined): Promise<Client> {
    const sdk = await loadMcpSdk('@modelcontextprotocol/client', 'mcpServer()');
    this.#sdk = sdk;
    const requests = this.#hooks.requests;
    const client = new sdk.Client(
      { name: 'troupe', version: '0.1.0' },
      {
        versionNegotiation: { mode: 'auto' },
        capabilities: requests?.capabilities ?? {},
        // Without anything offered, a server's `input_required` is reported, not answered by sending the call again.
        inputRequired: { autoFulfill: requests !== undefined },
        listChanged: {
          tools: {
            autoRefresh: false,
            debounceMs: 0,
            onChanged: () => {
              if (this.#client === client) this.#hooks.toolsChanged();
            },
          },
        },
      },
    );
    const { sampling, roots, elicitation } = requests ?? {};
    if (elicitation)
      client.setRequestHandler('elicitation/create', (request, context) =>
        elicitation(request.params, context.mcpReq.signal),
      );
    if (sampling)
      client.setRequestHandler('sampling/createMessage', (request, context) =>
        sampling(request.params, context.mcpReq.signal),
      );
    if (roots) client.setRequestHandler('roots/list', (_request, context) => roots(context.mcpReq.signal));
    client.onerror = () => undefined;
    client.onclose = () => {
      if (this.#client === client) {
        this.#client = undefined;
        this.#transport = undefined;
      }
    };
    const target = this.#target;
    let transport: import('@modelcontextprotocol/client').Transport;
    if (target.kind === 'stdio') {
      const stdio = await loadMcpSdk('@modelcontextprotocol/client/stdio', 'mcpServer()');
      const child = new stdio.StdioClientTransport({
        command: target.command,
        args: target.args,
        ...(target.env ? { env: target.env } : {}),
        ...(target.cwd ? { cwd: target.cwd } : {}),
        stderr: target.stderr,
      });
      // The server's stderr is drained (a full pipe would block it) and its end kept for error messages.
      child.stderr?.on('data', (chunk: Buffer) => {
        this.#stderrTail = (this.#stderrTail + chunk.toString()).slice(-stderrTailChars);
      });
      transport = child;
      const verdict = this.#hooks.verdict();
      try {
        await connectOrClean(client, transport, {
          signal,
          timeout: this.#connectTimeoutMs,
          ...(verdict ? { prior: verdict } : {}),
        });
      } catch (error) {
        // A command that cannot be started fails the same way every time: no back-off.
        if (isSpawnFailure(error))
          throw new McpCommandNotFoundError(this.#server, target.command, { cause: error });
        throw error;
      }
      this.#pid = child.pid;
    } else {
      for (let consents = 0; ; consents++) {
        const http = new sdk.StreamableHTTPClientTransport(target.url, {
          ...(target.headers ? { requestInit: { headers: target.headers } } : {}),
          ...(target.oauth ? { authProvider: target.oauth.provider } : {}),
        });
        const verdict = this.#hooks.verdict();
        try {
          await connectOrClean(client, http, {
            signal,
            timeout: this.#connectTimeoutMs,
            ...(verdict ? { prior: verdict } : {}),
          });
          this.#transport = http;
          break;
        } catch (error) {
          if (signal?.aborted) throw error;
          if (
            target.oauth?.interactive &&
            sdk.UnauthorizedError.isInstance(error) &&
            consents < maxConsents
          ) {
            // The authorization server wants a person's consent: the application runs it, then we connect again.
            await target.oauth.authorize(
              (callback) => http.finishAuth(callback),
              target.sessionId,
              signal ?? neverAborted,
            );
            continue;
          }
          if (this.#isAuthorizationFailure(error)) throw this.#authorizationError(error);
          throw error;
        }
      }
    }
    if (!this.#hooks.verdict()) {
      const discover = client.getDiscoverResult();
      this.#hooks.remember(
        client.getProtocolEra() === 'modern' && discover ? { kind: 'modern', discover } : { kind: 'legacy' },
      );
    }
    return client;
  }
}

/** Connects, or, when that fails, closes what was started (a spawned process must not outlive a failed handshake). */
async function connectOrClean(
  client: Client,
  transport: import('@modelcontextprotocol/client').Transport,
  options: Parameters<Client['connect']>[1],
): Promise<void> {
  try {
    await client.connect(transport, options);
  } catch (error) {
    await client.close().catch(() => undefined);
    await transport.close().catch(() => undefined);
    throw error;
  }
}

const neverAborted = new AbortController().signal;

/** Whether starting a process failed because its command is missing or not executable. */
function isSpawnFailure(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, syscall } = error as { code?: unknown; syscall?: unknown };
  return (
    (code === 'ENOENT' || code === 'EACCES') && typeof syscall === 'string' && syscall.startsWith('spawn')
  );
}

/** Ends a 2025-era HTTP session on the server; a server that does not answer in time is left to expire it. */
async function endSession(
  transport: import('@modelcontextprotocol/client').StreamableHTTPClientTransport,
): Promise<void> {
  if (transport.sessionId === undefined) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    transport.terminateSession().catch(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, terminateTimeoutMs);
    }),
  ]);
  clearTimeout(timer);
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal as AbortSignal));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
