/**
 * What Troupe adds per agent step on Restate. Against one Restate server, on one HTTP/2 endpoint in this process:
 * - troupe: an agent served with restateAgents(), one turn = 10 tool steps (a model call, then one tool call) and
 *   the final answer, the scripted model and the tool answering at once;
 * - bare: a hand-written virtual object whose exclusive handler makes the same journal entries in the same order
 *   (get the conversation, a clock run, set the turn, clear the approvals, 21 `ctx.run` calls with results of the
 *   same shape, the events run, three sets) and nothing else.
 * Turns go through the ingress one after another, each on a fresh key, in pairs (one turn of each side, the order
 * alternating from pair to pair), so both sides see the same load. The median of the pairs' differences, divided by
 * 10, is what Troupe adds per step (its machines, effects actor, journaled events and the results it builds); the
 * ratio is the median troupe turn over the median bare turn.
 *
 *   npm run build && node bench/restate/step-latency.ts [rounds=6] [pairsPerRound=40]
 */
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import * as restate from '@restatedev/restate-sdk';
import { z } from 'zod';
import { defineAgent, type ModelProvider, tool } from '../../dist/index.js';
import { restateAgents } from '../../dist/restate/index.js';
import { freePort, startRestateServer } from '../../test/restate/support/restate-server.ts';

const rounds = Number(process.argv[2] ?? 6);
const perRound = Number(process.argv[3] ?? 40);
const steps = 10;
const usage = { input: 10, output: 5, cached: 0, reasoning: 0 };

/** Calls `step` until the conversation holds 10 tool results, then answers. */
const model: ModelProvider = {
  provider: 'bench',
  model: 'steps',
  generate: async (request) => {
    const done = request.messages.filter((message) => message.role === 'tool').length;
    if (done >= steps) return { text: `done after ${done}`, toolCalls: [], stopReason: 'end_turn', usage };
    return {
      text: '',
      toolCalls: [{ id: `c${done}`, name: 'step', args: { k: done } }],
      stopReason: 'tool_use',
      usage,
    };
  },
};
const step = tool({
  name: 'step',
  description: 'One step.',
  input: z.object({ k: z.number() }),
  execute: ({ k }) => `step ${k} done`,
});
const agent = defineAgent({
  name: 'stepper',
  instructions: 'Take the steps.',
  model,
  tools: [step],
  limits: { maxSteps: 20, maxToolCallsPerTool: null },
});

/** The same journal, written by hand: what Restate itself costs for this turn. */
const bare = restate.object({
  name: 'bare',
  handlers: {
    send: async (ctx: restate.ObjectContext, input: string) => {
      const stored = (await ctx.get<{ transcript: unknown[] }>('conversation')) ?? { transcript: [] };
      const startedAt = await ctx.run('clock', () => Date.now());
      ctx.set('turn', { number: 1, status: 'running', input, startedAt });
      ctx.clear('approvals');
      const transcript: unknown[] = [...stored.transcript, { role: 'user', content: input }];
      for (let k = 0; k <= steps; k++) {
        const response = await ctx.run(`stepper/model/${k + 1}`, () => ({
          value: {
            type: 'model.response',
            response: {
              text: k === steps ? `done after ${k}` : '',
              toolCalls: k === steps ? [] : [{ id: `c${k}`, name: 'step', args: { k } }],
              stopReason: k === steps ? 'end_turn' : 'tool_use',
              usage,
            },
          },
          events: [{ agent: 'stepper', type: 'model_response', data: { step: k + 1 }, time: Date.now() }],
          at: Date.now(),
        }));
        transcript.push({ role: 'assistant', content: response.value.response.text });
        if (k === steps) break;
        const outcome = await ctx.run(`stepper/tool/${k + 1}/c${k}`, () => ({
          value: { callId: `c${k}`, name: 'step', content: `step ${k} done`, isError: false, executed: true },
          events: [],
          at: Date.now(),
        }));
        transcript.push({ role: 'tool', toolCallId: `c${k}`, content: outcome.value.content });
      }
      const events = await ctx.run('events', () => transcript.map((_, seq) => ({ seq, type: 'phase' })));
      ctx.set('events', events);
      ctx.set('conversation', { agent: 'stepper', turns: 1, transcript, nextSeq: events.length });
      ctx.set('turn', { number: 1, status: 'done', input, startedAt });
      return { status: 'completed', text: `done after ${steps}`, history: transcript };
    },
  },
});

