import { ConfigError, defineAgent, run } from 'troupe';
import { type McpServer, mcpServer } from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { AskingServer } from './asking-server.ts';

const forms = [
  { form: 'stateless', protocol: '2026-07-28' },
  { form: 'stateful', protocol: '2025-11-25' },
] as const;

/** An agent that calls the server's `where` tool once, then answers. */
function whereAgent(server: McpServer) {
  const model = scriptedModel([{ toolCalls: [{ id: 'c1', name: 'where', args: {} }] }, { text: 'done' }]);
  return defineAgent({ name: 'a', instructions: '', model, tools: [server] });
}

describe.each(forms)('roots for an MCP server, $form form ($protocol)', ({ form }) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  async function started(): Promise<AskingServer> {
    const server = new AskingServer(form);
    await server.start();
    cleanups.push(() => server.stop());
    return server;
  }

  it("answers roots/list from the calling run's context", async () => {
    const asking = await started();
    const server = mcpServer({
      url: asking.url,
      roots: ({ context }) => [{ uri: `file://${(context as { dir: string }).dir}`, name: 'home' }],
    });
    cleanups.push(() => server.close());
    await run(whereAgent(server), 'go', { context: { dir: '/srv/users/ann' } });
    await run(whereAgent(server), 'go', { context: { dir: '/srv/users/bob' } });
    expect(asking.log.answers).toEqual([
      'roots:[{"uri":"file:///srv/users/ann","name":"home"}]',
      'roots:[{"uri":"file:///srv/users/bob","name":"home"}]',
    ]);
  });

  it('answers fixed roots', async () => {
    const asking = await started();
    const server = mcpServer({ url: asking.url, roots: [{ uri: 'file:///data' }] });
    cleanups.push(() => server.close());
    const result = await run(whereAgent(server), 'go');
    expect(result.stopReason).toBe('completed');
    expect(asking.log.answers).toEqual(['roots:[{"uri":"file:///data"}]']);
  });

  it('refuses roots that are not file URIs, and the server (or, on 2026-07-28, the model) reads why', async () => {
    const asking = await started();
    const server = mcpServer({ url: asking.url, roots: () => [{ uri: 'https://example.com/' }] });
    cleanups.push(() => server.close());
    const result = await run(whereAgent(server), 'go');
    const tool = result.history.find((message) => message.role === 'tool');
    expect(tool).toMatchObject({ isError: true });
    expect(String(tool?.content)).toMatch(/must be a file:\/\/ URI/);
    if (form === 'stateful') expect(asking.log.answers[0]).toMatch(/^roots-error:.*file:\/\//);
  });
});

describe('roots, declared', () => {
  it('refuses bad roots with a ConfigError', () => {
    const url = 'http://127.0.0.1:1/mcp';
    expect(() => mcpServer({ url, roots: 'file:///x' as never })).toThrow(ConfigError);
    expect(() => mcpServer({ url, roots: [{ uri: 'https://example.com/' }] })).toThrow(/file:\/\//);
    expect(() => mcpServer({ url, roots: [{ uri: 'file:///x', name: 3 as never }] })).toThrow(/name/);
  });
});
