import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A local HTTP server the official provider SDKs are pointed at (baseURL), so tests exercise the real SDK
 * request building, SSE parsing and error classes against bytes we control. It records every request and
 * answers from a handler; it can also misbehave on purpose (reset, truncate, stall) to test failure paths.
 */

/** One request as the server saw it. `path` includes the query string; header names are lower case. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** Parsed JSON when the body is JSON, otherwise the text (undefined when there was no body). */
  body: unknown;
  /** The body exactly as received. */
  rawBody: string;
}

/** What the server does for one request. With none of body/sse/raw set it answers with an empty body. */
export interface WireReply {
  status?: number;
  headers?: Record<string, string>;
  /** Sent as JSON (a string is taken as JSON text already and sent unchanged). */
  body?: unknown;
  /** SSE frames without the trailing blank line; each is written as frame + '\n\n'. */
  sse?: readonly string[];
  /** Send that many SSE frames, then destroy the socket. */
  truncateAfterChunks?: number;
  /** Destroy the socket without answering. */
  resetBeforeResponse?: boolean;
  /** Wait this long before answering; stops waiting (and answers nothing) if the client goes away. */
  stallMs?: number;
  /** Wait this long between SSE frames. */
  chunkDelayMs?: number;
  /** Send that many SSE frames, then hold the stream open, sending nothing, until the client goes away. */
  stallAfterChunks?: number;
  /** Exact body text (for example invalid JSON). */
  raw?: string;
}

export type WireHandler = (request: RecordedRequest, index: number) => WireReply | Promise<WireReply>;

export interface WireServer {
  /** http://127.0.0.1:port (no trailing slash). */
  url: string;
  requests: RecordedRequest[];
  /** Stops the server and destroys open sockets, so stalled requests end. */
  close(): Promise<void>;
}

/** A handler serving the replies in order; a request past the end gets a 500 whose JSON body names the overrun. */
export function sequence(...replies: WireReply[]): WireHandler {
  return (request, index) => {
    const reply = replies[index];
    if (reply !== undefined) return reply;
    return {
      status: 500,
      body: {
        error: {
          type: 'wire_sequence_overrun',
          message: `wire server: request ${index + 1} (${request.method} ${request.path}) is past the end of the sequence of ${replies.length} replies`,
        },
      },
    };
  };
}

/** Splits a recorded .sse file into frames (blank-line separated, CRLF tolerated, empty frames dropped). */
export function sseFromText(text: string): string[] {
  return text
    .replace(/\r\n/g, '\n')
    .split(/\n\n+/)
    .map((frame) => frame.replace(/^\n+|\n+$/g, ''))
    .filter((frame) => frame.length > 0);
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function parseBody(raw: string, contentType: string | undefined): unknown {
  if (raw.length === 0) return undefined;
  if (contentType?.includes('json') ?? true) {
    try {
      return JSON.parse(raw);
    } catch {
      return raw;
    }
  }
  return raw;
}

function flatHeaders(request: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** Resolves after `ms`, or early (with false) when the client closes the connection or the server closes. */
function waitUnlessGone(ms: number, response: ServerResponse, closing: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (response.destroyed || closing.aborted) return resolve(false);
    const timer = setTimeout(() => finish(true), ms);
    const gone = () => finish(false);
    function finish(stillThere: boolean) {
      clearTimeout(timer);
      response.off('close', gone);
      closing.removeEventListener('abort', gone);
      resolve(stillThere && !response.destroyed);
    }
    response.on('close', gone);
    closing.addEventListener('abort', gone, { once: true });
  });
}

async function answer(
  reply: WireReply,
  request: IncomingMessage,
  response: ServerResponse,
  closing: AbortSignal,
): Promise<void> {
  if (reply.stallMs !== undefined && reply.stallMs > 0) {
    if (!(await waitUnlessGone(reply.stallMs, response, closing))) return;
  }
  if (reply.resetBeforeResponse) {
    request.socket.destroy();
    return;
  }
  const status = reply.status ?? 200;
  const headers: Record<string, string> = {};
  let payload: string | undefined;
  if (reply.sse !== undefined) {
    headers['content-type'] = 'text/event-stream';
    headers['cache-control'] = 'no-cache';
  } else if (reply.raw !== undefined) {
    payload = reply.raw;
  } else if (reply.body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
  }
  Object.assign(headers, reply.headers);
  if (reply.sse === undefined) {
    response.writeHead(status, headers);
    response.end(payload ?? '');
    return;
  }
  response.writeHead(status, headers);
  response.flushHeaders();
  const frames = reply.sse;
  const cut = reply.truncateAfterChunks;
  const sendCount = cut === undefined ? frames.length : Math.min(cut, frames.length);
  for (let i = 0; i < sendCount; i++) {
    if (i > 0 && reply.chunkDelayMs !== undefined && reply.chunkDelayMs > 0) {
      if (!(await waitUnlessGone(reply.chunkDelayMs, response, closing))) return;
    }
    if (reply.stallAfterChunks !== undefined && i >= reply.stallAfterChunks) {
      await waitUnlessGone(2 ** 31 - 1, response, closing);
      return;
    }
    if (response.destroyed) return;
    // Wait for each frame to reach the socket, so a cut right after it does not swallow it.
    await new Promise<void>((resolve) => response.write(`${frames[i]}\n\n`, () => resolve()));
  }
  if (reply.stallAfterChunks !== undefined) {
    // Stalling after the last frame: the stream never ends either.
    await waitUnlessGone(2 ** 31 - 1, response, closing);
    return;
  }
  if (cut !== undefined) {
    // A cut stream never ends cleanly, even when the cut falls after the last frame.
    request.socket.destroy();
    return;
  }
  response.end();
}

export async function startWireServer(handler: WireHandler): Promise<WireServer> {
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const closing = new AbortController();

  const server = createServer((request, response) => {
    void (async () => {
      try {
        const rawBody = await readBody(request);
        const recorded: RecordedRequest = {
          method: request.method ?? 'GET',
          path: request.url ?? '/',
          headers: flatHeaders(request),
          body: parseBody(rawBody, request.headers['content-type']),
          rawBody,
        };
        const index = requests.length;
        requests.push(recorded);
        const reply = await handler(recorded, index);
        await answer(reply, request, response, closing.signal);
      } catch (error) {
        // A handler bug must be visible to the test, not hang it: answer 500 with the message.
        if (!response.headersSent && !response.destroyed) {
          response.writeHead(500, { 'content-type': 'application/json' });
          response.end(
            JSON.stringify({
              error: { type: 'wire_handler_error', message: String((error as Error)?.message) },
            }),
          );
        } else {
          request.socket.destroy();
        }
      }
    })();
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        closing.abort();
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
