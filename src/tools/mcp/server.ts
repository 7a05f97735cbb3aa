import type { ClientCapabilities } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { ConfigError } from '../../core/errors.ts';
import type { JsonObject } from '../../core/json.ts';
import { checkOptionObject, describeValue, isPlainObject } from '../../core/options.ts';
import { type HoldResource, holdForProcess } from '../../core/session-resources.ts';
import { callerOf } from '../../run/run-runtime.ts';
import type { Tool, ToolContext } from '../tool.ts';
import { ToolAnswerError } from '../tool-answer-error.ts';
import type { ToolSource, ToolSourceScope } from '../tool-source.ts';
import { CallsInFlight } from './calls-in-flight.ts';
import {
  type EraVerdict,
  type ListedMcpTool,
  McpConnection,
  type McpTarget,
  type ReconnectPolicy,
  type ServerRequestHandlers,
} from './connection.ts';
import { defaultStdioServerName } from './default-server-name.ts';
import { serveElicitation } from './elicitation.ts';
import { McpConnectionError } from './errors.ts';
import { isUnsupportedResult } from './failures.ts';
import { checkAuthOptions, type McpAuthOptions, McpOAuth, storeOf } from './oauth.ts';
import { McpRequestRefusal } from './request-refusal.ts';
import { resultText } from './result-content.ts';
import { checkRootsOption, type McpRootsInfo, type McpRootsSetting, rootsResult } from './roots.ts';
import {
  checkSamplingOptions,
  type McpSamplingOptions,
  type SamplingSettings,
  serveSampling,
} from './sampling.ts';
import { assertMcpSdkInstalled } from './sdk.ts';
import type { McpTokenStore } from './token-store.ts';
import { exposedToolName } from './tool-names.ts';
import { Unavailability } from './unavailable.ts';

/** What a per-session server's settings are computed from. */
export interface McpSessionInfo {
  /** The session's id (a plain run's own id). */
  sessionId: string;
  /** The run context (the `context` option) of the run that opened the session's connection. */
  context?: unknown;
}

/** A setting given as a value, or (for `scope: 'session'`) computed for each session. */
export type McpSetting<T> = T | ((session: McpSessionInfo) => T);

