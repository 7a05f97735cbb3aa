import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/agent/define-agent.ts';
import { sleep } from '../../src/core/abort.ts';
import { validateHistory } from '../../src/core/history.ts';
import { restateClient } from '../../src/restate/client.ts';
import { type ServedEndpoint, serveAgents } from '../../src/restate/serve.ts';
import { agentTool } from '../../src/sessions/agent-tool.ts';
import { tool } from '../../src/tools/tool.ts';
import { deskAgents, deskModel, effect, last, latestResults, memoryProbe } from './support/desk-agents.ts';
import { startCounts } from './support/effects-log.ts';
import {
  quietLogger,
  type RestateServer,
  restateUnavailable,
  startRestateServer,
} from './support/restate-server.ts';

const unavailable = restateUnavailable();
if (unavailable) console.warn(`Skipping the Restate tests: ${unavailable}.`);

const probe = memoryProbe();
const desk = deskAgents(probe);

/** Calls one tool with the tag, then answers with what it returned. */
function oneToolAgent(
  name: string,
  toolName: string,
  tools: Parameters<typeof defineAgent>[0]['tools'],
  limits = {},
) {
  return defineAgent({
    name,
    instructions: `You are ${name}.`,
    tools,
    limits,
    model: deskModel(name, probe, 0, (messages, tag) =>
      last(messages)?.role === 'tool'
        ? { text: `${name} ${tag}: ${latestResults(messages).join(' | ')}` }
        : { toolCalls: [{ id: `${name}${messages.length}`, name: toolName, args: { tag } }] },
    ),
  });
}

const nap = tool({
  name: 'nap',
  description: 'Sleeps for a long time.',
  input: z.object({ tag: z.string() }),
  execute: ({ tag }, ctx) =>
    effect(probe, { kind: 'tool', key: `${tag}|tool|${ctx.callId}`, tag }, async () => {
      await sleep(5_000, ctx.signal);
      return 'rested';
    }),
});
let unstableRuns = 0;
const unstable = tool({
  name: 'unstable',
  description: 'Fails the first time this process runs it.',
  input: z.object({ tag: z.string() }),
  fatal: true,
  execute: ({ tag }, ctx) =>
    effect(probe, { kind: 'tool', key: `${tag}|tool|${ctx.callId}`, tag }, async () => {
      unstableRuns += 1;
      if (unstableRuns === 1) throw new Error('the disk is not ready');
      return 'stable now';
    }),
});
const dump = tool({
  name: 'dump',
  description: 'Returns a lot of text.',
  input: z.object({ tag: z.string() }),
  execute: () => 'x'.repeat(40_000),
});
const sleeper = oneToolAgent('sleeper', 'nap', [nap], { timeoutMs: 400 });
const fragile = oneToolAgent('fragile', 'unstable', [unstable]);
const hoarder = oneToolAgent('hoarder', 'dump', [dump]);
const concierge = defineAgent({
  name: 'concierge',
  instructions: 'You are concierge.',
  tools: [agentTool(desk.triage, { name: 'desk', description: 'The help desk, with its own handoffs.' })],
  model: deskModel('concierge', probe, 0, (messages, tag) =>
    last(messages)?.role === 'tool'
      ? { text: `concierge ${tag}: ${latestResults(messages).join(' | ')}` }
      : { toolCalls: [{ id: `c${messages.length}`, name: 'desk', args: { input: `[${tag}/d] please` } }] },
  ),
});

describe.skipIf(unavailable !== undefined)('troupe/restate: limits, supervision and nested sessions', () => {
  let server: RestateServer;
  let endpoint: ServedEndpoint;
  const session = (agent: string, id: string) =>
    restateClient({ ingress: server.ingress }).session(agent, id);

  beforeAll(async () => {
    server = await startRestateServer();
    endpoint = await serveAgents([sleeper, fragile, hoarder, concierge], {
      port: 0,
      logger: quietLogger,
      maxJournaledBytes: 16_384,
      supervision: { backoffMs: 10 },
    });
    await server.register(endpoint.url);
  }, 60_000);

  afterAll(async () => {
    await endpoint?.close();
    await server?.stop();
  });

  it('ends a turn that outlives the agent’s timeoutMs with timed_out, decided from the journal', async () => {
    const result = await session('sleeper', 'n1').send('[n1/t1] take a nap');
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'timed_out', timedOut: true });
    validateHistory(result.history);
    expect(startCounts(probe.lines).get('n1/t1|tool|sleeper2')).toBe(1);
    expect(probe.lines.some((line) => line.key === 'n1/t1|tool|sleeper2' && line.phase === 'end')).toBe(
      false,
    );
  });

  it('restarts an agent whose fatal tool failed (a durable back-off), from its last checkpoint', async () => {
    const result = await session('fragile', 'f1').send('[f1/t1] go');
    expect(result).toMatchObject({ status: 'completed', text: 'fragile f1/t1: stable now' });
    const supervisor = (await session('fragile', 'f1').events()).filter(
      (event) => event.type === 'supervisor',
    );
    expect(supervisor).toMatchObject([{ data: { decision: 'restart', agent: 'fragile', restarts: 1 } }]);
    // The model call before the tool was not made again: the restart resumed from the checkpoint.
    expect(startCounts(probe.lines).get('f1/t1|fragile|m2')).toBe(1);
    expect(startCounts(probe.lines).get('f1/t1|tool|fragile2')).toBe(2);
  });

  it('turns a result too large to journal into an error the model reads', async () => {
    const result = await session('hoarder', 'h1').send('[h1/t1] dump it');
    expect(result.status).toBe('completed');
    expect(result.text).toMatch(
      /^hoarder h1\/t1: Error: the result of hoarder\/tool\/1\/hoarder2 is \d+ KiB, over the 16 KiB a journal entry may hold here/,
    );
  });

  it('runs an agent tool whose agent hands off (it needs a session) in-process, as one journaled call', async () => {
    const result = await session('concierge', 'd1').send('[d1/t1] I need the desk');
    expect(result).toMatchObject({
      status: 'completed',
      text: 'concierge d1/t1: support d1/t1/d: research d1/t1/d/r: facts about topic of d1/t1/d/r',
    });
    const counts = startCounts(probe.lines.filter((line) => line.tag.startsWith('d1/')));
    expect(counts.size).toBe(11);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
  });
});
