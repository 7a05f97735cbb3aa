import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/server';
import type { McpServerSdk } from './sdk.ts';

/** What one HTTP request to the MCP endpoint must pass before the MCP handler sees it. */
export interface McpHttpGate {
  /** The endpoint's path (`/mcp`); any other path is answered 404. */
  path: string;
  /** Hostnames the `Host` header may name (port-agnostic; IPv6 in brackets). */
  allowedHosts: readonly string[];
  /** Hostnames an `Origin` header may name; a request without `Origin` (not from a browser) passes. */
  allowedOrigins: readonly string[];
  /** Largest request body, in bytes. */
  maxBodyBytes: number;
  /** Checks the bearer token: the caller's verified token, or the refusal to send (401/403). */
  authenticate: ((request: Request) => Promise<AuthInfo | Response>) | undefined;
}

type McpFetch = (request: Request, options?: { authInfo?: AuthInfo }) => Promise<Response>;

/**
 * Serves one Node request to the MCP endpoint, cheapest check first: the path, then `Host` and `Origin` (a page on
 * another site, or a DNS name rebound to this machine, gets 403 before anything runs), then the bearer token, then
 * the body, read only after all that and counted while it arrives: a body past the limit (declared or streamed) is
 * answered 413 at once and the connection closed, so the rest is never read or kept. The response is streamed chunk
 * by chunk (Server-Sent Events stay live), and a client that goes away aborts the request.
 */
export async function serveMcpHttpRequest(
  req: IncomingMessage,
  res: ServerResponse,
  gate: McpHttpGate,
  sdk: McpServerSdk,
  handle: McpFetch,
): Promise<void> {
  try {
    if ((req.url ?? '/').split('?')[0] !== gate.path) {
      refuse(req, res, 404, 'Not found.');
      return;
    }
    const host = sdk.validateHostHeader(req.headers.host, [...gate.allowedHosts]);
    if (!host.ok) {
      refuse(req, res, 403, `Forbidden: ${host.message}`);
      return;
    }
    const origin = sdk.validateOriginHeader(req.headers.origin, [...gate.allowedOrigins]);
    if (!origin.ok) {
      refuse(req, res, 403, `Forbidden: ${origin.message}`);
      return;
    }
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > gate.maxBodyBytes) {
      refuse(req, res, 413, tooLarge(gate.maxBodyBytes));
      return;
    }
    const controller = new AbortController();
    res.on('close', () => controller.abort());
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (Array.isArray(value)) for (const each of value) headers.append(name, each);
      else if (value !== undefined) headers.set(name, value);
    }
    const url = `http://${req.headers.host}${req.url ?? '/'}`;
    let authInfo: AuthInfo | undefined;
    if (gate.authenticate) {
      const verdict = await gate.authenticate(new Request(url, { method: 'GET', headers }));
      if (verdict instanceof Response) {
        await sendResponse(req, res, verdict, controller.signal, true);
        return;
      }
      authInfo = verdict;
    }
    let body: Buffer | undefined;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      const read = await readBoundedBody(req, gate.maxBodyBytes);
      if (read === 'too large') {
        refuse(req, res, 413, tooLarge(gate.maxBodyBytes));
        return;
      }
      if (read.length > 0) body = read;
    }
    const request = new Request(url, {
      method: req.method ?? 'GET',
      headers,
      ...(body !== undefined ? { body } : {}),
      signal: controller.signal,
    });
    const response = await handle(request, authInfo === undefined ? undefined : { authInfo });
    await sendResponse(req, res, response, controller.signal, false);
  } catch (error) {
    if (!res.headersSent) {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(error instanceof Error ? error.message : String(error));
    } else res.destroy();
  }
}

/**
 * The body, or 'too large' as soon as more than `limit` bytes have arrived. Reading stops there (the request is
 * paused and its connection closed once the refusal is sent), so memory holds at most `limit` bytes plus a chunk.
 */
function readBoundedBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.pause();
        chunks.length = 0;
        resolve('too large');
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

function tooLarge(limit: number): string {
  return `Payload too large: the request body may be at most ${limit} bytes.`;
}

/**
 * Answers with a JSON-RPC error and closes the connection once it is sent: a refused request's body (which may be
 * large, or still arriving) is never read.
 */
function refuse(req: IncomingMessage, res: ServerResponse, status: number, message: string): void {
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null });
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  res.end(body, () => {
    if (!req.complete) req.socket.destroy();
  });
}

async function sendResponse(
  req: IncomingMessage,
  res: ServerResponse,
  response: Response,
  signal: AbortSignal,
  closeAfter: boolean,
): Promise<void> {
  const headers = [...response.headers.entries()];
  if (closeAfter) headers.push(['connection', 'close']);
  res.writeHead(response.status, headers.flat());
  if (response.body === null) {
    res.end(() => {
      if (closeAfter && !req.complete) req.socket.destroy();
    });
    return;
  }
  res.flushHeaders();
  const reader = response.body.getReader();
  signal.addEventListener('abort', () => void reader.cancel().catch(() => undefined), { once: true });
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    res.write(value);
  }
  res.end(() => {
    if (closeAfter && !req.complete) req.socket.destroy();
  });
}
