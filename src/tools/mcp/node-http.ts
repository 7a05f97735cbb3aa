import type { IncomingMessage, ServerResponse } from 'node:http';

/** A web-standard request handler, the shape the MCP SDK's HTTP servers have. */
export type FetchHandler = (request: Request) => Promise<Response>;

/**
 * Serves one Node request with a fetch-style handler: the body is read whole (MCP messages are small JSON), the
 * response streamed chunk by chunk (Server-Sent Events stay live), and a client that goes away aborts the request.
 */
export async function serveWithFetch(
  req: IncomingMessage,
  res: ServerResponse,
  handler: FetchHandler,
): Promise<void> {
  const controller = new AbortController();
  res.on('close', () => controller.abort());
  try {
    const chunks: Buffer[] = [];
    if (req.method !== 'GET' && req.method !== 'HEAD')
      for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (Array.isArray(value)) for (const each of value) headers.append(name, each);
      else if (value !== undefined) headers.set(name, value);
    }
    const request = new Request(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, {
      method: req.method ?? 'GET',
      headers,
      ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}),
      signal: controller.signal,
    });
    const response = await handler(request);
    res.writeHead(response.status, [...response.headers.entries()].flat());
    if (response.body === null) {
      res.end();
      return;
    }
    res.flushHeaders();
    const reader = response.body.getReader();
    controller.signal.addEventListener('abort', () => void reader.cancel().catch(() => undefined), {
      once: true,
    });
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
    res.end();
  } catch (error) {
    if (!res.headersSent) {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(error instanceof Error ? error.message : String(error));
    } else res.destroy();
  }
}
