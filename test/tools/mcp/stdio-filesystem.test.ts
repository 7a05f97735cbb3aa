import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineAgent, run } from 'troupe';
import { mcpServer } from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { liveChildren, serverScript } from './support.ts';

const filesystem = serverScript('@modelcontextprotocol/server-filesystem');

describe('an MCP server over stdio (server-filesystem on a temporary root)', () => {
  const root = mkdtempSync(join(tmpdir(), 'troupe-mcp-fs-'));
  writeFileSync(join(root, 'notes.txt'), 'first line\n');
  const server = mcpServer({
    name: 'fs',
    command: process.execPath,
    args: [filesystem, root],
    prefix: 'fs_',
  });
  afterAll(async () => {
    await server.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('reads and writes files inside the root; a path outside it is an error the model reads', async () => {
    const model = scriptedModel([
      {
        toolCalls: [
          { id: 'r', name: 'fs_read_text_file', args: { path: join(root, 'notes.txt') } },
          {
            id: 'w',
            name: 'fs_write_file',
            args: { path: join(root, 'out.txt'), content: 'written by an agent' },
          },
          { id: 'x', name: 'fs_read_text_file', args: { path: '/etc/hostname' } },
        ],
      },
      { text: 'done' },
    ]);
    const agent = defineAgent({
      name: 'filer',
      instructions: '',
      model,
      tools: [server],
      limits: { maxToolRetries: 0 },
    });
    const result = await run(agent, 'go');
    expect(result.stopReason).toBe('completed');
    const names = model.requests[0]?.tools.map((tool) => tool.name) ?? [];
    expect(names).toEqual(
      expect.arrayContaining(['fs_read_text_file', 'fs_write_file', 'fs_list_directory']),
    );
    const byId = new Map(
      result.history.flatMap((message) => (message.role === 'tool' ? [[message.toolCallId, message]] : [])),
    );
    expect(byId.get('r')).toMatchObject({ content: 'first line\n', isError: false });
    expect(byId.get('w')?.isError).toBe(false);
    expect(readFileSync(join(root, 'out.txt'), 'utf8')).toBe('written by an agent');
    expect(byId.get('x')?.isError).toBe(true);
    expect(byId.get('x')?.content).toMatch(/denied|outside|not allowed/i);
    expect(server.protocolVersion()).toBe('2025-11-25');
  });

  it('stops its process on close', async () => {
    await server.close();
    expect(liveChildren()).toEqual([]);
  });
});
