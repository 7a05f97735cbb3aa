import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createAgentSystem, defineAgent, tool } from 'troupe';
import { type McpIdentity, serveMcp } from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

const tokens = new Map<string, McpIdentity>([
  ['token-ada', { subject: 'ada', scopes: ['agents'] }],
  ['token-bob', { subject: 'bob', scopes: ['agents'] }],
  ['token-eve', { subject: 'eve', scopes: [] }],
]);

/** An agent that asks its `whoami` tool who called, then says it: the tool reads the run context. */
function whoamiAgent() {
  const whoami = tool({
    name: 'whoami',
    description: 'Who called',
    input: z.object({}),
    execute: (_args, ctx) => `caller=${(ctx.context as McpIdentity | undefined)?.subject ?? 'nobody'}`,
  });
  return defineAgent({
    name: 'whoami_agent',
    instructions: '',
    tools: [whoami],
    model: scriptedModel(
      (request) => {
        const last = request.messages.at(-1);
        return last?.role === 'tool'
          ? { text: `I was called by ${String(last.content).replace('caller=', '')}` }
          : { toolCalls: [{ id: 'c1', name: 'whoami', args: {} }] };
      },
      { loop: true },
    ),
  });
}

async function clientFor(url: string, mode: 'auto' | 'legacy', token?: string): Promise<Client> {
  const client = new Client({ name: 'test-client', version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      ...(token ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : {}),
    }),
  );
  return client;
}

function textOf(result: { content?: unknown }): string {
  return ((result.content as { text?: string }[] | undefined) ?? []).map((part) => part.text ?? '').join('');
}

