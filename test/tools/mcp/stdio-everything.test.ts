import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineAgent, run } from 'troupe';
import { McpConnectionError, mcpServer } from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { liveChildren, serverScript } from './support.ts';

const everything = serverScript('@modelcontextprotocol/server-everything');

describe('an MCP server over stdio (server-everything, 2025-11-25 initialize handshake)', () => {
  const server = mcpServer({ command: process.execPath, args: [everything, 'stdio'] });
  afterAll(() => server.close());

  it('lists the server tools at the start of a run and calls them with the model arguments', async () => {
    const model = scriptedModel([
      { toolCalls: [{ id: 'c1', name: 'echo', args: { message: 'hello mcp' } }] },
      { text: 'done' },
    ]);
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [server] });
    const result = await run(agent, 'say it');
    expect(result.stopReason).toBe('completed');
    expect(model.requests[0]?.tools.map((tool) => tool.name)).toContain('echo');
    expect(model.requests[0]?.tools.find((tool) => tool.name === 'echo')?.parameters).toMatchObject({
      type: 'object',
      properties: { message: { type: 'string' } },
    });
    const answer = result.history.find((message) => message.role === 'tool');
    expect(answer).toMatchObject({ content: 'Echo: hello mcp', isError: false });
    expect(server.protocolVersion()).toBe('2025-11-25');
    expect(server.name).toBe('server-everything');
  });

  it('gives the model images as a description, structured content as JSON, and server errors as tool errors', async () => {
    const model = scriptedModel([
      {
        toolCalls: [
          { id: 'i', name: 'get-tiny-image', args: {} },
          { id: 's', name: 'get-structured-content', args: { location: 'Chicago' } },
          { id: 'e', name: 'get-sum', args: { a: 'not a number' } },
        ],
      },
      { text: 'done' },
    ]);
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model,
      tools: [server],
      limits: { maxToolRetries: 0 },
    });
    const result = await run(agent, 'go');
    const byId = new Map(
      result.history.flatMap((message) => (message.role === 'tool' ? [[message.toolCallId, message]] : [])),
    );
    expect(byId.get('i')?.content).toMatch(/\[image image\/png, \d+ bytes: not shown/);
    expect(byId.get('i')?.isError).toBe(false);
    expect(byId.get('s')?.content).toMatch(/^\{/);
    expect(JSON.parse(byId.get('s')?.content ?? '')).toMatchObject({ temperature: expect.any(Number) });
    expect(byId.get('e')?.isError).toBe(true);
    expect(byId.get('e')?.content).toMatch(/^Error: /);
    // A server's error answer is not a failure of the tool: it stays offered to the model.
    expect(model.requests[1]?.tools.map((tool) => tool.name)).toContain('get-sum');
  });

  it('filters and prefixes tool names', async () => {
    const filtered = mcpServer({
      command: process.execPath,
      args: [everything, 'stdio'],
      tools: ['echo', 'get-sum'],
      prefix: 'ev_',
    });
    await using _closing = filtered;
    await filtered.connect();
    expect(filtered.current().map((tool) => tool.name)).toEqual(['ev_echo', 'ev_get-sum']);
  });

  it('fails with McpConnectionError when the server cannot be started', async () => {
    const broken = mcpServer({
      command: process.execPath,
      args: ['-e', 'process.exit(3)'],
      reconnect: { attempts: 2, initialDelayMs: 10 },
    });
    await expect(broken.connect()).rejects.toBeInstanceOf(McpConnectionError);
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: 'x' }]),
      tools: [broken],
    });
    const result = await run(agent, 'go');
    expect(result.status).toBe('failed');
    expect(result.error?.name).toBe('McpConnectionError');
    await broken.close();
  });

  it('stops a server that never answers the handshake, on every attempt', async () => {
    const silent = mcpServer({
      command: process.execPath,
      args: ['-e', 'setInterval(() => {}, 1000)'],
      connectTimeoutMs: 500,
      reconnect: { attempts: 2, initialDelayMs: 10 },
    });
    const before = liveChildren();
    await expect(silent.connect()).rejects.toBeInstanceOf(McpConnectionError);
    // The silent processes (the probe's and the connection's, per attempt) were all stopped.
    await expect.poll(() => liveChildren(), { timeout: 5_000 }).toEqual(before);
    expect(silent.openConnections).toBe(0);
    await silent.close();
  }, 30_000);

  it('leaves no child process once closed', async () => {
    await server.close();
    expect(liveChildren()).toEqual([]);
  });
});

describe('a JSON-RPC error answering a tool call', () => {
  it('is an error result the model reads, not retried, and the tool stays offered (2025-06-18 server)', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'troupe-mcp-rpc-'));
    const log = join(directory, 'calls.txt');
    writeFileSync(log, '');
    const server = mcpServer({
      command: process.execPath,
      args: [fileURLToPath(new URL('./fixtures/bare-server.ts', import.meta.url))],
      env: { BARE_TOOL: 'error', CALL_LOG: log },
    });
    try {
      const model = scriptedModel([
        { toolCalls: [{ id: 'c', name: 'lookup', args: { key: 'a' } }] },
        { text: 'the database is down' },
      ]);
      const agent = defineAgent({ name: 'a', instructions: '', model, tools: [server] });
      const result = await run(agent, 'go');
      expect(result.stopReason).toBe('completed');
      expect(server.protocolVersion()).toBe('2025-06-18');
      expect(result.history.find((message) => message.role === 'tool')).toMatchObject({
        isError: true,
        content: expect.stringMatching(
          /^Error: MCP server "bare-server" answered with an error: .*the database is down/,
        ),
      });
      expect(readFileSync(log, 'utf8')).toBe('call\n');
      expect(model.requests[1]?.tools.map((tool) => tool.name)).toEqual(['lookup']);
    } finally {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