interface McpServerCommonOptions {
  /** Names the server in errors and events. Default: derived from the command or the URL's host. */
  name?: string | undefined;
  /**
   * `'process'` (default): one connection shared by every run and session of the process. `'session'`: each
   * session (each plain run) gets its own connection, and for stdio its own process, opened at its first model
   * call and closed when the session closes, suspends or the run ends.
   */
  scope?: 'process' | 'session' | undefined;
  /** Only these of the server's tools (by the server's names) are offered to the model. Default: all. */
  tools?: readonly string[] | undefined;
  /** Put before every tool name the model sees (`fs_` makes `read_file` into `fs_read_file`). Default: none. */
  prefix?: string | undefined;
  /**
   * Lets the server ask for completions (`sampling/createMessage`) while one of its tools runs: `true` answers
   * with the calling agent's model, `{ model, maxTokens, needsApproval }` with another model, a cap on the output, or
   * a person's approval first (a pending approval of the session, or run()'s `onApproval`). Each request is a model call of the calling run: reserved on its budgets (a spent
   * budget refuses the request, and the server reads why) and reported as an `mcp_sampling` event. Default: off
   * (the client does not declare the capability).
   */
  sampling?: boolean | McpSamplingOptions | undefined;
  /**
   * The directories the server may work in, answered to its `roots/list`: fixed `[{ uri: 'file:///…', name }]`, or
   * a function of the calling run (`({ sessionId, context }) => roots`), asked at each request. With `scope:
   * 'process'` a function is asked for the run whose tool call is in flight, and a request outside any call is
   * refused. Default: off (the client does not declare the capability).
   */
  roots?: McpRootsSetting | undefined;
  /**
   * Lets the server ask a person something while one of its tools runs (`elicitation/create`): each question is a
   * pending request of the calling session (`pendingApprovals()`, kind `question`, tool `<server>/elicitation`),
   * answered with `session.answer(callId, JSON.stringify(fields))` (the schema's defaults fill the rest),
   * declined with `session.reject(callId, reason)`, cancelled when the run stops; run()'s `onApproval` decides a plain
   * run's. `{ url: true }` also takes URL-mode questions (a link to open; any answer means done). On a store that
   * outlives the process the question is a stored approval record: another process lists and answers it, and after a
   * restart the recovered session sends the call again and gets the stored answer (on a 2025-era server, only for a
   * tool marked idempotent; any other call ends with an error result saying why). Default: off.
   */
  elicitation?: boolean | { url?: boolean | undefined } | undefined;
  /** A time limit per call for these tools; overrides the agent's `limits.toolTimeoutMs`. */
  timeoutMs?: number | undefined;
  /**
   * Retries of a failed call to a tool the server marks idempotent (`idempotentHint: true`); overrides the agent's
   * `limits.maxToolRetries`. A call to any other tool is sent again only when the failure proves it never reached the
   * server (connection refused, a session the server no longer knows); after a timeout, a reset, a 5xx or an
   * unreadable result the model is told it failed, since the server may have run it.
   */
  maxRetries?: number | undefined;
  /** Every call of these tools needs a person's approval first (see `tool({ needsApproval })`). */
  needsApproval?: boolean | undefined;
  /**
   * `true` (default): a server that cannot be reached (a command that does not start, a URL that does not answer)
   * fails the run with its McpConnectionError. `false`: the run goes on without the server's tools and gets an
   * `mcp_server_unavailable` event; a model call 30 s later tries the server again.
   */
  required?: boolean | undefined;
  /** Reconnecting after the server went away. Default: 4 attempts, 100 ms doubling up to 2 s. */
  reconnect?: Partial<ReconnectPolicy> | undefined;
  /** How long one connection attempt (start and handshake) may take. Default 30 s. */
  connectTimeoutMs?: number | undefined;
}

/** A server started as a child process, speaking MCP on its stdin and stdout. */
export interface McpStdioServerOptions extends McpServerCommonOptions {
  command: string;
  args?: McpSetting<readonly string[]> | undefined;
  /** Added to a minimal inherited environment (PATH, HOME, ...), as the SDK does. */
  env?: McpSetting<Readonly<Record<string, string>>> | undefined;
  cwd?: McpSetting<string> | undefined;
  /** The server's stderr: `'pipe'` (default) keeps its end for error messages; or `'inherit'`, `'ignore'`. */
  stderr?: 'pipe' | 'inherit' | 'ignore' | undefined;
}

/** A server reached over Streamable HTTP. */
export interface McpHttpServerOptions extends McpServerCommonOptions {
  url: McpSetting<string | URL>;
  headers?: McpSetting<Readonly<Record<string, string>>> | undefined;
  /**
   * OAuth for a server that answers 401: `{ redirectUrl, onAuthorize }` for a person's consent (the application
   * opens the URL), or `{ clientCredentials }` for a service account. Tokens are kept per user in `auth.store`.
   * Without it, a 401 fails with McpAuthorizationError.
   */
  auth?: McpAuthOptions | undefined;
}

export type McpServerOptions = McpStdioServerOptions | McpHttpServerOptions;

const optionKeys: readonly string[] = [
  'name',
  'scope',
  'tools',
  'prefix',
  'timeoutMs',
  'maxRetries',
  'needsApproval',
  'reconnect',
  'connectTimeoutMs',
  'command',
  'args',
  'env',
  'cwd',
  'stderr',
  'url',
  'headers',
  'auth',
  'sampling',
  'roots',
  'elicitation',
  'required',
];

/** The protocol version whose questions travel with the call (`input_required`) instead of as server requests. */
const modernProtocol = '2026-07-28';

const defaultReconnect: ReconnectPolicy = { attempts: 4, initialDelayMs: 100, maxDelayMs: 2_000 };

/** Arguments of an MCP tool are checked by the server; locally they only need to be a JSON object. */
const mcpArguments = z.looseObject({});

