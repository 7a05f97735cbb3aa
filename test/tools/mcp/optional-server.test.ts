import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { defineAgent, type RunEvent, run, stream } from 'troupe';
import { McpCommandNotFoundError, mcpServer } from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';

const echoServer = fileURLToPath(new URL('./fixtures/stdio-echo-server.ts', import.meta.url));

/** A loopback port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function runWithEvents(
  agent: Parameters<typeof stream>[0],
): Promise<{ result: Awaited<ReturnType<typeof run>>; events: RunEvent[] }> {
  const events: RunEvent[] = [];
  const running = stream(agent, 'go');
  for await (const event of running) events.push(event);
  return { result: await running.result, events };
}

describe('an MCP server that cannot be reached', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  const slowRetries = { attempts: 5, initialDelayMs: 60_000, maxDelayMs: 60_000 };

  it('fails the run with its typed error by default (required: true)', async () => {
    const server = mcpServer({ command: 'troupe-test-no-such-command', reconnect: slowRetries });
    cleanups.push(() => server.close());
    const model = scriptedModel([{ text: 'done' }]);
    const result = await run(defineAgent({ name: 'a', instructions: '', model, tools: [server] }), 'go');
    expect(result.stopReason).toBe('error');
    expect(result.error?.name).toBe('McpCommandNotFoundError');
    expect(model.calls).toBe(0);
  });

  it('with required: false, a missing command leaves the run to go on without its tools, with an event', async () => {
    const server = mcpServer({
      name: 'missing',
      command: 'troupe-test-no-such-command',
      reconnect: slowRetries,
      required: false,
    });
    cleanups.push(() => server.close());
    const seen: string[][] = [];
    const model = scriptedModel((request) => {
      seen.push(request.tools.map((tool) => tool.name));
      return { text: 'done' };
    });
    const { result, events } = await runWithEvents(
      defineAgent({ name: 'a', instructions: '', model, tools: [server] }),
    );
    expect(result.stopReason).toBe('completed');
    expect(result.text).toBe('done');
    expect(seen).toEqual([[]]);
    const reports = events.filter((event) => event.type === 'mcp_server_unavailable');
    expect(reports).toHaveLength(1);
    expect(reports[0]?.data).toMatchObject({
      server: 'missing',
      error: { name: 'McpCommandNotFoundError' },
      retryInMs: expect.any(Number),
    });
    // connect() still says why, typed.
    await expect(server.connect()).rejects.toBeInstanceOf(McpCommandNotFoundError);
  });

  it('with required: false, an HTTP server that refuses connections is reported once per session, tried again later', async () => {
    const port = await closedPort();
    const server = mcpServer({
      name: 'down',
      url: `http://127.0.0.1:${port}/mcp`,
      reconnect: { attempts: 1, initialDelayMs: 0, maxDelayMs: 0 },
      required: false,
    });
    cleanups.push(() => server.close());
    let turn = 0;
    const model = scriptedModel(() =>
      turn++ === 0 ? { toolCalls: [{ id: 'c1', name: 'nothing_here', args: {} }] } : { text: 'done' },
    );
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [server] });
    const first = await runWithEvents(agent);
    expect(first.result.stopReason).toBe('completed');
    expect(model.calls).toBe(2);
    const reports = first.events.filter((event) => event.type === 'mcp_server_unavailable');
    // Two model calls in the run, one report: the second call is within the wait before the next try.
    expect(reports).toHaveLength(1);
    expect(reports[0]?.data.error.name).toBe('McpConnectionError');

    // After the wait, a model call tries the server again (and reports again when it is still down).
    const now = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(now + 31_000);
    turn = 1;
    const later = await runWithEvents(agent);
    expect(later.result.stopReason).toBe('completed');
    const again = later.events.filter((event) => event.type === 'mcp_server_unavailable');
    expect(again).toHaveLength(1);
    expect(again[0]?.data.error.name).toBe('McpConnectionError');
  });

  it('with required: false, a server that is reached offers its tools as usual', async () => {
    const server = mcpServer({ command: process.execPath, args: [echoServer], required: false });
    cleanups.push(() => server.close());
    let turn = 0;
    const model = scriptedModel(() =>
      turn++ === 0 ? { toolCalls: [{ id: 'c', name: 'echo', args: { text: 'x' } }] } : { text: 'done' },
    );
    const { result, events } = await runWithEvents(
      defineAgent({ name: 'a', instructions: '', model, tools: [server] }),
    );
    expect(result.stopReason).toBe('completed');
    expect(events.some((event) => event.type === 'mcp_server_unavailable')).toBe(false);
    expect(result.history.find((message) => message.role === 'tool')?.content).toBe(':x');
  });

  it('refuses a required that is not a boolean', () => {
    expect(() => mcpServer({ command: 'x', required: 'no' as unknown as boolean })).toThrow(
      /required must be a boolean/,
    );
  });
});
