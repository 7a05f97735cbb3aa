import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAgentSystem, defineAgent, run } from 'troupe';
import { mcpServer } from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { sessionsHoldingResources } from '../../../src/core/session-resources.ts';
import { liveChildren, openPipes, openSockets } from './support.ts';

const echoServer = fileURLToPath(new URL('./fixtures/stdio-echo-server.ts', import.meta.url));

/** Sessions in this test (SDK-built servers); thousand-sessions.test.ts runs 1,000 with a bare server. */
const sessionCount = 12;
const concurrency = 4;

function echoAgent(server: ReturnType<typeof mcpServer>) {
  // Sessions run side by side: each answers from its own conversation (a tool call, then the answer).
  const model = scriptedModel((request) =>
    request.messages.at(-1)?.role === 'tool'
      ? { text: 'done' }
      : { toolCalls: [{ id: 'c', name: 'echo', args: { text: 'x' } }] },
  );
  return defineAgent({ name: 'echoer', instructions: '', model, tools: [server] });
}

describe('MCP servers per session', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it(`start a process per session with the session's env and close it with the session (${sessionCount} sessions), leaking nothing`, async () => {
    const sockets = openSockets();
    const pipes = openPipes();
    const server = mcpServer({
      command: process.execPath,
      args: [echoServer],
      env: ({ sessionId }) => ({ SESSION_TAG: sessionId }),
      scope: 'session',
    });
    const agent = echoAgent(server);
    const system = createAgentSystem();
    cleanups.push(() => system.shutdown());
    let next = 0;
    const answers: string[] = [];
    const worker = async () => {
      while (next < sessionCount) {
        const id = `s${next++}`;
        const session = system.spawn(agent, 'go', { sessionId: id });
        const result = await session.result;
        const tool = result.history.find((message) => message.role === 'tool');
        answers.push(
          `${id}=${tool?.content ?? `${result.stopReason} ${result.error?.message} ${result.text}`}`,
        );
        expect(server.protocolVersion({ sessionId: id })).toBe('2026-07-28');
        await session.stop();
        expect(server.protocolVersion({ sessionId: id })).toBeUndefined();
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    expect(answers.sort()).toEqual(
      Array.from({ length: sessionCount }, (_, index) => `s${index}=s${index}:x`).sort(),
    );
    expect(server.openConnections).toBe(0);
    expect(sessionsHoldingResources()).toBe(0);
    expect(liveChildren()).toEqual([]);
    await system.shutdown();
    expect(openSockets()).toBe(sockets);
    expect(openPipes()).toBe(pipes);
  }, 180_000);

  it("computes a session's server settings from the run context", async () => {
    const server = mcpServer({
      command: process.execPath,
      args: [echoServer],
      env: ({ context }) => ({ SESSION_TAG: (context as { user: string }).user }),
      scope: 'session',
    });
    const result = await run(echoAgent(server), 'go', { context: { user: 'ada' } });
    expect(result.history.find((message) => message.role === 'tool')?.content).toBe('ada:x');
    expect(liveChildren()).toEqual([]);
  });

  it('a plain run closes its per-run server before its result is given', async () => {
    const server = mcpServer({ command: process.execPath, args: [echoServer], scope: 'session' });
    const result = await run(echoAgent(server), 'go');
    expect(result.history.find((message) => message.role === 'tool')?.content).toBe(':x');
    expect(server.openConnections).toBe(0);
    expect(liveChildren()).toEqual([]);
  });

  it("a shared server stays open across sessions and closes at the system's shutdown", async () => {
    const server = mcpServer({ command: process.execPath, args: [echoServer] });
    const agent = echoAgent(server);
    const system = createAgentSystem();
    for (const id of ['a', 'b']) {
      const session = system.spawn(agent, 'go', { sessionId: id });
      await session.result;
      await session.stop();
    }
    expect(server.openConnections).toBe(1);
    expect(liveChildren()).toHaveLength(1);
    await system.shutdown();
    expect(server.openConnections).toBe(0);
    expect(liveChildren()).toEqual([]);
  });

  it('a server closed with `await using` stops its process', async () => {
    {
      await using server = mcpServer({ command: process.execPath, args: [echoServer] });
      await server.connect();
      expect(liveChildren()).toHaveLength(1);
    }
    expect(liveChildren()).toEqual([]);
  });
});

describe('cancelling a call to a stdio MCP server', () => {
  it.each(['2026-07-28', '2025-11-25'] as const)('reaches the server (%s)', async (protocol) => {
    const directory = mkdtempSync(join(tmpdir(), 'troupe-mcp-cancel-'));
    const log = join(directory, 'cancelled.txt');
    writeFileSync(log, '');
    const server = mcpServer({
      command: process.execPath,
      args: protocol === '2026-07-28' ? [echoServer] : [echoServer, '--legacy-only'],
      env: { CANCEL_LOG: log },
    });
    try {
      await server.connect();
      expect(server.protocolVersion()).toBe(protocol);
      const model = scriptedModel([
        { toolCalls: [{ id: 'c', name: 'slow', args: { id: 'job-1' } }] },
        { text: 'x' },
      ]);
      const agent = defineAgent({
        name: 'a',
        instructions: '',
        model,
        tools: [server],
        limits: { toolTimeoutMs: 300, maxToolRetries: 0 },
      });
      const result = await run(agent, 'go');
      expect(result.history.find((message) => message.role === 'tool')?.content).toMatch(/timed out/);
      await expect.poll(() => readFileSync(log, 'utf8'), { timeout: 5_000 }).toBe('job-1\n');
    } finally {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    }
  });
});

describe('a stdio MCP server killed mid-session', () => {
  it('is started again and the next call succeeds', async () => {
    const server = mcpServer({
      command: process.execPath,
      args: [echoServer],
      env: { SESSION_TAG: 'again' },
      reconnect: { attempts: 4, initialDelayMs: 20 },
    });
    try {
      const agent = echoAgent(server);
      const system = createAgentSystem();
      const session = system.spawn(agent, 'first', { sessionId: 'kill-me' });
      expect((await session.result).history.at(-2)?.content).toBe('again:x');
      const [first] = liveChildren();
      expect(first).toBeDefined();
      process.kill(first as number, 'SIGKILL');
      await expect.poll(() => liveChildren(), { timeout: 5_000 }).toEqual([]);
      const second = await session.send('second');
      expect(second.stopReason, JSON.stringify(second.history.at(-2))).toBe('completed');
      expect(second.history.at(-2)).toMatchObject({ role: 'tool', content: 'again:x', isError: false });
      expect(liveChildren()).toHaveLength(1);
      expect(liveChildren()[0]).not.toBe(first);
      await system.shutdown();
    } finally {
      await server.close();
    }
    expect(liveChildren()).toEqual([]);
  });
});