/**
 * An MCP server as a source of tools for an agent: `tools: [myTool, mcpServer({ command: 'node', args: [...] })]`.
 * Its tools are listed at the start of a run (connecting on first use) and again when the server says the list
 * changed or its cache time runs out. Close it with `await server.close()` or `await using`.
 */
export class McpServer implements ToolSource, AsyncDisposable {
  readonly kind = 'tool-source' as const;
  readonly name: string;
  readonly scope: 'process' | 'session';
  readonly #options: McpServerOptions;
  readonly #reconnect: ReconnectPolicy;
  readonly #connectTimeoutMs: number;
  readonly #allowed: ReadonlySet<string> | undefined;
  readonly #prefix: string;
  #shared: Held | undefined;
  #forgetShared: (() => void) | undefined;
  readonly #sessions = new Map<string, Held & { forget: () => void }>();
  readonly #sampling: SamplingSettings | undefined;
  readonly #roots: McpRootsSetting | undefined;
  readonly #elicitation: { url: boolean } | undefined;
  readonly #verdicts = new Map<string, EraVerdict>();
  readonly #auth: McpAuthOptions | undefined;
  readonly #tokens: McpTokenStore | undefined;
  readonly #required: boolean;
  /** Failures to connect of an optional server, by session ('' for the shared connection). */
  readonly #unavailable = new Map<string, Unavailability>();
  #tools: readonly Tool[] = [];
  #version = 0;
  #stale = true;
  #expiresAt = Number.POSITIVE_INFINITY;
  #listing: Promise<void> | undefined;

