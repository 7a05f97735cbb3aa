import { defineAgent, run } from 'troupe';
import { McpCommandNotFoundError, mcpServer } from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';

describe('a stdio MCP server whose command does not exist', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it('fails at the first attempt with McpCommandNotFoundError naming the command', async () => {
    // Many attempts with long waits: a retried spawn would not settle within the test's time limit.
    const server = mcpServer({
      command: 'troupe-test-no-such-command',
      reconnect: { attempts: 5, initialDelayMs: 60_000, maxDelayMs: 60_000 },
    });
    cleanups.push(() => server.close());
    const failure = await server.connect().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(McpCommandNotFoundError);
    expect((failure as McpCommandNotFoundError).command).toBe('troupe-test-no-such-command');
    expect((failure as Error).message).toMatch(/command "troupe-test-no-such-command" could not be started/);
  });

  it("fails a run that has the server's tools with the typed error", async () => {
    const server = mcpServer({
      command: 'troupe-test-no-such-command',
      reconnect: { attempts: 5, initialDelayMs: 60_000, maxDelayMs: 60_000 },
    });
    cleanups.push(() => server.close());
    const model = scriptedModel([{ text: 'done' }]);
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [server] });
    const result = await run(agent, 'go');
    expect(result.stopReason).toBe('error');
    expect(result.error?.name).toBe('McpCommandNotFoundError');
    expect(model.calls).toBe(0);
  });
});
