/**
 * What an MCP tool call costs through Troupe, against the same call with the bare SDK client: µs per call over
 * stdio (the SDK-built echo server of the tests, a child process) and over Streamable HTTP (the same tools from the
 * SDK's createMcpHandler on 127.0.0.1, in this process), each at the protocol the two sides negotiate (2026-07-28).
 * Subjects, interleaved in rounds (the order rotating), each making `calls` sequential echo calls per round:
 *   sdk       Client.callTool on a connected @modelcontextprotocol/client Client
 *   tool      the echo tool of mcpServer(...) called directly (execute): Troupe's wrapper around the SDK
 *   agent     one agent step per call: a scripted model asks for echo, the loop runs it over MCP (µs per step)
 *   local     the same agent step with a local tool() answering at once: the loop alone, for the difference
 * Figures: median µs per call over rounds, range, and the ratio to `sdk` measured in the same run.
 *
 *   npm run build && npx tsx bench/mcp/overhead.ts [calls=200] [rounds=7]
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { defineAgent, run, type Tool, tool } from '../../dist/index.js';
import { scriptedModel } from '../../dist/testing/index.js';
import { mcpServer } from '../../dist/tools/mcp/index.js';
import { serveWithFetch } from '../../src/tools/mcp/node-http.ts';

const calls = Number(process.argv[2] ?? 200);
const rounds = Number(process.argv[3] ?? 7);
const echoScript = fileURLToPath(
  new URL('../../test/tools/mcp/fixtures/stdio-echo-server.ts', import.meta.url),
);

const handler = createMcpHandler(() => {
  const server = new McpServer({ name: 'bench-echo', version: '1.0.0' });
  server.registerTool(
    'echo',
    { description: 'Echoes', inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({
      content: [{ type: 'text', text: `:${text}` }],
    }),
  );
  return server;
});
const http = createServer((req, res) => void serveWithFetch(req, res, handler.fetch));
await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;

type Subject = () => Promise<void>;
const context = {
  signal: new AbortController().signal,
  sessionId: 'bench',
  route: 'a',
  turn: 1,
  agent: 'a',
  callId: 'c',
  step: 1,
  attempt: 1,
  idempotencyKey: 'k',
  context: undefined,
};

function stepAgent(tools: Parameters<typeof defineAgent>[0]['tools']) {
  const model = scriptedModel((_request, index) =>
    index < calls
      ? { toolCalls: [{ id: `c${index}`, name: 'echo', args: { text: 'x' } }] }
      : { text: 'done' },
  );
  return defineAgent({
    name: 'a',
    instructions: '',
    model,
    tools,
    limits: { maxSteps: calls + 1, maxDuplicateToolCalls: calls + 1, maxToolCallsPerTool: null },
  });
}

async function subjectsFor(
  transport: 'stdio' | 'http',
): Promise<{ subjects: Map<string, Subject>; close: () => Promise<void> }> {
  const client = new Client({ name: 'bench', version: '1' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(
    transport === 'stdio'
      ? new StdioClientTransport({ command: process.execPath, args: [echoScript], stderr: 'ignore' })
      : new StreamableHTTPClientTransport(new URL(url)),
  );
  // As any client does (and Troupe does) before calling: the SDK keeps the list for output validation.
  await client.listTools();
  const server =
    transport === 'stdio'
      ? mcpServer({ command: process.execPath, args: [echoScript], stderr: 'ignore' })
      : mcpServer({ url });
  await server.connect();
  const echo = server.current().find((candidate: Tool) => candidate.name === 'echo') as Tool;
  const local = tool({
    name: 'echo',
    description: 'Echoes',
    input: z.object({ text: z.string() }),
    execute: ({ text }) => `:${text}`,
  });
  const subjects = new Map<string, Subject>([
    [
      'sdk',
      async () => {
        for (let i = 0; i < calls; i++) await client.callTool({ name: 'echo', arguments: { text: 'x' } });
      },
    ],
    [
      'tool',
      async () => {
        for (let i = 0; i < calls; i++) await echo.execute({ text: 'x' }, context);
      },
    ],
    [
      'agent',
      async () => {
        const result = await run(stepAgent([server]), 'go');
        if (result.toolCallCount !== calls)
          throw new Error(`agent ran ${result.toolCallCount} calls: ${result.stopReason}`);
      },
    ],
    [
      'local',
      async () => {
        await run(stepAgent([local]), 'go');
      },
    ],
  ]);
  return {
    subjects,
    close: async () => {
      await client.close();
      await server.close();
    },
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

console.log(
  `MCP tool call overhead: ${calls} sequential calls per subject and round, ${rounds} rounds, Node ${process.version}`,
);
for (const transport of ['stdio', 'http'] as const) {
  const { subjects, close } = await subjectsFor(transport);
  const names = [...subjects.keys()];
  const samples = new Map<string, number[]>(names.map((name) => [name, []]));
  for (const subject of subjects.values()) await subject(); // warm-up
  for (let round = 0; round < rounds; round++) {
    const order = names.map((_, index) => names[(index + round) % names.length] as string);
    for (const name of order) {
      const started = performance.now();
      await (subjects.get(name) as Subject)();
      samples.get(name)?.push(((performance.now() - started) * 1000) / calls);
    }
  }
  await close();
  const base = median(samples.get('sdk') ?? []);
  console.log(`\n${transport}:`);
  console.log('| subject | µs per call (median) | range | ratio to sdk |');
  console.log('|---|---:|---|---:|');
  for (const name of names) {
    const values = samples.get(name) ?? [];
    const m = median(values);
    console.log(
      `| ${name} | ${m.toFixed(0)} | ${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)} | ${(m / base).toFixed(2)} |`,
    );
  }
}
await handler.close();
http.closeAllConnections();
http.close();
