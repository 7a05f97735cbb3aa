/**
 * Sessions per second with a per-session stdio MCP server (`scope: 'session'`): each session spawns the SDK-built
 * echo server of the tests with its own env, runs one turn that calls the server's tool once, and stops (which
 * stops the process). `concurrency` sessions run at once. After the last session and the system's shutdown the
 * script counts this process's live children (/proc) and open sockets and pipes against the count before: a leak
 * shows there. Baselines in the same run: the same sessions with a local tool (no process), and the floor for a
 * process per session: the bare SDK client spawning the same server, connecting, calling echo once and closing,
 * `concurrency` at once (no agent, no session).
 *
 *   npm run build && node bench/mcp/sessions.ts [sessions=1000] [concurrency=8]
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { z } from 'zod';
import { createAgentSystem, defineAgent, tool } from '../../dist/index.js';
import { scriptedModel } from '../../dist/testing/index.js';
import { mcpServer } from '../../dist/tools/mcp/index.js';

const sessions = Number(process.argv[2] ?? 1000);
const concurrency = Number(process.argv[3] ?? 8);
const echoScript = fileURLToPath(
  new URL('../../test/tools/mcp/fixtures/stdio-echo-server.ts', import.meta.url),
);

function liveChildren(): number {
  let count = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === process.pid && fields[0] !== 'Z') count++;
    } catch {}
  }
  return count;
}

function descriptors(kind: 'socket:' | 'pipe:'): number {
  let count = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`).startsWith(kind)) count++;
    } catch {}
  }
  return count;
}

const model = scriptedModel((request) =>
  request.messages.at(-1)?.role === 'tool'
    ? { text: 'done' }
    : { toolCalls: [{ id: 'c', name: 'echo', args: { text: 'x' } }] },
);

async function measure(tools: Parameters<typeof defineAgent>[0]['tools'], expect: (id: string) => string) {
  const agent = defineAgent({ name: 'echoer', instructions: '', model, tools });
  const system = createAgentSystem();
  let next = 0;
  let done = 0;
  let wrong = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < sessions) {
      const id = `s${next++}`;
      const session = system.spawn(agent, 'go', { sessionId: id });
      const result = await session.result;
      const answer = result.history.find((message) => message.role === 'tool')?.content;
      if (answer !== expect(id)) wrong++;
      await session.stop();
      done++;
      if (done % 100 === 0)
        process.stderr.write(
          `${done} sessions done, ${((performance.now() - started) / 1000).toFixed(0)} s\n`,
        );
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  await system.shutdown();
  return { perSecond: sessions / seconds, seconds, wrong };
}

type Verdict =
  | { kind: 'legacy' }
  | { kind: 'modern'; discover: NonNullable<ReturnType<Client['getDiscoverResult']>> };

async function bare() {
  let next = 0;
  let wrong = 0;
  // Troupe remembers the first probe's verdict for a declaration; the floor does the same.
  let verdict: Verdict | undefined;
  const started = performance.now();
  const worker = async () => {
    while (next < sessions) {
      const id = `s${next++}`;
      const client = new Client({ name: 'bench', version: '1' }, { versionNegotiation: { mode: 'auto' } });
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [echoScript],
        env: { SESSION_TAG: id },
        stderr: 'ignore',
      });
      await client.connect(transport, verdict ? { prior: verdict } : {});
      const discover = client.getDiscoverResult();
      verdict ??= discover ? { kind: 'modern', discover } : { kind: 'legacy' };
      const result = await client.callTool({ name: 'echo', arguments: { text: 'x' } });
      if ((result.content as { text?: string }[])[0]?.text !== `${id}:x`) wrong++;
      await client.close();
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  return { perSecond: sessions / seconds, seconds, wrong };
}

const before = { children: liveChildren(), sockets: descriptors('socket:'), pipes: descriptors('pipe:') };
const local = await measure(
  [
    tool({
      name: 'echo',
      description: 'Echoes',
      input: z.object({ text: z.string() }),
      execute: ({ text }) => `local:${text}`,
    }),
  ],
  () => 'local:x',
);
const server = mcpServer({
  command: process.execPath,
  args: [echoScript],
  env: ({ sessionId }) => ({ SESSION_TAG: sessionId }),
  scope: 'session',
  stderr: 'ignore',
});
const mcp = await measure([server], (id) => `${id}:x`);
const floor = await bare();
const after = { children: liveChildren(), sockets: descriptors('socket:'), pipes: descriptors('pipe:') };
console.log(`${sessions} sessions, ${concurrency} at once, Node ${process.version}`);
console.log('| tools | sessions/s | wall (s) | wrong answers |');
console.log('|---|---:|---:|---:|');
console.log(`| local tool | ${local.perSecond.toFixed(0)} | ${local.seconds.toFixed(2)} | ${local.wrong} |`);
console.log(
  `| per-session stdio MCP server | ${mcp.perSecond.toFixed(1)} | ${mcp.seconds.toFixed(1)} | ${mcp.wrong} |`,
);
console.log(
  `| bare SDK client: spawn, connect, call, close | ${floor.perSecond.toFixed(1)} | ${floor.seconds.toFixed(1)} | ${floor.wrong} |`,
);
console.log(
  `per-session MCP sessions take ${(mcp.seconds / floor.seconds).toFixed(2)}× the bare SDK floor's wall time`,
);
console.log(
  `leaks after shutdown: ${after.children - before.children} child processes, ${after.sockets - before.sockets} sockets, ${after.pipes - before.pipes} pipes; open connections ${server.openConnections}`,
);
