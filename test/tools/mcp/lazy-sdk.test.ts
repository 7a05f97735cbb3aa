import { fileURLToPath } from 'node:url';
import { defineAgent, run } from 'troupe';
import { mcpServer } from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it, vi } from 'vitest';

const loaded = vi.hoisted(() => new Set<string>());
vi.mock('@modelcontextprotocol/client', async (original) => {
  loaded.add('client');
  return original();
});
vi.mock('@modelcontextprotocol/client/stdio', async (original) => {
  loaded.add('stdio');
  return original();
});

const echoServer = fileURLToPath(new URL('./fixtures/stdio-echo-server.ts', import.meta.url));

describe('the MCP SDK is loaded only when an MCP server is first used', () => {
  it('importing troupe and troupe/mcp, running agents and declaring a server load none of it', async () => {
    const agent = defineAgent({ name: 'plain', instructions: '', model: scriptedModel([{ text: 'hi' }]) });
    expect((await run(agent, 'go')).text).toBe('hi');
    const server = mcpServer({ command: process.execPath, args: [echoServer] });
    expect(loaded.size).toBe(0);
    await server.connect();
    expect([...loaded].sort()).toEqual(['client', 'stdio']);
    await server.close();
  });
});
