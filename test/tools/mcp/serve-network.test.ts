import { request as httpRequest, type IncomingMessage } from 'node:http';
import { defineAgent } from 'troupe';
import { type McpServing, serveMcp } from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';

/** A 2025-era JSON-RPC call of the served agent: the stateless leg answers it without a handshake. */
const callAgent = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name: 'victim', arguments: { input: 'run' } },
});

interface RawAnswer {
  status: number;
  body: string;
}

/** A POST sent with node:http, which (unlike fetch) sends the Host header it is given. */
function rawPost(url: string, headers: Record<string, string>, body: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'content-length': String(Buffer.byteLength(body)),
          ...headers,
        },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          text += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

describe('serveMcp over HTTP refuses what a network can send it', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function served(transport: Record<string, unknown> = {}) {
    const model = scriptedModel([{ text: 'ran' }], { loop: true });
    const victim = defineAgent({ name: 'victim', instructions: '', model });
    const serving: McpServing = await serveMcp(victim, { transport: { type: 'http', ...transport } });
    cleanups.push(() => serving.close());
    return { serving, model, url: serving.url as string, port: new URL(serving.url as string).port };
  }

  it('a rebound DNS name (Host: evil.example.com, with a matching Origin) gets 403 and runs nothing', async () => {
    const { url, model, port } = await served();
    const rebound = await rawPost(
      url,
      { host: `evil.example.com:${port}`, origin: `http://evil.example.com:${port}` },
      callAgent,
    );
    expect(rebound.status).toBe(403);
    expect(rebound.body).toMatch(/Forbidden/);
    expect(model.calls).toBe(0);
    // The same request with the loopback name it was sent to runs the agent.
    const direct = await rawPost(url, { host: `127.0.0.1:${port}` }, callAgent);
    expect(direct.status).toBe(200);
    expect(direct.body).toContain('ran');
    expect(model.calls).toBe(1);
  });

  it('a page on another site (Origin: http://evil.example.com) gets 403 even with a loopback Host', async () => {
    const { url, model, port } = await served();
    const crossSite = await rawPost(
      url,
      { host: `localhost:${port}`, origin: 'http://evil.example.com' },
      callAgent,
    );
    expect(crossSite.status).toBe(403);
    expect(model.calls).toBe(0);
    const sameSite = await rawPost(
      url,
      { host: `localhost:${port}`, origin: `http://localhost:${port}` },
      callAgent,
    );
    expect(sameSite.status).toBe(200);
  });

  it('names served on a network are allowed by listing them', async () => {
    const { url, model, port } = await served({ allowedHosts: ['mcp.example.com'] });
    const named = await rawPost(
      url,
      { host: `mcp.example.com:${port}`, origin: `https://mcp.example.com` },
      callAgent,
    );
    expect(named.status).toBe(200);
    // The list replaces the loopback default.
    const loopback = await rawPost(url, { host: `127.0.0.1:${port}` }, callAgent);
    expect(loopback.status).toBe(403);
    expect(model.calls).toBe(1);
  });

  it('a body declared larger than the limit is refused with 413 before any of it is read', async () => {
    const { url, model } = await served({ maxBodyBytes: 1024 });
    const answer = await new Promise<number>((resolve, reject) => {
      const request = httpRequest(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(512 * 1024 * 1024) },
      });
      request.on('response', (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      request.on('error', reject);
      // Headers only: the server must answer without waiting for the body.
      request.flushHeaders();
    });
    expect(answer).toBe(413);
    expect(model.calls).toBe(0);
  });

  it('a streamed body past the limit is answered 413 while the client is still sending, and never buffered', async () => {
    const { url, model } = await served({ maxBodyBytes: 1024 * 1024 });
    const total = 512 * 1024 * 1024;
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let sent = 0;
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      let answered: IncomingMessage | undefined;
      // Chunked: no length declared, so only counting while reading can stop it.
      const request = httpRequest(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      });
      request.on('response', (incoming) => {
        answered = incoming;
        resolve(incoming);
      });
      request.on('error', (error) => {
        // The server closes the connection after its 413; only an error before the answer is a failure.
        if (answered === undefined) reject(error);
      });
      const pump = () => {
        while (answered === undefined && sent < total) {
          sent += chunk.length;
          if (!request.write(chunk)) {
            request.once('drain', pump);
            return;
          }
        }
        if (answered === undefined) request.end();
      };
      pump();
    });
    response.resume();
    expect(response.statusCode).toBe(413);
    // Answered long before the client could finish: at most the limit plus what sat in socket buffers.
    expect(sent).toBeLessThan(total / 8);
    expect(model.calls).toBe(0);
  });

  it('a body within the limit is served', async () => {
    const { url, model, port } = await served({ maxBodyBytes: 4096 });
    const answer = await rawPost(url, { host: `127.0.0.1:${port}` }, callAgent);
    expect(answer.status).toBe(200);
    expect(model.calls).toBe(1);
  });

  it('bad guard options are refused with a ConfigError', async () => {
    const victim = defineAgent({ name: 'victim', instructions: '', model: scriptedModel([{ text: 'x' }]) });
    await expect(
      serveMcp(victim, { transport: { type: 'http', allowedHosts: ['http://mcp.example.com'] } }),
    ).rejects.toThrow(/allowedHosts must be a list of hostnames/);
    await expect(serveMcp(victim, { transport: { type: 'http', maxBodyBytes: 0 } })).rejects.toThrow(
      /maxBodyBytes must be a positive integer/,
    );
    await expect(
      serveMcp(victim, {
        transport: { type: 'http', allowedHost: ['x'] } as unknown as { type: 'http' },
      }),
    ).rejects.toThrow(/did you mean "allowedHosts"/);
  });
});
