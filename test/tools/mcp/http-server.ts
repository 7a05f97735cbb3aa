import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createMcpHandler,
  inputRequired,
  McpServer,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { serveWithFetch } from '../../../src/tools/mcp/node-http.ts';

/** What the test server saw: calls, and cancellations of calls in flight. */
export interface ServerLog {
  calls: string[];
  cancelled: string[];
  /** Resolves the wait of a pending `slow` call, when one is running. */
  slowStarted: Promise<void>;
}

/** The tools every test server offers. `extra` tools appear once `grow` was called (a tools/list_changed). */
function buildServer(log: ServerLog, state: { grown: boolean; markSlow: () => void }): McpServer {
  const server = new McpServer(
    { name: 'troupe-test', version: '1.0.0' },
    { capabilities: { tools: { listChanged: true } } },
  );
  server.registerTool(
    'echo',
    {
      description: 'Echoes the text',
      inputSchema: z.object({ text: z.string() }),
      annotations: { idempotentHint: true },
    },
    async ({ text }) => {
      log.calls.push(`echo:${text}`);
      return { content: [{ type: 'text', text: `echo: ${text}` }] };
    },
  );
  server.registerTool(
    'slow',
    { description: 'Waits until cancelled', inputSchema: z.object({ id: z.string() }) },
    async ({ id }, ctx) => {
      log.calls.push(`slow:${id}`);
      state.markSlow();
      await new Promise<void>((resolve) => {
        if (ctx.mcpReq.signal.aborted) resolve();
        ctx.mcpReq.signal.addEventListener('abort', () => resolve(), { once: true });
        setTimeout(resolve, 20_000).unref();
      });
      if (ctx.mcpReq.signal.aborted) log.cancelled.push(id);
      return { content: [{ type: 'text', text: 'finished' }] };
    },
  );
  server.registerTool(
    'charge',
    {
      description:
        'Charges an amount: not idempotent (no annotation); `hold` waits until the call is cancelled',
      inputSchema: z.object({ amount: z.number(), hold: z.boolean().optional() }),
    },
    async ({ amount, hold }, ctx) => {
      log.calls.push(`charge:${amount}`);
      if (hold)
        await new Promise<void>((resolve) => {
          if (ctx.mcpReq.signal.aborted) resolve();
          ctx.mcpReq.signal.addEventListener('abort', () => resolve(), { once: true });
          setTimeout(resolve, 20_000).unref();
        });
      return { content: [{ type: 'text', text: `charged ${amount}` }] };
    },
  );
  server.registerTool(
    'confirm_charge',
    {
      description: 'Asks the client to confirm first (2026-07-28 input_required)',
      inputSchema: z.object({}),
    },
    async () => {
      log.calls.push('confirm_charge');
      return inputRequired({
        inputRequests: {
          ok: inputRequired.elicit({ message: 'Charge?', requestedSchema: z.object({ ok: z.boolean() }) }),
        },
      });
    },
  );
  server.registerTool('boom', { description: 'Always fails', inputSchema: z.object({}) }, async () => ({
    content: [{ type: 'text', text: 'the boom tool failed on purpose' }],
    isError: true,
  }));
  server.registerTool(
    'grow',
    { description: 'Adds the tool "extra" and announces the change', inputSchema: z.object({}) },
    async () => {
      state.grown = true;
      return { content: [{ type: 'text', text: 'grown' }] };
    },
  );
  if (state.grown)
    server.registerTool(
      'extra',
      { description: 'Appears after grow', inputSchema: z.object({}) },
      async () => ({
        content: [{ type: 'text', text: 'extra!' }],
      }),
    );
  return server;
}

/**
 * A failure injected into the next `tools/call` after the server ran the tool (except `expire`, which forgets the
 * sessions first): the socket reset before an answer, a 502 in place of the answer, a result the client cannot
 * read, a result without the 2026-07-28 `resultType`, an `input_required` result asking for a form.
 */
export type InjectedFault =
  | 'reset'
  | 'status-502'
  | 'malformed'
  | 'no-result-type'
  | 'input-required'
  | 'expire';

/** A Streamable HTTP MCP server on 127.0.0.1 (random port) that can be stopped and started again on that port. */
export class TestHttpServer {
  readonly log: ServerLog;
  readonly #form: 'stateless' | 'stateful';
  #http: Server | undefined;
  #port = 0;
  #state: { grown: boolean; markSlow: () => void };
  readonly #sessions = new Map<
    string,
    { transport: WebStandardStreamableHTTPServerTransport; server: McpServer }
  >();
  #modern: ReturnType<typeof createMcpHandler> | undefined;
  /** Sessions the stateful form has handed out (each `initialize`). */
  sessionsCreated = 0;
  /** Requests that named a session this server does not know (answered 404). */
  unknownSessions = 0;
  /** Sessions ended by the client (`DELETE` with its `Mcp-Session-Id`). */
  sessionsDeleted = 0;
  /** Failures to inject, one per `tools/call`, in order. */
  readonly faults: InjectedFault[] = [];

