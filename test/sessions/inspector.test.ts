import type { AddressInfo } from 'node:net';
import { createWebSocketInspector } from '@statelyai/inspect';
import { createAgentSystem, defineAgent, run, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { z } from 'zod';

/**
 * The real @statelyai/inspect WebSocket inspector, attached to a system, sends the actor tree of a
 * session to a local WebSocket server (what the Stately inspector would receive), and no secret reaches it.
 */

interface Frame {
  type: string;
  name?: string;
  sessionId: string;
  parentId?: string;
  rootId?: string;
  definition?: string;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function localServer(): Promise<{ url: string; frames: string[]; connected: Promise<void> }> {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const frames: string[] = [];
  const connected = new Promise<void>((resolve) => {
    server.on('connection', (socket) => {
      socket.on('message', (data) => frames.push(String(data)));
      resolve();
    });
  });
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as AddressInfo;
  return { url: `ws://127.0.0.1:${port}`, frames, connected };
}

async function settle(frames: string[]): Promise<void> {
  // The inspector converts events on a timer and sends them over a socket: wait until the frames stop coming. The
  // client may still be opening its socket when a fast run has already finished (it then sends what it deferred
  // once open), so first wait for the first frame.
  for (let i = 0; i < 200 && frames.length === 0; i++)
    await new Promise((resolve) => setTimeout(resolve, 20));
  let last = -1;
  for (let i = 0; i < 200 && frames.length !== last; i++) {
    last = frames.length;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('Stately inspector over WebSocket', () => {
  it('receives the actor tree of a session (session -> agent, session -> effects) and never a secret', async () => {
    const { url, frames, connected } = await localServer();
    const inspector = createWebSocketInspector({ url });
    cleanups.push(() => inspector.stop());
    await connected;

    const weather = tool({
      name: 'weather',
      description: 'Weather for a city',
      input: z.object({ city: z.string(), token: z.string() }),
      secret: ['token'],
      execute: ({ city }) => `sunny in ${city}`,
    });
    const model = scriptedModel([
      {
        toolCalls: [{ name: 'weather', args: { city: 'Paris', token: 'sk-live-TOPSECRET' } }],
        stopReason: 'tool_use',
      },
      { text: 'It is sunny' },
    ]);
    const agent = defineAgent({ name: 'forecaster', instructions: 'forecast', model, tools: [weather] });
    const system = createAgentSystem({ inspect: inspector.inspect });
    const session = system.spawn(agent, 'Weather in Paris?', { sessionId: 'inspected' });
    expect((await session.result).text).toBe('It is sunny');
    await system.shutdown();
    await settle(frames);

    const raw = frames.join('\n');
    expect(raw).toContain('Paris');
    expect(raw).not.toContain('sk-live-TOPSECRET');
    expect(raw).toContain('[redacted]');

    const parsed = frames.map((frame) => JSON.parse(frame) as Frame);
    const actors = parsed.filter((frame) => frame.type === '@xstate.actor');
    const root = actors.find((frame) => frame.name === 'inspected');
    expect(root).toBeDefined();
    expect(root?.parentId).toBeUndefined();
    const agentActor = actors.find((frame) => frame.name === 'forecaster-1');
    expect(agentActor?.parentId).toBe(root?.sessionId);
    expect(agentActor?.rootId).toBe(root?.sessionId);
    const children = actors
      .filter((frame) => frame.parentId === agentActor?.sessionId)
      .map((frame) => frame.name);
    // An agent is one actor: it handles the commands its machine emits itself.
    expect(children).toEqual([]);
    const sessionChildren = actors
      .filter((frame) => frame.parentId === root?.sessionId)
      .map((frame) => frame.name);
    expect(sessionChildren.sort()).toEqual(['effects', 'forecaster-1']);
    // Events and snapshots flowed too, e.g. the agent's model response.
    expect(parsed.some((frame) => frame.type === '@xstate.event')).toBe(true);
    expect(parsed.some((frame) => frame.type === '@xstate.snapshot')).toBe(true);
  });

  it('gets masked personal data and still the statechart definitions', async () => {
    const { url, frames, connected } = await localServer();
    const inspector = createWebSocketInspector({ url });
    cleanups.push(() => inspector.stop());
    await connected;
    const model = scriptedModel([{ text: 'Noted: bob@example.com, card 4111 1111 1111 1111' }]);
    const agent = defineAgent({ name: 'clerk', instructions: 'note', model });
    const system = createAgentSystem({ inspect: inspector.inspect, pii: {} });
    const session = system.spawn(agent, 'I am bob@example.com', { sessionId: 'masked' });
    expect((await session.result).text).toBe('Noted: bob@example.com, card 4111 1111 1111 1111');
    await system.shutdown();
    await settle(frames);

    const raw = frames.join('\n');
    expect(raw).toContain('<EMAIL_1>');
    expect(raw).not.toContain('bob@example.com');
    expect(raw).not.toContain('4111 1111 1111 1111');
    const parsed = frames.map((frame) => JSON.parse(frame) as Frame);
    const agentActor = parsed.find((frame) => frame.type === '@xstate.actor' && frame.name === 'clerk-1');
    expect(agentActor?.parentId).toBe(parsed.find((frame) => frame.name === 'masked')?.sessionId);
    // The agent's machine definition, for the statechart: its states, without functions.
    const definition = JSON.parse(agentActor?.definition ?? '{}') as { states?: Record<string, unknown> };
    expect(Object.keys(definition.states ?? {})).toEqual(expect.arrayContaining(['completed', 'failed']));
  });

  it('run(agent, input, { inspect }) of a plain agent redacts secrets too', async () => {
    const login = tool({
      name: 'login',
      description: 'Logs in',
      input: z.object({ user: z.string(), password: z.string(), pin: z.string() }),
      secret: ['pin'],
      execute: () => 'ok',
    });
    const model = scriptedModel([
      {
        toolCalls: [{ name: 'login', args: { user: 'ann', password: 'hunter2', pin: '9876' } }],
        stopReason: 'tool_use',
      },
      { text: 'in' },
    ]);
    const seen: string[] = [];
    const agent = defineAgent({ name: 'plain', instructions: '', model, tools: [login] });
    await run(agent, 'log in', {
      inspect: (event) =>
        seen.push(
          JSON.stringify({
            s: 'snapshot' in event ? event.snapshot : null,
            e: 'event' in event ? event.event : null,
          }),
        ),
    });
    const raw = seen.join('\n');
    expect(raw).toContain('ann');
    expect(raw).not.toContain('hunter2');
    expect(raw).not.toContain('9876');
  });
});
