import {
  agentTool,
  defineAgent,
  type RunEvent,
  type RunItem,
  run,
  stream,
  type ToolContext,
  tool,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/** The events of run() and stream(): decode retries, when tool events come out, nested agents' events. */

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const seen: T[] = [];
  for await (const item of items) seen.push(item);
  return seen;
}

/** A promise with its resolve function, for a tool that waits until the test lets it finish. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe('decode_retry events', () => {
  it('run(): a final answer that does not decode is a decode_retry event with the count and the decode error', async () => {
    const agent = defineAgent({
      name: 'typed',
      instructions: 'x',
      model: scriptedModel([{ text: 'not json' }, { text: '{"total": "five"}' }, { text: '{"total": 5}' }]),
      output: z.object({ total: z.number() }),
    });
    const s = stream(agent, 'sum');
    const events = await collect(s);
    const result = await s.result;
    expect(result).toMatchObject({ status: 'completed', output: { total: 5 } });
    const retries = events.filter((e) => e.type === 'decode_retry');
    expect(retries.map((e) => e.data.retryCount)).toEqual([1, 2]);
    for (const retry of retries) {
      if (retry.type !== 'decode_retry') continue;
      expect(retry.data.error).not.toBe('');
      expect(retry.data.error).not.toBe('the answer did not decode');
    }
    // The second answer was JSON of the wrong shape: its error says which field.
    expect(retries[1]?.type === 'decode_retry' && retries[1].data.error).toMatch(/total/);
    // Each retry is reported before the model is asked again.
    const order = events
      .filter((e) => e.type === 'decode_retry' || e.type === 'model_response')
      .map((e) => e.type);
    expect(order).toEqual([
      'model_response',
      'decode_retry',
      'model_response',
      'decode_retry',
      'model_response',
    ]);
  });

  it('run(): retries that run out end decode_failed after the same events', async () => {
    const agent = defineAgent({
      name: 'typed',
      instructions: 'x',
      model: scriptedModel([{ text: 'no' }], { loop: true }),
      output: z.object({ total: z.number() }),
      limits: { maxDecodeRetries: 1 },
    });
    const s = stream(agent, 'sum');
    const events = await collect(s);
    expect((await s.result).stopReason).toBe('decode_failed');
    expect(events.filter((e) => e.type === 'decode_retry').map((e) => e.data)).toEqual([
      { retryCount: 1, error: expect.any(String) },
    ]);
  });
});

describe('tool events come out when calls start and end', () => {
  it('a slow tool: its tool_call is out while it runs, its tool_response once it returns; steps() keeps call order', async () => {
    const slowGate = gate();
    const started: string[] = [];
    const events: RunEvent[] = [];
    const slow = tool({
      name: 'slow',
      description: 'waits',
      input: z.object({}),
      execute: async () => {
        started.push('slow');
        await slowGate.promise;
        return 'slow done';
      },
    });
    const fast = tool({
      name: 'fast',
      description: 'returns at once',
      input: z.object({}),
      execute: () => 'fast done',
    });
    const agent = defineAgent({
      name: 'worker',
      instructions: 'x',
      model: scriptedModel([
        {
          toolCalls: [
            { id: 'c1', name: 'slow', args: {} },
            { id: 'c2', name: 'fast', args: {} },
          ],
          stopReason: 'tool_use',
        },
        { text: 'all done' },
      ]),
      tools: [slow, fast],
    });
    const s = stream(agent, 'go');
    const reading = (async () => {
      for await (const event of s) events.push(event);
    })();
    for (let i = 0; i < 100 && started.length === 0; i++) await new Promise((r) => setImmediate(r));
    expect(started).toEqual(['slow']);
    // While the slow tool waits: both calls are out as started, only the fast one answered.
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    const toolEvents = () =>
      events.flatMap((e) =>
        e.type === 'tool_call'
          ? [`call ${e.data.callId}`]
          : e.type === 'tool_response'
            ? [`result ${e.data.callId}`]
            : [],
      );
    expect(toolEvents()).toEqual(['call c1', 'call c2', 'result c2']);
    slowGate.open();
    await reading;
    expect(toolEvents()).toEqual(['call c1', 'call c2', 'result c2', 'result c1']);
    expect((await s.result).text).toBe('all done');

    // The step view of the same kind of run still pairs each call with its result, in call order.
    const again = gate();
    const s2 = stream(
      defineAgent({
        name: 'worker',
        instructions: 'x',
        model: scriptedModel([
          {
            toolCalls: [
              { id: 'c1', name: 'slow2', args: {} },
              { id: 'c2', name: 'fast', args: {} },
            ],
            stopReason: 'tool_use',
          },
          { text: 'all done' },
        ]),
        tools: [
          tool({
            name: 'slow2',
            description: 'waits',
            input: z.object({}),
            execute: async () => {
              await again.promise;
              return 'slow done';
            },
          }),
          fast,
        ],
      }),
      'go',
    );
    setImmediate(() => again.open());
    const steps = await collect(s2.steps());
    expect(
      steps.map((step: RunItem) => `${step.type} ${'callId' in step ? step.callId : ''}`.trim()),
    ).toEqual(['tool_call c1', 'tool_result c1', 'tool_call c2', 'tool_result c2', 'final_response']);
  });
});

describe('nested agents in a plain run', () => {
  it("run(): a sub-agent's events carry its route and depth 1, between its own run_start and run_end", async () => {
    const lookup = tool({
      name: 'lookup',
      description: 'looks up',
      input: z.object({}),
      execute: () => 'fact',
    });
    const researcher = defineAgent({
      name: 'researcher',
      description: 'finds facts',
      instructions: 'x',
      model: scriptedModel([
        { toolCalls: [{ id: 'r1', name: 'lookup', args: {} }], stopReason: 'tool_use' },
        { text: 'the fact' },
      ]),
      tools: [lookup],
    });
    const caller = defineAgent({
      name: 'caller',
      instructions: 'x',
      model: scriptedModel([
        {
          toolCalls: [{ id: 'call_1', name: 'researcher', args: { input: 'find' } }],
          stopReason: 'tool_use',
        },
        { text: 'done' },
      ]),
      tools: [agentTool(researcher)],
    });
    const s = stream(caller, 'go', { sessionId: 'plain-nested' });
    const events = await collect(s);
    expect((await s.result).text).toBe('done');
    const nested = events.filter((e) => e.agent === 'researcher');
    expect(nested.length).toBeGreaterThan(2);
    for (const event of nested) {
      expect(event).toMatchObject({ route: 'caller>call_1/researcher', depth: 1, sessionId: 'plain-nested' });
    }
    expect(nested[0]?.type).toBe('run_start');
    expect(nested.at(-1)?.type).toBe('run_end');
    expect(nested.filter((e) => e.type === 'run_start')).toHaveLength(1);
    expect(nested.filter((e) => e.type === 'run_end')).toHaveLength(1);
    expect(nested.map((e) => e.type)).toContain('tool_call');
    // The caller's own events stay at depth 0, and its stream starts and ends with its own run_start / run_end.
    for (const event of events.filter((e) => e.agent === 'caller'))
      expect(event).toMatchObject({ route: 'caller', depth: 0 });
    expect(events[0]).toMatchObject({ type: 'run_start', agent: 'caller', depth: 0 });
    expect(events.at(-1)).toMatchObject({ type: 'run_end', agent: 'caller', depth: 0 });
    // One gap-free sequence for the whole stream.
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
  });

  it('run(): a tool sees the session id the user gave and where its agent runs, also inside a nested agent', async () => {
    const seen: Pick<ToolContext, 'sessionId' | 'route' | 'agent'>[] = [];
    const where = tool({
      name: 'where',
      description: 'records its context',
      input: z.object({}),
      execute: (_args, ctx) => {
        seen.push({ sessionId: ctx.sessionId, route: ctx.route, agent: ctx.agent });
        return 'ok';
      },
    });
    const inner = defineAgent({
      name: 'inner',
      description: 'nested',
      instructions: 'x',
      model: scriptedModel([
        { toolCalls: [{ id: 'i1', name: 'where', args: {} }], stopReason: 'tool_use' },
        { text: 'inner done' },
      ]),
      tools: [where],
    });
    const top = defineAgent({
      name: 'top',
      instructions: 'x',
      model: scriptedModel([
        {
          toolCalls: [
            { id: 't1', name: 'where', args: {} },
            { id: 't2', name: 'inner', args: { input: 'go' } },
          ],
          stopReason: 'tool_use',
        },
        { text: 'top done' },
      ]),
      tools: [where, agentTool(inner)],
    });
    const result = await run(top, 'go', { sessionId: 'user-42' });
    expect(result.text).toBe('top done');
    expect(seen).toEqual([
      { sessionId: 'user-42', route: 'top', agent: 'top' },
      { sessionId: 'user-42', route: 'top>t2/inner', agent: 'inner' },
    ]);
  });
});

describe('usage events', () => {
  it('give each response’s usage and the sum so far, in a new object each time', async () => {
    const step = tool({
      name: 'step',
      description: 'd',
      input: z.object({}),
      execute: async () => 'ok',
    });
    const agent = defineAgent({
      name: 'counting',
      instructions: 'x',
      model: scriptedModel([
        { toolCalls: [{ id: 'c1', name: 'step', args: {} }], usage: { input: 10, output: 2, cached: 4 } },
        { toolCalls: [{ id: 'c2', name: 'step', args: {} }], usage: { input: 20, output: 3, reasoning: 1 } },
        { text: 'done', usage: { input: 30, output: 5, cached: 8, reasoning: 2 } },
      ]),
      tools: [step],
    });
    const s = stream(agent, 'go');
    const usages = (await collect(s)).flatMap((event) => (event.type === 'usage' ? [event.data] : []));
    expect((await s.result).usage).toEqual({ input: 60, output: 10, cached: 12, reasoning: 3 });
    expect(usages).toEqual([
      {
        usage: { input: 10, output: 2, cached: 4, reasoning: 0 },
        cumulative: { input: 10, output: 2, cached: 4, reasoning: 0 },
      },
      {
        usage: { input: 20, output: 3, cached: 0, reasoning: 1 },
        cumulative: { input: 30, output: 5, cached: 4, reasoning: 1 },
      },
      {
        usage: { input: 30, output: 5, cached: 8, reasoning: 2 },
        cumulative: { input: 60, output: 10, cached: 12, reasoning: 3 },
      },
    ]);
    // Each event has an object of its own.
    expect(new Set(usages.map((data) => data.cumulative)).size).toBe(3);
  });
});
