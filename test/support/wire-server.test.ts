import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { sequence, sseFromText, startWireServer, type WireServer } from './wire-server.ts';

let server: WireServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Raw HTTP call, resolving with status, headers and the body text, or with the socket error. */
function call(
  url: string,
  path: string,
  body?: string,
  signal?: AbortSignal,
): Promise<{ status: number; headers: Record<string, unknown>; text: string } | { error: string }> {
  return new Promise((resolve) => {
    const req = httpRequest(
      `${url}${path}`,
      {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'content-type': 'application/json' },
        signal,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
        res.on('error', (error) => resolve({ error: `${error.message} after ${JSON.stringify(text)}` }));
        res.on('aborted', () => resolve({ error: `aborted after ${JSON.stringify(text)}` }));
      },
    );
    req.on('error', (error) => resolve({ error: error.message }));
    req.end(body);
  });
}

describe('wire server', () => {
  it('records requests (method, path with query, lower-case headers, parsed body) and serves a JSON reply', async () => {
    server = await startWireServer(
      sequence({ status: 201, headers: { 'x-extra': 'yes' }, body: { ok: true } }),
    );
    const result = await call(server.url, '/v1/things?alt=sse', JSON.stringify({ a: 1 }));
    expect(result).toMatchObject({ status: 201, text: '{"ok":true}' });
    expect('headers' in result && result.headers['x-extra']).toBe('yes');
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({
      method: 'POST',
      path: '/v1/things?alt=sse',
      body: { a: 1 },
      rawBody: '{"a":1}',
    });
    expect(server.requests[0]?.headers['content-type']).toBe('application/json');
  });

  it('writes SSE frames each followed by a blank line', async () => {
    server = await startWireServer(sequence({ sse: ['event: a\ndata: 1', 'data: 2'] }));
    const result = await call(server.url, '/s', '{}');
    expect(result).toMatchObject({ status: 200, text: 'event: a\ndata: 1\n\ndata: 2\n\n' });
    expect('headers' in result && result.headers['content-type']).toBe('text/event-stream');
  });

  it('serves raw text exactly', async () => {
    server = await startWireServer(sequence({ status: 200, raw: '{not json' }));
    expect(await call(server.url, '/r', '{}')).toMatchObject({ status: 200, text: '{not json' });
  });

  it('answers a request past the end of a sequence with a 500 naming the overrun', async () => {
    server = await startWireServer(sequence({ body: {} }));
    await call(server.url, '/one', '{}');
    const result = await call(server.url, '/two', '{}');
    expect(result).toMatchObject({ status: 500 });
    expect('text' in result && result.text).toContain('past the end of the sequence of 1 replies');
  });

  it('truncates a stream after N frames by destroying the socket', async () => {
    server = await startWireServer(
      sequence({ sse: ['data: 1', 'data: 2', 'data: 3'], truncateAfterChunks: 1 }),
    );
    const result = await call(server.url, '/t', '{}');
    expect(result).toHaveProperty('error');
    expect('error' in result && result.error).toContain('data: 1');
    expect('error' in result && result.error).not.toContain('data: 2');
  });

  it('resets the connection without answering', async () => {
    server = await startWireServer(sequence({ resetBeforeResponse: true }));
    const result = await call(server.url, '/x', '{}');
    expect(result).toHaveProperty('error');
    expect(server.requests).toHaveLength(1);
  });

  it('a stalled reply ends when the client goes away, and close() ends stalled sockets', async () => {
    server = await startWireServer(sequence({ stallMs: 60_000, body: {} }, { stallMs: 60_000, body: {} }));
    const controller = new AbortController();
    const first = call(server.url, '/stall', '{}', controller.signal);
    while (server.requests.length < 1) await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    expect(await first).toHaveProperty('error');
    const second = call(server.url, '/stall', '{}');
    while (server.requests.length < 2) await new Promise((resolve) => setImmediate(resolve));
    await server.close();
    expect(await second).toHaveProperty('error');
  });

  it('stalls a stream after N frames until the client goes away', async () => {
    server = await startWireServer(sequence({ sse: ['data: 1', 'data: 2'], stallAfterChunks: 1 }));
    const controller = new AbortController();
    let received = '';
    const done = new Promise<string>((resolve) => {
      const req = httpRequest(`${server!.url}/s`, { method: 'POST', signal: controller.signal }, (res) => {
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          received += chunk;
          controller.abort();
        });
        res.on('error', () => resolve(received));
        res.on('close', () => resolve(received));
      });
      req.on('error', () => resolve(received));
      req.end('{}');
    });
    expect(await done).toBe('data: 1\n\n');
  });

  it('passes the request and its index to a custom handler', async () => {
    server = await startWireServer((request, index) => ({ body: { index, path: request.path } }));
    await call(server.url, '/a', '{}');
    const result = await call(server.url, '/b', '{}');
    expect(result).toMatchObject({ text: '{"index":1,"path":"/b"}' });
  });
});

describe('sseFromText', () => {
  it('splits a recorded stream into frames, tolerating CRLF and extra blank lines', () => {
    expect(sseFromText('event: a\r\ndata: 1\r\n\r\ndata: 2\n\n\n\ndata: 3\n')).toEqual([
      'event: a\ndata: 1',
      'data: 2',
      'data: 3',
    ]);
  });
});
