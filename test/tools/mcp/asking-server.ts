import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createMcpHandler,
  type InputRequest,
  inputRequired,
  inputResponse,
  McpServer,
  type ServerContext,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { serveWithFetch } from '../../../src/tools/mcp/node-http.ts';

/** What the asking server saw: the answers it got to its requests, and the errors. */
export interface AskingLog {
  /** One line per answer or error the client gave: `sampling:<text>`, `sampling-error:<message>`, ... */
  answers: string[];
  /** How many times a tool asked the client (a request sent, or an `input_required` answer). */
  asked: number;
  /** While set, a tool that got its answer waits for this before it returns (a call in flight, for kill tests). */
  hold?: Promise<void> | undefined;
  /** Called each time a tool got its answer (before it waits for `hold`). */
  onAnswer?: (() => void) | undefined;
  /** Added to the text the `summarize` tool asks a summary of (another request for the same call). */
  samplingSuffix?: string | undefined;
}

type Ask = { key: string; request: InputRequest; legacy: (ctx: ServerContext) => Promise<string> };

/**
 * Runs a tool that asks the client something first: on a 2025-era connection with a request to the client
 * (`ctx.mcpReq.requestSampling`, ...), on a 2026-07-28 one with an `input_required` result and the retried call.
 * The tool answers with what it got, or with the error the client answered.
 */
function asking(log: AskingLog, ask: Ask, read: (view: ReturnType<typeof inputResponse>) => string) {
  return async (ctx: ServerContext) => {
    if (ctx.mcpReq.envelope === undefined) {
      // 2025 era: the server sends the request while the call runs.
      try {
        log.asked++;
        const text = await ask.legacy(ctx);
        log.answers.push(text);
        log.onAnswer?.();
        await log.hold;
        return { content: [{ type: 'text' as const, text }] };
      } catch (error) {
        const text = `${ask.key}-error:${(error as Error).message}`;
        log.answers.push(text);
        return { content: [{ type: 'text' as const, text }], isError: true };
      }
    }
    const view = inputResponse(ctx.mcpReq.inputResponses, ask.key);
    if (view.kind === 'missing') {
      log.asked++;
      return inputRequired({ inputRequests: { [ask.key]: ask.request } });
    }
    const text = read(view);
    log.answers.push(text);
    log.onAnswer?.();
    await log.hold;
    return { content: [{ type: 'text' as const, text }] };
  };
}