  constructor(options: McpServerOptions) {
    const where = 'mcpServer()';
    if (!isPlainObject(options)) throw new ConfigError(`${where}: options must be an object.`);
    checkOptionObject(options, optionKeys, where);
    const stdio = 'command' in options && options.command !== undefined;
    const http = 'url' in options && options.url !== undefined;
    if (stdio === http)
      throw new ConfigError(
        `${where}: give either a command (a stdio server) or a url (a Streamable HTTP server).`,
      );
    if (stdio && typeof (options as McpStdioServerOptions).command !== 'string')
      throw new ConfigError(`${where}: command must be a string.`);
    const scope = options.scope ?? 'process';
    if (scope !== 'process' && scope !== 'session')
      throw new ConfigError(`${where}: scope must be "process" or "session", got ${describeValue(scope)}.`);
    if (scope === 'process') {
      for (const key of ['args', 'env', 'cwd', 'url', 'headers'] as const)
        if (typeof (options as Record<string, unknown>)[key] === 'function')
          throw new ConfigError(
            `${where}: ${key} can be a function of the session only with scope: 'session'.`,
          );
    }
    if (
      options.tools !== undefined &&
      (!Array.isArray(options.tools) || options.tools.some((name) => typeof name !== 'string'))
    )
      throw new ConfigError(`${where}: tools must be an array of the server's tool names.`);
    if (
      options.prefix !== undefined &&
      (typeof options.prefix !== 'string' || !/^[a-zA-Z0-9_-]*$/.test(options.prefix))
    )
      throw new ConfigError(`${where}: prefix may only hold letters, digits, "_" and "-".`);
    if (options.name !== undefined && (typeof options.name !== 'string' || options.name === ''))
      throw new ConfigError(`${where}: name must be a non-empty string.`);
    const { timeoutMs, maxRetries } = options;
    if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !(timeoutMs > 0)))
      throw new ConfigError(
        `${where}: timeoutMs must be a positive number of milliseconds, got ${describeValue(timeoutMs)}.`,
      );
    if (maxRetries !== undefined && (!Number.isInteger(maxRetries) || maxRetries < 0))
      throw new ConfigError(
        `${where}: maxRetries must be an integer >= 0, got ${describeValue(maxRetries)}.`,
      );
    const reconnect = { ...defaultReconnect, ...(options.reconnect ?? {}) };
    if (!Number.isInteger(reconnect.attempts) || reconnect.attempts < 1)
      throw new ConfigError(`${where}: reconnect.attempts must be an integer >= 1.`);
    if (!(reconnect.initialDelayMs >= 0) || !(reconnect.maxDelayMs >= 0))
      throw new ConfigError(`${where}: reconnect delays must be numbers of milliseconds >= 0.`);
    const connectTimeoutMs = options.connectTimeoutMs ?? 30_000;
    if (typeof connectTimeoutMs !== 'number' || !(connectTimeoutMs > 0))
      throw new ConfigError(`${where}: connectTimeoutMs must be a positive number of milliseconds.`);
    this.#connectTimeoutMs = connectTimeoutMs;
    if (options.required !== undefined && typeof options.required !== 'boolean')
      throw new ConfigError(`${where}: required must be a boolean, got ${describeValue(options.required)}.`);
    this.#required = options.required ?? true;
    const auth = (options as McpHttpServerOptions).auth;
    if (auth !== undefined) {
      if (stdio) throw new ConfigError(`${where}: auth is for a server reached over HTTP (url).`);
      this.#auth = checkAuthOptions(auth, where, scope === 'session');
      this.#tokens = storeOf(this.#auth);
    }
    this.#sampling = checkSamplingOptions(options.sampling, where);
    this.#roots = checkRootsOption(options.roots, where);
    this.#elicitation = checkElicitationOption(options.elicitation, where);
    assertMcpSdkInstalled('@modelcontextprotocol/client', where);
    this.#options = options;
    this.#reconnect = reconnect;
    this.scope = scope;
    this.#allowed = options.tools ? new Set(options.tools) : undefined;
    this.#prefix = options.prefix ?? '';
    this.name = options.name ?? defaultName(options);
  }

  /** Whether its tools may ask a person while they run (elicitation, or sampling that needs approval). */
  get #asksPeople(): boolean {
    return this.#elicitation !== undefined || this.#sampling?.needsApproval === true;
  }

  get version(): number {
    return this.#version;
  }

  current(): readonly Tool[] {
    return this.#tools;
  }

  /** Open connections: the shared one and one per live session. */
  get openConnections(): number {
    let open = this.#shared?.connection.connected ? 1 : 0;
    for (const { connection } of this.#sessions.values()) if (connection.connected) open++;
    return open;
  }

  /** The protocol version agreed with the server on the shared connection (or a session's), once connected. */
  protocolVersion(session?: McpSessionInfo): string | undefined {
    if (session) return this.#sessions.get(session.sessionId)?.connection.protocolVersion;
    return this.#shared?.connection.protocolVersion;
  }

  isReady(scope: ToolSourceScope): boolean {
    // An optional server that could not be reached is asked to prepare, which tells the session once.
    if (this.#unavailable.has(this.#unavailableKey(scope.sessionId))) return false;
    if (this.#listing !== undefined || this.#needsListing()) return false;
    return this.scope === 'process' || this.#sessions.get(scope.sessionId)?.connection.connected === true;
  }

  async prepare(scope: ToolSourceScope): Promise<void> {
    if (this.#required) return this.#prepare(scope);
    const key = this.#unavailableKey(scope.sessionId);
    const known = this.#unavailable.get(key);
    if (known && Date.now() < known.until) return this.#tellUnavailable(scope, known);
    try {
      await this.#prepare(scope);
      this.#unavailable.delete(key);
    } catch (error) {
      if (scope.signal.aborted || !(error instanceof McpConnectionError)) throw error;
      const failure = new Unavailability(error, Date.now());
      this.#unavailable.set(key, failure);
      this.#tellUnavailable(scope, failure);
    }
  }

  #tellUnavailable(scope: ToolSourceScope, failure: Unavailability): void {
    if (scope.unavailable && failure.tell(scope.sessionId))
      scope.unavailable({
        source: this.name,
        error: failure.error,
        retryInMs: Math.max(0, failure.until - Date.now()),
      });
  }

  #unavailableKey(sessionId: string): string {
    return this.scope === 'session' ? sessionId : '';
  }

  async #prepare(scope: ToolSourceScope): Promise<void> {
    const { connection } = this.#connectionFor(scope.sessionId, scope.context, scope.hold);
    // Another session's listing in flight is awaited rather than repeated; if it failed (its session closed
    // under it), this session lists on its own connection.
    for (let tries = 0; tries < 3 && this.#needsListing(); tries++) {
      const inFlight = this.#listing;
      if (inFlight) await inFlight.catch(() => undefined);
      else await this.#list(connection, scope.signal);
    }
    if (this.#needsListing()) await this.#list(connection, scope.signal);
    await connection.open(scope.signal);
  }

  /**
   * Connects now and lists the tools (otherwise done at a run's first model call). A per-session server needs
   * the session: `connect({ sessionId })`. Rejects with McpConnectionError when the server cannot be reached.
   */
  async connect(session?: McpSessionInfo): Promise<void> {
    if (this.scope === 'session' && session === undefined)
      throw new ConfigError(
        `mcpServer("${this.name}") is per session: connect({ sessionId }) names the session.`,
      );
    await this.#prepare({
      sessionId: session?.sessionId ?? '',
      signal: new AbortController().signal,
      context: session?.context,
    });
  }

  /** Closes every connection of this server (stopping stdio processes). A later run opens them again. */
  async close(): Promise<void> {
    this.#unavailable.clear();
    const closing: Promise<void>[] = [];
    if (this.#shared) {
      closing.push(this.#shared.connection.close());
      this.#forgetShared?.();
      this.#shared = undefined;
    }
    for (const [sessionId, held] of [...this.#sessions]) {
      held.forget();
      this.#sessions.delete(sessionId);
      closing.push(held.connection.close());
    }
    await Promise.all(closing);
  }

  /** Closes the connection of one session (done for you when the session closes). */
  async closeSession(sessionId: string): Promise<void> {
    const held = this.#sessions.get(sessionId);
    if (this.scope === 'session') this.#unavailable.delete(sessionId);
    if (!held) return;
    this.#sessions.delete(sessionId);
    held.forget();
    await held.connection.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #connectionFor(sessionId: string, context: unknown, hold: HoldResource | undefined): Held {
    if (this.scope === 'process') {
      if (!this.#shared) {
        const held = this.#newConnection({ sessionId, context });
        this.#shared = held;
        this.#forgetShared = holdForProcess(async () => {
          if (this.#shared === held) this.#shared = undefined;
          await held.connection.close();
        });
      }
      return this.#shared;
    }
    const existing = this.#sessions.get(sessionId);
    if (existing) return existing;
    const held = this.#newConnection({ sessionId, context });
    // The run or session holds the connection and closes it when it ends; outside one, close() does.
    const forget =
      hold?.(async () => {
        if (this.#sessions.get(sessionId)?.connection === held.connection) this.#sessions.delete(sessionId);
        await held.connection.close();
      }) ?? (() => undefined);
    this.#sessions.set(sessionId, { ...held, forget });
    return held;
  }

  #newConnection(session: McpSessionInfo): Held {
    const target = this.#target(session);
    // One program answers the probe the same way whatever its per-session arguments, so a stdio server's verdict
    // is kept per declaration; an HTTP server's per URL.
    const key = target.kind === 'stdio' ? target.command : target.url.href;
    const calls = new CallsInFlight();
    const connection = new McpConnection(this.name, target, this.#reconnect, this.#connectTimeoutMs, {
      toolsChanged: () => {
        this.#stale = true;
      },
      verdict: () => this.#verdicts.get(key),
      remember: (verdict) => {
        if (verdict) this.#verdicts.set(key, verdict);
        else this.#verdicts.delete(key);
      },
      requests: this.#requestHandlers(calls, session),
    });
    return { connection, calls };
  }

  /** The server's requests a connection serves, for the calls in flight on it; undefined when none is offered. */
  #requestHandlers(calls: CallsInFlight, session: McpSessionInfo): ServerRequestHandlers | undefined {
    const sampling = this.#sampling;
    const roots = this.#roots;
    const elicitation = this.#elicitation;
    if (sampling === undefined && roots === undefined && elicitation === undefined) return undefined;
    const capabilities: ClientCapabilities = {};
    const handlers: ServerRequestHandlers = { capabilities };
    if (sampling) {
      capabilities.sampling = {};
      // Numbered per tool call, so a replay of a durable run finds each request's recorded answer.
      const sampledPerCall = new WeakMap<ToolContext, number>();
      handlers.sampling = async (params, signal) => {
        const found = calls.caller(this.name);
        if ('refusal' in found) throw new McpRequestRefusal(`sampling refused: ${found.refusal}`);
        const sampled = (sampledPerCall.get(found.context) ?? 0) + 1;
        sampledPerCall.set(found.context, sampled);
        const both = anySignal(signal, found.context.signal);
        return serveSampling(this.name, sampling, params, found.context, sampled, both);
      };
    }
    if (roots) {
      capabilities.roots = {};
      handlers.roots = async () => {
        const where = `mcpServer("${this.name}"): roots`;
        if (typeof roots !== 'function') return rootsResult(roots, where);
        const found = calls.caller(this.name);
        let info: McpRootsInfo;
        if ('context' in found) info = { sessionId: found.context.sessionId, context: found.context.context };
        // A per-session connection belongs to one session: its roots are that session's, asked between calls too.
        else if (this.scope === 'session') info = session;
        else throw new McpRequestRefusal(`roots refused: ${found.refusal}`);
        try {
          return rootsResult(roots(info), where);
        } catch (error) {
          throw new McpRequestRefusal(
            `roots refused: ${error instanceof Error ? error.message : String(error)}`,
            {
              cause: error,
            },
          );
        }
      };
    }
    if (elicitation) {
      capabilities.elicitation = { form: { applyDefaults: true }, ...(elicitation.url ? { url: {} } : {}) };
      // Numbered per tool call: the call sent again after a restart asks under the same ids, and finds the answers.
      const askedPerCall = new WeakMap<ToolContext, number>();
      handlers.elicitation = async (params, signal) => {
        const found = calls.caller(this.name);
        if ('refusal' in found) throw new McpRequestRefusal(`elicitation refused: ${found.refusal}`);
        const asked = (askedPerCall.get(found.context) ?? 0) + 1;
        askedPerCall.set(found.context, asked);
        return serveElicitation(
          this.name,
          params,
          found.context,
          asked,
          anySignal(signal, found.context.signal),
        );
      };
    }
    return handlers;
  }

  #target(session: McpSessionInfo): McpTarget {
    const where = `mcpServer("${this.name}")`;
    const options = this.#options;
    if ('command' in options && options.command !== undefined) {
      const args = computed(options.args, session) ?? [];
      if (!Array.isArray(args) || args.some((arg) => typeof arg !== 'string'))
        throw new ConfigError(`${where}: args must be an array of strings.`);
      const env = computed(options.env, session);
      const cwd = computed(options.cwd, session);
      return {
        kind: 'stdio',
        command: options.command,
        args: [...args],
        env: env ? { ...env } : undefined,
        cwd,
        stderr: options.stderr ?? 'pipe',
      };
    }
    const http = options as McpHttpServerOptions;
    const url = computed(http.url, session);
    if (!(url instanceof URL) && (typeof url !== 'string' || !URL.canParse(url)))
      throw new ConfigError(`${where}: url must be an absolute URL, got ${describeValue(url)}.`);
    const headers = computed(http.headers, session);
    const href = new URL(url);
    let oauth: McpOAuth | undefined;
    if (this.#auth && this.#tokens) {
      const user = computed(this.#auth.user, session) ?? 'default';
      if (typeof user !== 'string' || user === '')
        throw new ConfigError(
          `${where}: auth.user must give a non-empty string, got ${describeValue(user)}.`,
        );
      oauth = new McpOAuth(this.name, this.#auth, this.#tokens, { server: href.href, user });
    }
    return {
      kind: 'http',
      url: href,
      headers: headers ? { ...headers } : undefined,
      oauth,
      sessionId: session.sessionId,
    };
  }

  #needsListing(): boolean {
    return this.#version === 0 || this.#stale || Date.now() >= this.#expiresAt;
  }

  #list(connection: McpConnection, signal: AbortSignal): Promise<void> {
    this.#listing ??= (async () => {
      // Marked fresh before the request, so a change announced while it runs is not lost.
      this.#stale = false;
      try {
        const listing = await connection.listTools(signal);
        this.#adopt(listing.tools);
        this.#expiresAt = listing.ttlMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + listing.ttlMs;
      } catch (error) {
        this.#stale = true;
        throw error;
      }
    })().finally(() => {
      this.#listing = undefined;
    });
    return this.#listing;
  }

  #adopt(listed: readonly ListedMcpTool[]): void {
    if (this.#allowed) {
      // A name in `tools` the server does not list is most likely a typo: the run fails rather than going without.
      const names = listed.flatMap((entry) => (typeof entry?.name === 'string' ? [entry.name] : []));
      const missing = [...this.#allowed].filter((name) => !names.includes(name));
      if (missing.length > 0)
        throw new ConfigError(
          `mcpServer("${this.name}"): tools names ${missing.map((name) => `"${name}"`).join(', ')}, which the server does not list; it lists ${names.length === 0 ? 'no tools' : names.map((name) => `"${name}"`).join(', ')}.`,
        );
    }
    const tools: Tool[] = [];
    const serverNames = new Map<string, string>();
    for (const entry of listed) {
      if (typeof entry?.name !== 'string') continue;
      if (this.#allowed && !this.#allowed.has(entry.name)) continue;
      const exposed = exposedToolName(this.#prefix, entry.name);
      if (serverNames.has(exposed)) continue;
      serverNames.set(exposed, entry.name);
      tools.push(this.#toolFor(exposed, entry));
    }
    this.#tools = Object.freeze(tools);
    this.#version++;
  }

  #toolFor(exposed: string, listed: ListedMcpTool): Tool {
    const serverName = listed.name;
    // The server's `$schema` (its JSON Schema dialect) is kept; providers that refuse the keyword drop it.
    const schema = isPlainObject(listed.inputSchema) ? listed.inputSchema : {};
    const parameters = { ...schema, type: 'object' } as JsonObject;
    const idempotent = isPlainObject(listed.annotations) && listed.annotations.idempotentHint === true;
    const description =
      typeof listed.description === 'string' && listed.description.trim() !== ''
        ? listed.description
        : `Tool "${serverName}" of the MCP server "${this.name}".`;
    return {
      kind: 'tool',
      name: exposed,
      description,
      input: mcpArguments as z.ZodType<unknown>,
      parameters,
      timeoutMs: this.#options.timeoutMs,
      // A tool that may not run twice is not retried after a failure: it may have run on the server.
      maxRetries: idempotent ? this.#options.maxRetries : 0,
      fatal: false,
      secret: Object.freeze([]),
      needsApproval: this.#options.needsApproval ?? false,
      execute: (args: unknown, context: ToolContext) => this.#call(serverName, args, context, idempotent),
    };
  }

  /**
   * Whether this call was sent before a restart and its server asked a person (a stored question of the call): on a
   * 2025-era connection the server's request died with the connection, after the tool had run up to its question.
   * On 2026-07-28 a question comes back as the call's answer (`input_required`) before the tool runs, so sending the
   * call again, with the stored answer, is safe.
   */
  #askedBeforeRestart(connection: McpConnection, context: ToolContext): boolean {
    if (connection.protocolVersion === modernProtocol) return false;
    const durable = callerOf(context)?.durable;
    if (durable === undefined) return false;
    return (
      durable.isRequested(`${context.callId}/elicitation-1`) ||
      durable.isRequested(`${context.callId}/sampling-1`)
    );
  }

  async #call(serverName: string, args: unknown, context: ToolContext, idempotent: boolean): Promise<string> {
    // Normally opened before the model call; if not, the run that calls holds what this opens.
    const { connection, calls } = this.#connectionFor(
      context.sessionId,
      context.context,
      callerOf(context)?.holdings?.hold,
    );
    if (!idempotent && this.#asksPeople && this.#askedBeforeRestart(connection, context))
      throw new ToolAnswerError(
        `MCP server "${this.name}", tool "${serverName}": the call asked a person (elicitation or a sampling approval) and the process running it stopped while it waited; it is not sent again, since the server may have run the tool up to its question and the tool is not marked idempotent. Ask the user whether to call it again.`,
      );
    let result: Awaited<ReturnType<McpConnection['callTool']>>;
    const leave = calls.enter(context);
    try {
      result = await connection.callTool(
        serverName,
        (args ?? {}) as Record<string, unknown>,
        context.signal,
        idempotent ? 'after-any-loss' : 'only-if-never-sent',
      );
    } catch (error) {
      if (context.signal.aborted || error instanceof McpConnectionError) throw error;
      // This client refused what the server asked for (2026-07-28: the refusal cannot travel with the call, so the
      // call ends here, before it was sent again): the model reads why.
      const refusal = refusalIn(error);
      if (refusal)
        throw new ToolAnswerError(`MCP server "${this.name}", tool "${serverName}": ${refusal.message}`, {
          cause: error,
        });
      // The server asked for input this client cannot give (2026-07-28 `input_required`): sending the call again
      // would get the same question.
      if (isUnsupportedResult(error))
        throw new ToolAnswerError(
          `MCP server "${this.name}" asked for input (elicitation, sampling or roots) before running tool "${serverName}", which this client does not provide: ${(error as Error).message}`,
          { cause: error },
        );
      // A JSON-RPC error is the server's answer (unknown tool, invalid arguments): the model reads it.
      if (isJsonRpcError(error))
        throw new ToolAnswerError(`MCP server "${this.name}" answered with an error: ${error.message}`, {
          cause: error,
        });
      if (!idempotent)
        throw new Error(
          `${error instanceof Error ? error.message : String(error)} (not sent again: tool "${serverName}" is not marked idempotent and the server may have run it)`,
          { cause: error },
        );
      throw error;
    } finally {
      leave();
    }
    const text = resultText(result);
    if (result.isError === true)
      throw new ToolAnswerError(text === '' ? `tool "${serverName}" failed` : text);
    return text;
  }
}

