import { fileURLToPath } from 'node:url';
import { createAgentSystem, defineAgent } from 'troupe';
import { mcpServer } from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { sessionsHoldingResources } from '../../../src/core/session-resources.ts';
import { liveChildren, openPipes, openSockets } from './support.ts';

const bareServer = fileURLToPath(new URL('./fixtures/bare-server.ts', import.meta.url));

const sessionCount = 1_000;
const concurrency = 8;

describe('a thousand sessions with an MCP server process each', () => {
  it('each session gets its own server with its own env, and closing them leaves no process, socket or pipe', async () => {
    const children = liveChildren().length;
    const sockets = openSockets();
    const pipes = openPipes();
    const server = mcpServer({
      command: process.execPath,
      args: [bareServer],
      env: ({ sessionId }) => ({ SESSION_TAG: sessionId }),
      scope: 'session',
    });
    const model = scriptedModel((request) =>
      request.messages.at(-1)?.role === 'tool'
        ? { text: 'done' }
        : { toolCalls: [{ id: 'c', name: 'echo', args: { text: 'x' } }] },
    );
    const agent = defineAgent({ name: 'echoer', instructions: '', model, tools: [server] });
    const system = createAgentSystem();
    let next = 0;
    let right = 0;
    const wrong: string[] = [];
    let mostOpen = 0;
    const worker = async () => {
      while (next < sessionCount) {
        const id = `s${next++}`;
        const session = system.spawn(agent, 'go', { sessionId: id });
        const result = await session.result;
        mostOpen = Math.max(mostOpen, server.openConnections);
        const answer = result.history.find((message) => message.role === 'tool')?.content;
        if (answer === `${id}:x`) right++;
        else wrong.push(`${id}: ${String(answer)} (${result.stopReason}: ${result.error?.message ?? ''})`);
        await session.stop();
      }
    };
    try {
      await Promise.all(Array.from({ length: concurrency }, worker));
    } finally {
      await system.shutdown();
    }
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(right).toBe(sessionCount);
    // Sessions really ran side by side, each with its own connection.
    expect(mostOpen).toBeGreaterThan(1);
    expect(server.openConnections).toBe(0);
    expect(sessionsHoldingResources()).toBe(0);
    expect(liveChildren().length).toBe(children);
    expect(openSockets()).toBe(sockets);
    expect(openPipes()).toBe(pipes);
  }, 600_000);
});