function buildServer(log: AskingLog): McpServer {
  const server = new McpServer({ name: 'asking', version: '1.0.0' }, { capabilities: { tools: {} } });
  const samplingParams = (text: string) => ({
    messages: [
      {
        role: 'user' as const,
        content: { type: 'text' as const, text: `Summarize: ${text}${log.samplingSuffix ?? ''}` },
      },
    ],
    systemPrompt: 'Be brief.',
    maxTokens: 50,
  });
  server.registerTool(
    'summarize',
    { description: 'Asks the client to sample a summary', inputSchema: z.object({ text: z.string() }) },
    async ({ text }, ctx) =>
      asking(
        log,
        {
          key: 'sampling',
          request: inputRequired.createMessage(samplingParams(text)),
          legacy: async (inner) => {
            const result = await inner.mcpReq.requestSampling(samplingParams(text));
            const content = Array.isArray(result.content) ? result.content[0] : result.content;
            return `sampling:${content?.type === 'text' ? content.text : '?'}`;
          },
        },
        (view) => {
          if (view.kind !== 'sampling') return `sampling-error:${view.kind}`;
          const content = Array.isArray(view.result.content) ? view.result.content[0] : view.result.content;
          return `sampling:${content?.type === 'text' ? content.text : '?'}`;
        },
      )(ctx),
  );
  server.registerTool(
    'where',
    { description: 'Asks the client for its roots and answers with them', inputSchema: z.object({}) },
    async (_args, ctx) =>
      asking(
        log,
        {
          key: 'roots',
          request: inputRequired.listRoots(),
          legacy: async (inner) => {
            const result = await inner.mcpReq.send({ method: 'roots/list' });
            return `roots:${JSON.stringify(result.roots)}`;
          },
        },
        (view) =>
          view.kind === 'roots' ? `roots:${JSON.stringify(view.roots)}` : `roots-error:${view.kind}`,
      )(ctx),
  );
  const form = {
    message: 'Who are you?',
    requestedSchema: {
      type: 'object' as const,
      properties: {
        name: { type: 'string' as const, description: 'Your name' },
        age: { type: 'integer' as const, default: 30 },
        color: { type: 'string' as const, enum: ['red', 'blue'], default: 'blue' },
      },
      required: ['name'],
    },
  };
  const describeElicit = (result: { action: string; content?: unknown }) =>
    `elicit:${result.action}${result.content === undefined ? '' : `:${JSON.stringify(result.content)}`}`;
  server.registerTool(
    'who',
    { description: 'Asks the person for a form (elicitation)', inputSchema: z.object({}) },
    async (_args, ctx) =>
      asking(
        log,
        {
          key: 'elicit',
          request: inputRequired.elicit(form),
          legacy: async (inner) => describeElicit(await inner.mcpReq.elicitInput({ mode: 'form', ...form })),
        },
        (view) => (view.kind === 'elicit' ? describeElicit(view) : `elicit-error:${view.kind}`),
      )(ctx),
  );
  server.registerTool(
    'sign_in',
    { description: 'Asks the person to open a link (URL elicitation)', inputSchema: z.object({}) },
    async (_args, ctx) =>
      asking(
        log,
        {
          key: 'elicit',
          request: inputRequired.elicitUrl({ message: 'Sign in', url: 'https://example.com/sign-in' }),
          legacy: async (inner) =>
            describeElicit(
              await inner.mcpReq.elicitInput({
                mode: 'url',
                message: 'Sign in',
                url: 'https://example.com/sign-in',
                elicitationId: 'e1',
              }),
            ),
        },
        (view) => (view.kind === 'elicit' ? describeElicit(view) : `elicit-error:${view.kind}`),
      )(ctx),
  );
  return server;
}

/** A Streamable HTTP MCP server on 127.0.0.1 whose tools ask the client (sampling, roots, elicitation) first. */
export class AskingServer {
  readonly log: AskingLog = { answers: [], asked: 0 };
  readonly #form: 'stateless' | 'stateful';
  #http: Server | undefined;
  #modern: ReturnType<typeof createMcpHandler> | undefined;
  readonly #sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();

  constructor(form: 'stateless' | 'stateful') {
    this.#form = form;
  }

  get url(): string {
    const address = this.#http?.address() as AddressInfo | undefined;
    return `http://127.0.0.1:${address?.port ?? 0}/mcp`;
  }

  async start(): Promise<void> {
    this.#modern = createMcpHandler(() => buildServer(this.log));
    const http = createServer(
      (req, res) => void serveWithFetch(req, res, (request) => this.#handle(request)),
    );
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    this.#http = http;
  }

  async stop(): Promise<void> {
    for (const transport of this.#sessions.values()) await transport.close().catch(() => undefined);
    this.#sessions.clear();
    await this.#modern?.close();
    const http = this.#http;
    if (!http) return;
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  }

  async #handle(request: Request): Promise<Response> {
    if (this.#form === 'stateless')
      return (this.#modern as ReturnType<typeof createMcpHandler>).fetch(request);
    const sessionId = request.headers.get('mcp-session-id');
    const known = sessionId ? this.#sessions.get(sessionId) : undefined;
    if (known) return known.handleRequest(request);
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        this.#sessions.set(id, transport);
      },
    });
    await buildServer(this.log).connect(transport);
    return transport.handleRequest(request);
  }
}
