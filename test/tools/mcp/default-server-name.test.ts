import { mcpServer } from 'troupe/mcp';
import { describe, expect, it } from 'vitest';
import { defaultStdioServerName } from '../../../src/tools/mcp/default-server-name.ts';

describe("a stdio MCP server's default name", () => {
  it.each([
    ['npx', ['-y', '@modelcontextprotocol/server-filesystem', '/tmp'], 'server-filesystem'],
    ['npx', ['-y', '@modelcontextprotocol/server-everything@2025.1.0'], 'server-everything'],
    ['npx', ['mcp-remote', 'https://example.com/mcp'], 'mcp-remote'],
    ['/usr/local/bin/npx.cmd', ['@scope/tool'], 'tool'],
    ['uvx', ['mcp-server-fetch'], 'mcp-server-fetch'],
    ['uvx', ['mcp-server-git==1.0', '--repository', '/repo'], 'mcp-server-git'],
    ['pnpm', ['dlx', '@acme/mcp-notes', '/tmp'], 'mcp-notes'],
    ['npm', ['exec', '--yes', 'github-mcp'], 'github-mcp'],
    ['node', ['/opt/servers/weather/dist/index.js', '/tmp/data'], 'weather'],
    ['node', ['./server.mjs', '--root', '/srv'], 'server'],
    ['python3', ['-m', 'acme.mcp_tickets'], 'mcp_tickets'],
    ['python', ['notes_server.py', '/home/me'], 'notes_server'],
    ['/opt/bin/my-mcp-server', ['/tmp'], 'my-mcp-server'],
    ['docker', ['run', '-i', '--rm', 'mcp/time'], 'docker'],
  ] as const)('%s %j is %s', (command, args, name) => {
    expect(defaultStdioServerName(command, args)).toBe(name);
  });

  it('is what mcpServer names a server given no name', () => {
    const server = mcpServer({
      command: 'npx',
      args: ['-y', '@modelcontextprotocol/server-filesystem', '/tmp'],
    });
    expect(server.name).toBe('server-filesystem');
  });
});