describe('serveMcp: auth, progress, logging and last results', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('with auth, a request without an accepted bearer token gets 401 and runs nothing', async () => {
    const agent = whoamiAgent();
    const serving = await serveMcp(agent, {
      transport: { type: 'http', auth: { verify: (token) => tokens.get(token) } },
    });
    cleanups.push(() => serving.close());
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'whoami_agent', arguments: { input: 'who?' } },
    });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const anonymous = await fetch(serving.url as string, { method: 'POST', headers, body });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const forged = await fetch(serving.url as string, {
      method: 'POST',
      headers: { ...headers, authorization: 'Bearer token-mallory' },
      body,
    });
    expect(forged.status).toBe(401);
    expect((agent.model as unknown as { calls: number }).calls).toBe(0);
  });

  it.each(['auto', 'legacy'] as const)(
    "the verified caller's identity is the run context its tools get (%s negotiation)",
    async (mode) => {
      const serving = await serveMcp(whoamiAgent(), {
        transport: { type: 'http', auth: { verify: (token) => tokens.get(token) } },
      });
      cleanups.push(() => serving.close());
      const client = await clientFor(serving.url as string, mode, 'token-ada');
      cleanups.push(() => client.close());
      const answer = await client.callTool({ name: 'whoami_agent', arguments: { input: 'who?' } });
      expect(textOf(answer)).toBe('I was called by ada');
    },
  );

  it('required scopes: a token without them gets 403 insufficient_scope', async () => {
    const serving = await serveMcp(whoamiAgent(), {
      transport: {
        type: 'http',
        auth: { verify: (token) => tokens.get(token), requiredScopes: ['agents'] },
      },
    });
    cleanups.push(() => serving.close());
    const answer = await fetch(serving.url as string, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: 'Bearer token-eve',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(answer.status).toBe(403);
    expect(answer.headers.get('www-authenticate')).toMatch(/insufficient_scope/);
  });

  it('the context option builds the run context from the call, served from a system too', async () => {
    const system = createAgentSystem();
    cleanups.push(() => system.shutdown());
    const serving = await serveMcp(system, {
      agents: [whoamiAgent()],
      transport: { type: 'http', auth: { verify: (token) => tokens.get(token) } },
      context: ({ identity, agent }) => ({ subject: `${identity?.subject ?? '?'} via ${agent}` }),
    });
    cleanups.push(() => serving.close());
    const client = await clientFor(serving.url as string, 'auto', 'token-bob');
    cleanups.push(() => client.close());
    const answer = await client.callTool({ name: 'whoami_agent', arguments: { input: 'who?' } });
    expect(textOf(answer)).toBe('I was called by bob via whoami_agent');
  });

  it.each(['auto', 'legacy'] as const)(
    'a client that asks for progress gets a notification per step of the run (%s negotiation)',
    async (mode) => {
      const serving = await serveMcp(whoamiAgent(), { transport: { type: 'http' } });
      cleanups.push(() => serving.close());
      const client = await clientFor(serving.url as string, mode);
      cleanups.push(() => client.close());
      const progress: { progress: number; message?: string | undefined }[] = [];
      const answer = await client.callTool(
        { name: 'whoami_agent', arguments: { input: 'who?' } },
        { onprogress: (update) => progress.push({ progress: update.progress, message: update.message }) },
      );
      expect(textOf(answer)).toBe('I was called by nobody');
      expect(progress.map((update) => update.message)).toEqual([
        'whoami_agent: step 1, the model asked for 1 tool call',
        'whoami_agent: calling whoami',
        'whoami_agent: whoami answered',
        'whoami_agent: step 2, the model answered',
        'whoami_agent completed (completed)',
      ]);
      expect(progress.map((update) => update.progress)).toEqual([1, 2, 3, 4, 5]);
    },
  );

  it('a served system reports progress from its session events', async () => {
    const system = createAgentSystem();
    cleanups.push(() => system.shutdown());
    const serving = await serveMcp(system, { agents: [whoamiAgent()], transport: { type: 'http' } });
    cleanups.push(() => serving.close());
    const client = await clientFor(serving.url as string, 'auto');
    cleanups.push(() => client.close());
    const messages: (string | undefined)[] = [];
    await client.callTool(
      { name: 'whoami_agent', arguments: { input: 'who?' } },
      { onprogress: (update) => messages.push(update.message) },
    );
    expect(messages).toContain('whoami_agent: calling whoami');
    expect(messages.at(-1)).toBe('whoami_agent completed (completed)');
  });

  it('the run is logged to a client that set a log level', async () => {
    const serving = await serveMcp(whoamiAgent(), { transport: { type: 'http' } });
    cleanups.push(() => serving.close());
    const client = await clientFor(serving.url as string, 'legacy');
    cleanups.push(() => client.close());
    const logged: { level: string; data: unknown; logger?: string | undefined }[] = [];
    client.setNotificationHandler('notifications/message', (notification) => {
      logged.push({
        level: notification.params.level,
        data: notification.params.data,
        logger: notification.params.logger,
      });
    });
    await client.setLoggingLevel('info');
    await client.callTool({ name: 'whoami_agent', arguments: { input: 'who?' } });
    expect(logged).toContainEqual({
      level: 'info',
      data: 'whoami_agent: calling whoami',
      logger: 'whoami_agent',
    });
  });

  it("each agent's last result is a resource, and each caller reads only its own", async () => {
    const serving = await serveMcp(whoamiAgent(), {
      transport: { type: 'http', auth: { verify: (token) => tokens.get(token) } },
      lastResults: 'transcript',
    });
    cleanups.push(() => serving.close());
    const ada = await clientFor(serving.url as string, 'auto', 'token-ada');
    cleanups.push(() => ada.close());
    const bob = await clientFor(serving.url as string, 'auto', 'token-bob');
    cleanups.push(() => bob.close());
    const { resources } = await ada.listResources();
    expect(resources).toEqual([
      expect.objectContaining({
        uri: 'troupe://agents/whoami_agent/last-result',
        mimeType: 'application/json',
      }),
    ]);
    await ada.callTool({ name: 'whoami_agent', arguments: { input: 'who?' } });
    const read = async (client: Client) => {
      const { contents } = await client.readResource({ uri: 'troupe://agents/whoami_agent/last-result' });
      return JSON.parse((contents[0] as { text: string }).text) as {
        agent: string;
        result: { status: string; text: string; transcript: { role: string }[] } | null;
      };
    };
    const adas = await read(ada);
    expect(adas.result).toMatchObject({ status: 'completed', text: 'I was called by ada' });
    expect(adas.result?.transcript.map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(await read(bob)).toEqual({ agent: 'whoami_agent', result: null });
  });

  it("lastResults: 'off' offers no resources", async () => {
    const serving = await serveMcp(whoamiAgent(), { transport: { type: 'http' }, lastResults: 'off' });
    cleanups.push(() => serving.close());
    const client = await clientFor(serving.url as string, 'legacy');
    cleanups.push(() => client.close());
    expect(client.getServerCapabilities()?.resources).toBeUndefined();
    expect(client.getServerCapabilities()?.logging).toEqual({});
  });
});