  /** Sessions the stateful form holds open. */
  get openSessions(): number {
    return this.#sessions.size;
  }

  constructor(form: 'stateless' | 'stateful') {
    this.#form = form;
    let markSlow: () => void = () => undefined;
    this.log = {
      calls: [],
      cancelled: [],
      slowStarted: new Promise<void>((resolve) => (markSlow = resolve)),
    };
    this.#state = { grown: false, markSlow };
  }

  get url(): string {
    return `http://127.0.0.1:${this.#port}/mcp`;
  }

  /** Makes `extra` appear and tells connected clients (stateful form: over their GET streams). */
  grow(): void {
    this.#state.grown = true;
    this.#modern?.notify.toolsChanged();
    for (const { server } of this.#sessions.values()) {
      server.registerTool(
        'extra',
        { description: 'Appears after grow', inputSchema: z.object({}) },
        async () => ({
          content: [{ type: 'text', text: 'extra!' }],
        }),
      );
    }
  }

  async start(): Promise<void> {
    this.#modern = createMcpHandler(() => buildServer(this.log, this.#state));
    const http = createServer(
      (req, res) =>
        void serveWithFetch(req, res, (request) => this.#inject(request, () => res.socket?.destroy())),
    );
    await new Promise<void>((resolve) => http.listen(this.#port, '127.0.0.1', resolve));
    this.#port = (http.address() as AddressInfo).port;
    this.#http = http;
  }

  /** Forgets every session while still listening, as a server whose sessions expired does. */
  async expireSessions(): Promise<void> {
    for (const { transport } of this.#sessions.values()) await transport.close().catch(() => undefined);
    this.#sessions.clear();
  }

  /** Stops listening and forgets every session, as a restarted process would. */
  async stop(): Promise<void> {
    const http = this.#http;
    this.#http = undefined;
    for (const { transport } of this.#sessions.values()) await transport.close().catch(() => undefined);
    this.#sessions.clear();
    await this.#modern?.close();
    if (!http) return;
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  }

  /** Runs the request, then replaces its answer with the next fault when it is a tool call. */
  async #inject(request: Request, reset: () => void): Promise<Response> {
    if (this.faults.length === 0 || request.method !== 'POST') return this.#handle(request);
    const body = (await request.clone().json()) as { method?: string; id?: number | string };
    if (body.method !== 'tools/call') return this.#handle(request);
    const fault = this.faults.shift();
    if (fault === 'expire') {
      await this.expireSessions();
      return this.#handle(request);
    }
    const answer = await this.#handle(request);
    await answer.text();
    switch (fault) {
      case 'reset':
        reset();
        return new Response(null, { status: 204 });
      case 'status-502':
        return new Response('bad gateway', { status: 502 });
      case 'input-required':
        return Response.json({
          jsonrpc: '2.0',
          id: body.id,
          result: {
            resultType: 'input_required',
            inputRequests: {
              ok: {
                method: 'elicitation/create',
                params: {
                  mode: 'form',
                  message: 'Go on?',
                  requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } },
                },
              },
            },
          },
        });
      case 'malformed':
        return Response.json({ jsonrpc: '2.0', id: body.id, result: { content: 'not a list of blocks' } });
      default:
        return Response.json({
          jsonrpc: '2.0',
          id: body.id,
          result: { content: [{ type: 'text', text: 'charged' }] },
        });
    }
  }

  async #handle(request: Request): Promise<Response> {
    if (this.#form === 'stateless')
      return (this.#modern as ReturnType<typeof createMcpHandler>).fetch(request);
    const sessionId = request.headers.get('mcp-session-id');
    if (sessionId && request.method === 'DELETE' && this.#sessions.has(sessionId)) {
      this.sessionsDeleted++;
      const { transport } = this.#sessions.get(sessionId) as {
        transport: WebStandardStreamableHTTPServerTransport;
      };
      this.#sessions.delete(sessionId);
      const answer = await transport.handleRequest(request);
      await transport.close().catch(() => undefined);
      return answer;
    }
    if (sessionId) {
      const known = this.#sessions.get(sessionId);
      if (!known) {
        this.unknownSessions++;
        return Response.json(
          { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null },
          { status: 404 },
        );
      }
      return known.transport.handleRequest(request);
    }
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        this.sessionsCreated++;
        this.#sessions.set(id, { transport, server });
      },
    });
    const server = buildServer(this.log, this.#state);
    await server.connect(transport);
    return transport.handleRequest(request);
  }
}