function checkElicitationOption(value: unknown, where: string): { url: boolean } | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return { url: false };
  if (!isPlainObject(value))
    throw new ConfigError(
      `${where}: elicitation must be true or { url?: boolean }, got ${describeValue(value)}.`,
    );
  checkOptionObject(value, ['url'], `${where}: elicitation`);
  if (value.url !== undefined && typeof value.url !== 'boolean')
    throw new ConfigError(`${where}: elicitation.url must be a boolean.`);
  return { url: value.url === true };
}

/** A connection with the tool calls in flight on it. */
interface Held {
  connection: McpConnection;
  calls: CallsInFlight;
}

/** A refusal of this client's found in an error or its causes. */
function refusalIn(error: unknown): McpRequestRefusal | undefined {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++)
    if (cause instanceof McpRequestRefusal) return cause;
  return undefined;
}

/** Aborted when either is. */
function anySignal(a: AbortSignal, b: AbortSignal): AbortSignal {
  return AbortSignal.any([a, b]);
}

/** Declares an MCP server whose tools an agent can use: `mcpServer({ command, args })` or `mcpServer({ url })`. */
export function mcpServer(options: McpServerOptions): McpServer {
  return new McpServer(options);
}

function computed<T>(setting: McpSetting<T> | undefined, session: McpSessionInfo): T | undefined {
  return typeof setting === 'function' ? (setting as (session: McpSessionInfo) => T)(session) : setting;
}

function defaultName(options: McpServerOptions): string {
  if ('command' in options && options.command !== undefined) {
    return defaultStdioServerName(
      options.command,
      typeof options.args === 'function' ? [] : (options.args ?? []),
    );
  }
  const url = (options as McpHttpServerOptions).url;
  if (typeof url === 'function') return 'mcp';
  try {
    return new URL(url).host;
  } catch {
    return 'mcp';
  }
}

function isJsonRpcError(error: unknown): error is Error & { code: number } {
  return error instanceof Error && typeof (error as { code?: unknown }).code === 'number';
}
