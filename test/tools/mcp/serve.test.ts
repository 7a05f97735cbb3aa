import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { createAgentSystem, defineAgent, tool } from 'troupe';
import { serveMcp } from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

async function clientFor(url: string, mode: 'auto' | 'legacy'): Promise<Client> {
  const client = new Client({ name: 'test-client', version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

describe('serveMcp: Troupe agents as MCP tools', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it.each(['auto', 'legacy'] as const)(
    'an SDK client (%s negotiation) lists the agents and gets their answers',
    async (mode) => {
      const writer = defineAgent({
        name: 'writer',
        description: 'Writes a short line',
        instructions: '',
        model: scriptedModel([{ text: 'a short line' }], { loop: true }),
      });
      const extractor = defineAgent({
        name: 'extractor',
        instructions: '',
        model: scriptedModel([{ text: '{"city":"Oslo","days":3}' }], { loop: true }),
        output: z.object({ city: z.string(), days: z.number() }),
      });
      const serving = await serveMcp([writer, extractor], { transport: { type: 'http' } });
      cleanups.push(() => serving.close());
      const client = await clientFor(serving.url as string, mode);
      cleanups.push(() => client.close());
      expect(client.getNegotiatedProtocolVersion()).toBe(mode === 'auto' ? '2026-07-28' : '2025-11-25');
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(['extractor', 'writer']);
      expect(tools.find((tool) => tool.name === 'writer')).toMatchObject({
        description: 'Writes a short line',
        inputSchema: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] },
      });
      const written = await client.callTool({ name: 'writer', arguments: { input: 'write' } });
      expect(written).toMatchObject({ content: [{ type: 'text', text: 'a short line' }] });
      expect(written.isError).toBeFalsy();
      const extracted = await client.callTool({ name: 'extractor', arguments: { input: 'trip' } });
      expect(extracted.structuredContent).toEqual({ city: 'Oslo', days: 3 });
    },
  );

  it("a run stopped by the agent's limits answers with an isError result saying so", async () => {
    const looper = defineAgent({
      name: 'looper',
      instructions: '',
      model: scriptedModel((_request, index) => ({
        toolCalls: [{ id: `c${index}`, name: 'again', args: { n: index } }],
      })),
      tools: [
        tool({
          name: 'again',
          description: 'Once more',
          input: z.object({ n: z.number() }),
          execute: () => 'ok',
        }),
      ],
      limits: { maxSteps: 2 },
    });
    const serving = await serveMcp(looper, { transport: { type: 'http' } });
    cleanups.push(() => serving.close());
    const client = await clientFor(serving.url as string, 'auto');
    cleanups.push(() => client.close());
    const result = await client.callTool({ name: 'looper', arguments: { input: 'go' } });
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([
      { type: 'text', text: expect.stringMatching(/^The agent stopped \(max_steps\)/) },
    ]);
  });

  it("served from a system, calls draw on the system's budgets: the one past the budget is an error result", async () => {
    const agent = defineAgent({
      name: 'answerer',
      instructions: '',
      model: scriptedModel([{ text: 'fine', usage: { input: 300, output: 100 } }], { loop: true }),
    });
    const system = createAgentSystem({ resources: { budgets: { tenants: { default: { tokens: 500 } } } } });
    cleanups.push(() => system.shutdown());
    const serving = await serveMcp(system, { agents: [agent], transport: { type: 'http' } });
    cleanups.push(() => serving.close());
    const client = await clientFor(serving.url as string, 'auto');
    cleanups.push(() => client.close());
    const answers = [];
    for (let call = 0; call < 3; call++)
      answers.push(await client.callTool({ name: 'answerer', arguments: { input: 'hi' } }));
    expect(answers.slice(0, 2).map((answer) => answer.isError ?? false)).toEqual([false, false]);
    expect(answers[2]?.isError).toBe(true);
    expect(JSON.stringify(answers[2]?.content)).toMatch(/budget_exhausted/);
    expect(system.usage({ tenant: 'default' }).tenant?.remainingTokens).toBe(0);
  });

  it('a client cancelling the call aborts the run', async () => {
    let aborted = false;
    let started: () => void = () => undefined;
    const running = new Promise<void>((resolve) => (started = resolve));
    const slow = defineAgent({
      name: 'slow',
      instructions: '',
      model: scriptedModel(async (request) => {
        started();
        await new Promise<void>((resolve) =>
          request.signal?.addEventListener('abort', () => resolve(), { once: true }),
        );
        aborted = request.signal?.aborted ?? false;
        return { text: 'late' };
      }),
    });
    const serving = await serveMcp(slow, { transport: { type: 'http' } });
    cleanups.push(() => serving.close());
    const client = await clientFor(serving.url as string, 'auto');
    cleanups.push(() => client.close());
    const controller = new AbortController();
    const call = client.callTool({ name: 'slow', arguments: { input: 'go' } }, { signal: controller.signal });
    await running;
    controller.abort();
    await expect(call).rejects.toThrow();
    await expect.poll(() => aborted, { timeout: 5_000 }).toBe(true);
  });
});

describe('serveMcp over stdio', () => {
  it.each(['auto', 'legacy'] as const)(
    'an SDK client (%s negotiation) starts the served agent as a process and calls it',
    async (mode) => {
      const client = new Client({ name: 'test-client', version: '1.0.0' }, { versionNegotiation: { mode } });
      await client.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [
            '--import',
            'tsx',
            fileURLToPath(new URL('./fixtures/serve-agent-stdio.ts', import.meta.url)),
          ],
          stderr: 'pipe',
        }),
      );
      try {
        expect(client.getNegotiatedProtocolVersion()).toBe(mode === 'auto' ? '2026-07-28' : '2025-11-25');
        const answer = await client.callTool({ name: 'greeter', arguments: { input: 'Ada' } });
        expect(answer.content).toEqual([{ type: 'text', text: 'hello, "Ada"' }]);
      } finally {
        await client.close();
      }
    },
    60_000,
  );
});
