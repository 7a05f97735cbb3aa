import { defineAgent, run } from 'troupe';
import { mcpServer } from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { TestHttpServer } from './http-server.ts';

const runs = 25;

describe('closing a connection to a 2025-era Streamable HTTP server', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it(`ends the server's session (DELETE with Mcp-Session-Id): ${runs} runs with scope 'session' leave none open`, async () => {
    const testServer = new TestHttpServer('stateful');
    await testServer.start();
    cleanups.push(() => testServer.stop());
    const server = mcpServer({ url: testServer.url, scope: 'session' });
    cleanups.push(() => server.close());
    const model = scriptedModel((request) =>
      request.messages.at(-1)?.role === 'tool'
        ? { text: 'done' }
        : { toolCalls: [{ id: 'c', name: 'echo', args: { text: 'x' } }] },
    );
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [server] });
    for (let i = 0; i < runs; i++) {
      const result = await run(agent, 'go');
      expect(result.stopReason).toBe('completed');
    }
    expect(testServer.sessionsCreated).toBe(runs);
    expect(testServer.sessionsDeleted).toBe(runs);
    expect(testServer.openSessions).toBe(0);
  });

  it('close() of a shared connection ends its session too', async () => {
    const testServer = new TestHttpServer('stateful');
    await testServer.start();
    cleanups.push(() => testServer.stop());
    const server = mcpServer({ url: testServer.url });
    await server.connect();
    expect(testServer.openSessions).toBe(1);
    await server.close();
    expect(testServer.sessionsDeleted).toBe(1);
    expect(testServer.openSessions).toBe(0);
  });
});
