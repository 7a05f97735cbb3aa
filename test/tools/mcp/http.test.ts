import { defineAgent, run } from 'troupe';
import { mcpServer } from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { TestHttpServer } from './http-server.ts';

const forms = [
  { form: 'stateless', protocol: '2026-07-28' },
  { form: 'stateful', protocol: '2025-11-25' },
] as const;

describe.each(forms)('a Streamable HTTP MCP server, $form form', ({ form, protocol }) => {
  let testServer: TestHttpServer;
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  async function started(): Promise<TestHttpServer> {
    testServer = new TestHttpServer(form);
    await testServer.start();
    cleanups.push(() => testServer.stop());
    return testServer;
  }

  it(`negotiates ${protocol} and calls tools; an isError result is a tool error the model sees`, async () => {
    await started();
    const server = mcpServer({ url: testServer.url });
    cleanups.push(() => server.close());
    const model = scriptedModel([
      {
        toolCalls: [
          { id: 'a', name: 'echo', args: { text: 'hi' } },
          { id: 'b', name: 'boom', args: {} },
        ],
      },
      { text: 'done' },
    ]);
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [server] });
    const result = await run(agent, 'go');
    expect(result.stopReason).toBe('completed');
    expect(server.protocolVersion()).toBe(protocol);
    const tools = result.history.filter((message) => message.role === 'tool');
    expect(tools[0]).toMatchObject({ content: 'echo: hi', isError: false });
    expect(tools[1]).toMatchObject({ content: 'Error: the boom tool failed on purpose', isError: true });
    expect(testServer.log.calls.filter((call) => call === 'echo:hi')).toHaveLength(1);
  });

  it('reconnects after the server restarts mid-session, and the next call succeeds', async () => {
    await started();
    const server = mcpServer({ url: testServer.url, reconnect: { attempts: 6, initialDelayMs: 50 } });
    cleanups.push(() => server.close());
    await server.connect();
    const echo = server.current().find((tool) => tool.name === 'echo');
    const context = {
      signal: new AbortController().signal,
      sessionId: 's',
      route: 'a',
      turn: 1,
      agent: 'a',
      callId: 'c',
      step: 1,
      attempt: 1,
      idempotencyKey: 'k',
      context: undefined,
    };
    expect(await echo?.execute({ text: 'one' }, context)).toBe('echo: one');
    await testServer.stop();
    await testServer.start();
    expect(await echo?.execute({ text: 'two' }, context)).toBe('echo: two');
    // The stateful form handed out a second session; the stateless one has none to hand out.
    expect(testServer.sessionsCreated).toBe(form === 'stateful' ? 2 : 0);
  });

  it('aborting a slow call cancels it on the server', async () => {
    await started();
    const server = mcpServer({ url: testServer.url });
    cleanups.push(() => server.close());
    const controller = new AbortController();
    const model = scriptedModel([
      { toolCalls: [{ id: 'c', name: 'slow', args: { id: 'x1' } }] },
      { text: 'no' },
    ]);
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [server] });
    const running = run(agent, 'go', { signal: controller.signal });
    await testServer.log.slowStarted;
    controller.abort();
    const result = await running;
    expect(result.stopReason).toBe('aborted');
    await expect.poll(() => testServer.log.cancelled, { timeout: 5_000 }).toEqual(['x1']);
  });

  it('lists the tools again when the server says they changed', async () => {
    await started();
    const server = mcpServer({ url: testServer.url });
    cleanups.push(() => server.close());
    const model = scriptedModel([{ toolCalls: [{ id: 'g', name: 'grow', args: {} }] }, { text: 'grew' }]);
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [server] });
    await run(agent, 'first');
    expect(server.current().map((tool) => tool.name)).not.toContain('extra');
    testServer.grow();
    await expect
      .poll(
        async () => {
          await server.connect();
          return server.current().map((tool) => tool.name);
        },
        { timeout: 5_000 },
      )
      .toContain('extra');
  });
});

describe('a stateful Streamable HTTP MCP server whose session expired', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });
  async function started(): Promise<TestHttpServer> {
    testServer = new TestHttpServer('stateful');
    await testServer.start();
    cleanups.push(() => testServer.stop());
    return testServer;
  }
  let testServer: TestHttpServer;

  it('opens a new session when the server answers 404 for an expired one', async () => {
    await started();
    const server = mcpServer({ url: testServer.url });
    cleanups.push(() => server.close());
    const model = scriptedModel(
      [{ toolCalls: [{ id: 'a', name: 'echo', args: { text: 'again' } }] }, { text: 'done' }],
      { loop: true },
    );
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [server] });
    expect((await run(agent, 'one')).stopReason).toBe('completed');
    await testServer.expireSessions();
    const result = await run(agent, 'two');
    expect(result.history.filter((message) => message.role === 'tool').at(-1)).toMatchObject({
      content: 'echo: again',
      isError: false,
    });
    expect(testServer.unknownSessions).toBeGreaterThanOrEqual(1);
    expect(testServer.sessionsCreated).toBe(2);
  });
});