const server = await startRestateServer();
const port = await freePort();
const endpoint = http2.createServer(
  restate.createEndpointHandler({
    services: [...restateAgents([agent]), bare],
    logger: (params, message, ...rest) => {
      if (params.level === 'error') console.error(message, ...rest);
    },
  }),
);
const sessions = new Set<http2.ServerHttp2Session>();
endpoint.on('session', (session) => sessions.add(session));
await new Promise<void>((resolve) => endpoint.listen(port, '127.0.0.1', resolve));

try {
  await server.register(`http://127.0.0.1:${port}`);
  let key = 0;
  /** CPU time of this process (client and endpoint) and of the Restate server, in µs, per side. */
  const cpu = { stepper: { here: 0, server: 0, turns: 0 }, bare: { here: 0, server: 0, turns: 0 } };
  const serverTicks = (): number => {
    const fields = readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (1/100 s)
  };
  const measured = async (object: 'stepper' | 'bare'): Promise<number> => {
    const here = process.cpuUsage();
    const ticks = serverTicks();
    const took = await turn(object);
    const used = process.cpuUsage(here);
    cpu[object].here += used.user + used.system;
    cpu[object].server += (serverTicks() - ticks) * 10_000;
    cpu[object].turns += 1;
    return took;
  };
  const turn = async (object: string): Promise<number> => {
    const started = performance.now();
    const response = await fetch(`${server.ingress}/${object}/k${++key}/send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify('take the steps'),
    });
    const result = (await response.json()) as { status?: string; text?: string };
    if (!response.ok || result.status !== 'completed' || result.text !== `done after ${steps}`)
      throw new Error(`${object}: ${response.status} ${JSON.stringify(result).slice(0, 300)}`);
    return performance.now() - started;
  };
  const median = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)] as number;
  };

  for (let i = 0; i < 10; i++) {
    await turn('stepper');
    await turn('bare');
  }
  const samples: Record<'stepper' | 'bare', number[]> = { stepper: [], bare: [] };
  const differences: number[] = [];
  const perRoundAdded: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const these: number[] = [];
    for (let pair = 0; pair < perRound; pair++) {
      const order: ('stepper' | 'bare')[] = pair % 2 === 0 ? ['stepper', 'bare'] : ['bare', 'stepper'];
      const took = { stepper: 0, bare: 0 };
      for (const side of order) took[side] = await measured(side);
      samples.stepper.push(took.stepper);
      samples.bare.push(took.bare);
      these.push(took.stepper - took.bare);
    }
    differences.push(...these);
    perRoundAdded.push((median(these) / steps) * 1000);
  }

  const journal = await server
    .query<{ service: string; entries: number }>(
      'select i.target_service_name as service, count(*) / count(distinct j.id) as entries from sys_journal j join sys_invocation i on j.id = i.id group by i.target_service_name',
    )
    .catch(() => []);

  const troupe = median(samples.stepper);
  const hand = median(samples.bare);
  const added = (median(differences) / steps) * 1000;
  const fmt = (ms: number) => ms.toFixed(2);
  console.log(
    `Restate step latency: ${rounds} rounds × ${perRound} pairs of turns, ${steps} tool steps per turn`,
  );
  console.log(`node ${process.version}, restate-sdk 1.17.2, restate-server 1.7.12 (1 partition)`);
  console.log(
    `turn ms, median: troupe ${fmt(troupe)}, bare ${fmt(hand)}; ratio ${(troupe / hand).toFixed(2)}×`,
  );
  console.log(`added per step (median of paired differences / ${steps}): ${added.toFixed(0)} µs`);
  console.log(`per round, µs per step: ${perRoundAdded.map((value) => value.toFixed(0)).join(', ')}`);
  const perStep = (side: 'stepper' | 'bare', where: 'here' | 'server') =>
    (cpu[side][where] / cpu[side].turns / steps).toFixed(0);
  console.log(
    `CPU µs per step, this process (client + endpoint): troupe ${perStep('stepper', 'here')}, bare ${perStep('bare', 'here')}; Restate server: troupe ${perStep('stepper', 'server')}, bare ${perStep('bare', 'server')}`,
  );
  if (journal.length > 0)
    console.log(
      `journal entries per invocation: ${journal.map((row) => `${row.service} ${row.entries}`).join(', ')}`,
    );
} finally {
  endpoint.close();
  for (const session of sessions) session.destroy();
  await server.stop();
}
