import { ConfigError, defineAgent, run } from 'troupe';
import { mcpServer } from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { TestHttpServer } from './http-server.ts';

describe("an MCP server's tools filter", () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  async function started(): Promise<TestHttpServer> {
    const testServer = new TestHttpServer('stateless');
    await testServer.start();
    cleanups.push(() => testServer.stop());
    return testServer;
  }

  it('fails the run naming a filtered tool the server does not list, and the tools it does list', async () => {
    const testServer = await started();
    const server = mcpServer({ url: testServer.url, name: 'test', tools: ['echo', 'missing'] });
    cleanups.push(() => server.close());
    const model = scriptedModel([{ text: 'done' }]);
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [server] });
    const result = await run(agent, 'go');
    expect(result.stopReason).toBe('error');
    expect(result.error?.message).toMatch(
      /mcpServer\("test"\): tools names "missing", which the server does not list; it lists .*"echo"/,
    );
    expect(model.calls).toBe(0);
    await expect(server.connect()).rejects.toBeInstanceOf(ConfigError);
  });

  it('keeps only the named tools when the server lists them all', async () => {
    const testServer = await started();
    const server = mcpServer({ url: testServer.url, tools: ['echo'] });
    cleanups.push(() => server.close());
    await server.connect();
    expect(server.current().map((tool) => tool.name)).toEqual(['echo']);
  });
});
