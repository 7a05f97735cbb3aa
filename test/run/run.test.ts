import {
  ConfigError,
  DuplicateToolError,
  defineAgent,
  HistoryValidationError,
  type Message,
  type RunEvent,
  run,
  stream,
  tool,
  toSSE,
  validateHistory,
} from 'troupe';
import { activeRuntimeCount, scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const add = tool({
  name: 'add',
  description: 'Adds two numbers',
  input: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => a + b,
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function invariantHolds(history: readonly Message[]): void {
  expect(() => validateHistory(history)).not.toThrow();
}

describe('run: the loop end to end on the scripted model', () => {
  it('runs tools, feeds results back and completes with text, usage, steps and history delta', async () => {
    const model = scriptedModel([
      {
        text: 'adding',
        toolCalls: [{ name: 'add', args: { a: 1, b: 2 } }],
        stopReason: 'tool_use',
        usage: { input: 5, output: 2 },
      },
      { text: 'It is 3', stopReason: 'end_turn', usage: { input: 7, output: 3 } },
    ]);
    const agent = defineAgent({ name: 'calc', instructions: 'Be precise.', model, tools: [add] });
    const result = await run(agent, 'What is 1+2?');
    expect(result).toMatchObject({
      status: 'completed',
      stopReason: 'completed',
      text: 'It is 3',
      toolCallCount: 1,
      modelCalls: 2,
    });
    expect(result.usage).toEqual({ input: 12, output: 5, cached: 0, reasoning: 0 });
    expect(result.steps).toHaveLength(2);
    expect(result.steps[0]?.toolCalls[0]).toMatchObject({
      name: 'add',
      args: { a: 1, b: 2 },
      result: '3',
      isError: false,
    });
    expect(result.historyDelta.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    // The second request carries the system prompt, the tool call and its answer.
    const second = model.requests[1];
    expect(second?.messages[0]).toEqual({ role: 'system', content: 'Be precise.' });
    expect(second?.messages.at(-1)).toMatchObject({ role: 'tool', content: '3', toolCallId: 'call_0_0' });
    expect(second?.tools.map((t) => t.name)).toEqual(['add']);
    expect(second?.output).toBeUndefined();
    invariantHolds(result.history);
    expect(activeRuntimeCount()).toBe(0);
  });

  it('never mutates the caller history and returns it followed by the delta', async () => {
    const history: Message[] = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'x1', name: 'add', args: { a: 1, b: 1 } }] },
      { role: 'tool', toolCallId: 'x1', content: '2' },
      { role: 'assistant', content: '2' },
    ];
    const frozen = structuredClone(history);
    const model = scriptedModel([{ text: 'again 2', stopReason: 'end_turn' }]);
    const result = await run(defineAgent({ name: 'a', instructions: '', model, tools: [add] }), 'again', {
      history,
    });
    expect(history).toEqual(frozen);
    expect(result.history.slice(0, 4)).toEqual(history);
    expect(result.history).toEqual([...history, ...result.historyDelta]);
    // With empty instructions no system message is sent.
    expect(model.requests[0]?.messages[0]).toEqual({ role: 'user', content: 'hi' });
  });

  it('rejects an invalid history with a typed error listing every issue, before calling the model', async () => {
    const model = scriptedModel([{ text: 'x' }]);
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const bad = [
      { role: 'assistant', content: '', toolCalls: [{ id: 't1', name: 'add', args: {} }] },
      { role: 'user', content: 'hm' },
      { role: 'tool', toolCallId: 'nope', content: 'x' },
      { role: 'robot', content: 'x' },
    ] as unknown as Message[];
    const error = await run(agent, 'go', { history: bad }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HistoryValidationError);
    expect((error as HistoryValidationError).issues.map((i) => i.index)).toEqual([1, 2, 3]);
    expect(model.calls).toBe(0);
  });

  it('stops at the step limit with a typed result and the partial transcript', async () => {
    let n = 0;
    const model = scriptedModel(() => ({
      toolCalls: [{ name: 'add', args: { a: n++, b: 0 } }],
      stopReason: 'tool_use',
    }));
    const result = await run(
      defineAgent({
        name: 'a',
        instructions: '',
        model,
        tools: [add],
        limits: { maxSteps: 3, maxToolCallsPerTool: null },
      }),
      'go',
    );
    expect(result).toMatchObject({
      status: 'stopped',
      stopReason: 'max_steps',
      modelCalls: 3,
      toolCallCount: 3,
    });
    expect(model.calls).toBe(3);
    invariantHolds(result.history);
  });

  it('can ask for one last tool-less answer at the step limit (finalAnswerOnMaxSteps)', async () => {
    const model = scriptedModel((request, index) =>
      request.tools.length > 0
        ? { toolCalls: [{ name: 'add', args: { a: index, b: 0 } }] }
        : { text: 'best effort', stopReason: 'end_turn' },
    );
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model,
      tools: [add],
      limits: { maxSteps: 2, finalAnswerOnMaxSteps: true },
    });
    const result = await run(agent, 'go');
    expect(result).toMatchObject({ stopReason: 'max_steps', text: 'best effort', modelCalls: 3 });
    expect(model.requests[2]?.tools).toEqual([]);
  });

  it('with finalAnswerOnToolLimits off, ends on a duplicate tool call, answering the unrun call', async () => {
    const model = scriptedModel(() => ({
      toolCalls: [{ name: 'add', args: { b: 2, a: 1 } }],
      stopReason: 'tool_use',
    }));
    const result = await run(
      defineAgent({
        name: 'a',
        instructions: '',
        model,
        tools: [add],
        limits: { finalAnswerOnToolLimits: false },
      }),
      'go',
    );
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'duplicate_tool_call', toolCallCount: 2 });
    expect(result.error?.message).toMatch(/same arguments 3 times/);
    const last = result.history.at(-1);
    expect(last).toMatchObject({ role: 'tool', isError: true });
    invariantHolds(result.history);
  });

  it('ends when a tool would pass its per-run call cap', async () => {
    let n = 0;
    const model = scriptedModel(() => ({ toolCalls: [{ name: 'add', args: { a: n++, b: 0 } }] }));
    const result = await run(
      defineAgent({ name: 'a', instructions: '', model, tools: [add], limits: { maxToolCallsPerTool: 2 } }),
      'go',
    );
    expect(result).toMatchObject({ stopReason: 'tool_call_limit', toolCallCount: 2 });
    invariantHolds(result.history);
  });

  it('returns unknown tools and invalid arguments to the model as error results', async () => {
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'nope', args: {} },
          { name: 'add', args: { a: 'one' } },
          { name: 'add', args: '{not json' },
        ],
        stopReason: 'tool_use',
      },
      { text: 'sorry', stopReason: 'end_turn' },
    ]);
    const result = await run(defineAgent({ name: 'a', instructions: '', model, tools: [add] }), 'go');
    expect(result.stopReason).toBe('completed');
    const tools = result.historyDelta.filter((m) => m.role === 'tool');
    expect(tools.map((m) => m.isError)).toEqual([true, true, true]);
    expect(tools[0]?.content).toMatch(/unknown tool "nope".*Available tools: add/);
    expect(tools[1]?.content).toMatch(/invalid arguments.*a:/);
    expect(result.toolCallCount).toBe(0);
  });

  it('retries a throwing tool, then sends its error back; the run ends tool_failure_degraded', async () => {
    let attempts = 0;
    const flaky = tool({
      name: 'flaky',
      description: 'always fails',
      input: z.object({}),
      execute: () => {
        attempts++;
        throw new Error('backend down');
      },
    });
    const model = scriptedModel((request, index) =>
      index === 0
        ? { toolCalls: [{ name: 'flaky', args: {} }], stopReason: 'tool_use' }
        : {
            text: `no tools: ${request.tools.map((t) => t.name).join(',') || 'none'}`,
            stopReason: 'end_turn',
          },
    );
    const s = stream(defineAgent({ name: 'a', instructions: '', model, tools: [flaky] }), 'go');
    const events: RunEvent[] = [];
    for await (const event of s) events.push(event);
    const result = await s.result;
    expect(attempts).toBe(3);
    expect(events.filter((e) => e.type === 'tool_retry')).toHaveLength(2);
    expect(result).toMatchObject({
      status: 'completed',
      stopReason: 'tool_failure_degraded',
      text: 'no tools: none',
    });
    expect(result.historyDelta.find((m) => m.role === 'tool')).toMatchObject({ isError: true });
    expect(result.historyDelta.find((m) => m.role === 'tool')?.content).toMatch(
      /failed after 3 attempt\(s\): backend down/,
    );
  });

  it('recovers when a retry succeeds (no degradation)', async () => {
    let attempts = 0;
    const once = tool({
      name: 'once',
      description: 'fails once',
      input: z.object({}),
      execute: () => {
        if (attempts++ === 0) throw new Error('blip');
        return 'ok';
      },
    });
    const model = scriptedModel([{ toolCalls: [{ name: 'once', args: {} }] }, { text: 'fine' }]);
    const result = await run(defineAgent({ name: 'a', instructions: '', model, tools: [once] }), 'go');
    expect(result.stopReason).toBe('completed');
    expect(result.steps[0]?.toolCalls[0]?.result).toBe('ok');
  });

  it('aborts a tool that outlives its timeout through its signal, and retries it', async () => {
    const seen: string[] = [];
    const slow = tool({
      name: 'slow',
      description: 'hangs',
      input: z.object({}),
      execute: (_args, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => {
            seen.push(`aborted attempt ${ctx.attempt}`);
            reject(ctx.signal.reason);
          });
        }),
    });
    const model = scriptedModel([{ toolCalls: [{ name: 'slow', args: {} }] }, { text: 'gave up' }]);
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model,
      tools: [slow],
      limits: { toolTimeoutMs: 20, maxToolRetries: 1 },
    });
    const result = await run(agent, 'go');
    expect(seen).toEqual(['aborted attempt 1', 'aborted attempt 2']);
    expect(result.steps[0]?.toolCalls[0]?.result).toMatch(/timed out after 20 ms/);
    expect(result.stopReason).toBe('tool_failure_degraded');
  });

  it('runs one turn of tools in parallel: a call event when each starts, a result when each ends; steps() in call order', async () => {
    const order: string[] = [];
    const wait = tool({
      name: 'wait',
      description: 'waits',
      input: z.object({ ms: z.number(), tag: z.string() }),
      execute: async ({ ms, tag }) => {
        order.push(`start ${tag}`);
        await sleep(ms);
        order.push(`end ${tag}`);
        return tag;
      },
    });
    const model = scriptedModel([
      {
        toolCalls: [
          { name: 'wait', args: { ms: 40, tag: 'one' } },
          { name: 'wait', args: { ms: 1, tag: 'two' } },
        ],
      },
      { text: 'done' },
    ]);
    const s = stream(defineAgent({ name: 'a', instructions: '', model, tools: [wait] }), 'go');
    const toolEvents: string[] = [];
    for await (const event of s) {
      if (event.type === 'tool_call') toolEvents.push(`call ${(event.data.args as { tag: string }).tag}`);
      if (event.type === 'tool_response') toolEvents.push(`result ${event.data.content}`);
    }
    expect(order).toEqual(['start one', 'start two', 'end two', 'end one']);
    // A UI can show "searching…" at once: the call comes out when it starts, the result when it ends.
    expect(toolEvents).toEqual(['call one', 'call two', 'result two', 'result one']);
    const steps = [];
    const again = stream(
      defineAgent({
        name: 'a',
        instructions: '',
        model: scriptedModel([
          {
            text: 'thinking',
            toolCalls: [
              { name: 'wait', args: { ms: 5, tag: 'x' } },
              { name: 'wait', args: { ms: 0, tag: 'y' } },
            ],
          },
          { text: 'final' },
        ]),
        tools: [wait],
      }),
      'go',
    );
    for await (const step of again.steps())
      steps.push(
        step.type === 'tool_call'
          ? `call ${(step.args as { tag: string }).tag}`
          : step.type === 'tool_result'
            ? `result ${step.content}`
            : step.type,
      );
    expect(steps).toEqual(['thinking', 'call x', 'result x', 'call y', 'result y', 'final_response']);
  });

  it('honours toolConcurrency', async () => {
    let running = 0;
    let peak = 0;
    const busy = tool({
      name: 'busy',
      description: 'busy',
      input: z.object({ i: z.number() }),
      execute: async () => {
        running++;
        peak = Math.max(peak, running);
        await sleep(5);
        running--;
        return 'ok';
      },
    });
    const calls = Array.from({ length: 5 }, (_, i) => ({ name: 'busy', args: { i } }));
    const model = scriptedModel([{ toolCalls: calls }, { text: 'ok' }]);
    await run(
      defineAgent({ name: 'a', instructions: '', model, tools: [busy], limits: { toolConcurrency: 2 } }),
      'go',
    );
    expect(peak).toBe(2);
  });

  it('decodes a structured final output with retries, tools off and schema on in the final phase', async () => {
    const Answer = z.object({ total: z.number() });
    const model = scriptedModel([
      { toolCalls: [{ name: 'add', args: { a: 2, b: 2 } }] },
      { text: 'The total is 4.', stopReason: 'end_turn' },
      { text: '{"total": "four"}', stopReason: 'end_turn' },
      { text: '{"total": 4}', stopReason: 'end_turn' },
    ]);
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [add], output: Answer });
    const result = await run(agent, 'go');
    expect(result).toMatchObject({ status: 'completed', output: { total: 4 }, modelCalls: 4 });
    const typed: { total: number } | undefined = result.output;
    expect(typed?.total).toBe(4);
    expect(model.requests[0]?.output).toBeUndefined();
    expect(model.requests[0]?.tools).toHaveLength(1);
    expect(model.requests[2]?.tools).toEqual([]);
    expect(model.requests[2]?.output?.schema).toMatchObject({ type: 'object' });
    expect(model.requests[3]?.messages.at(-1)).toMatchObject({ role: 'user' });
    expect(String(model.requests[3]?.messages.at(-1)?.content)).toMatch(/does not match the schema/);
  });

  it('stops with decode_failed after maxDecodeRetries, also for an agent without tools', async () => {
    const model = scriptedModel(() => ({ text: 'not json', stopReason: 'end_turn' }));
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model,
      output: z.object({ x: z.number() }),
      limits: { maxDecodeRetries: 2 },
    });
    const result = await run(agent, 'go');
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'decode_failed' });
    expect(model.calls).toBe(3);
    expect(model.requests.every((r) => r.output !== undefined && r.tools.length === 0)).toBe(true);
  });

  it('accepts a valid structured answer given in the tool phase without an extra call', async () => {
    const model = scriptedModel([{ text: '{"x": 1}', stopReason: 'end_turn' }]);
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model,
      tools: [add],
      output: z.object({ x: z.number() }),
    });
    const result = await run(agent, 'go');
    expect(result).toMatchObject({ stopReason: 'completed', output: { x: 1 }, modelCalls: 1 });
  });

  it('ends a refused answer as guardrail_blocked', async () => {
    const model = scriptedModel([{ refusal: 'I cannot help with that', stopReason: 'refusal' }]);
    const result = await run(defineAgent({ name: 'a', instructions: '', model, tools: [add] }), 'go');
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'guardrail_blocked' });
    expect(result.error?.message).toMatch(/cannot help/);
  });

  it('turns a model error into a failed result, never a rejection', async () => {
    const model = scriptedModel([{ error: 'HTTP 500 from provider' }]);
    const result = await run(defineAgent({ name: 'a', instructions: '', model }), 'go');
    expect(result).toMatchObject({ status: 'failed', stopReason: 'error' });
    expect(result.error?.message).toBe('HTTP 500 from provider');
    const exhausted = await run(defineAgent({ name: 'a', instructions: '', model: scriptedModel([]) }), 'go');
    expect(exhausted.error?.code).toBe('model_script_exhausted');
  });

  it('an AbortSignal ends the run as aborted and aborts the in-flight model call', async () => {
    const controller = new AbortController();
    const model = scriptedModel([{ text: 'late', delayMs: 10_000 }]);
    const pending = run(defineAgent({ name: 'a', instructions: '', model }), 'go', {
      signal: controller.signal,
    });
    await sleep(10);
    controller.abort();
    const result = await pending;
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'aborted', timedOut: false });
    expect(model.requests[0]?.signal.aborted).toBe(true);
  });

  it('an already-aborted signal ends the run at once', async () => {
    const model = scriptedModel([{ text: 'x' }]);
    const result = await run(defineAgent({ name: 'a', instructions: '', model }), 'go', {
      signal: AbortSignal.abort(),
    });
    expect(result.stopReason).toBe('aborted');
  });

  it('timeoutMs ends the run as timed_out, aborting a running tool and answering its call', async () => {
    let toolSignal: AbortSignal | undefined;
    const hang = tool({
      name: 'hang',
      description: 'hangs',
      input: z.object({}),
      execute: (_args, ctx) => {
        toolSignal = ctx.signal;
        return new Promise(() => undefined);
      },
    });
    const model = scriptedModel([{ toolCalls: [{ name: 'hang', args: {} }] }]);
    const result = await run(
      defineAgent({ name: 'a', instructions: '', model, tools: [hang], limits: { timeoutMs: 30 } }),
      'go',
    );
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'timed_out', timedOut: true });
    expect(toolSignal?.aborted).toBe(true);
    expect(result.history.at(-1)).toMatchObject({ role: 'tool', isError: true });
    invariantHolds(result.history);
  });

  it('gives tools an idempotency key of session, turn, step and call id', async () => {
    const keys: string[] = [];
    const record = tool({
      name: 'record',
      description: 'records',
      input: z.object({}),
      execute: (_args, ctx) => {
        keys.push(ctx.idempotencyKey);
        return 'ok';
      },
    });
    const model = scriptedModel([{ toolCalls: [{ id: 'abc', name: 'record', args: {} }] }, { text: 'done' }]);
    const result = await run(defineAgent({ name: 'a', instructions: '', model, tools: [record] }), 'go', {
      sessionId: 's-1',
    });
    expect(result.sessionId).toBe('s-1');
    expect(keys).toEqual(['s-1:1:1:abc']);
  });

  it('streams typed events with gap-free sequence numbers and the SSE chunk format', async () => {
    const model = scriptedModel([
      { deltas: ['Hel', 'lo'], stopReason: 'end_turn', usage: { input: 3, output: 2 } },
    ]);
    const s = stream(defineAgent({ name: 'greeter', instructions: '', model }), 'hi');
    const events: RunEvent[] = [];
    for await (const event of s) events.push(event);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    expect(events[0]?.type).toBe('run_start');
    expect(events.at(-1)?.type).toBe('run_end');
    expect(
      events.filter((e) => e.type === 'delta').map((e) => (e.data as { content: string }).content),
    ).toEqual(['Hel', 'lo']);
    expect(new Set(events.map((e) => e.sessionId))).toEqual(new Set([s.sessionId]));
    expect(events.every((e) => e.agent === 'greeter')).toBe(true);
    const delta = events.find((e) => e.type === 'delta') as RunEvent;
    const sse = toSSE(delta);
    expect(sse).toMatch(/^id: \d+\nevent: delta\ndata: /);
    const chunk = JSON.parse(sse.split('data: ')[1] as string);
    expect(chunk).toMatchObject({
      agent: 'greeter',
      type: 'delta',
      data: { content: 'Hel' },
      seq: delta.seq,
    });
    expect(new Date(chunk.time).toISOString()).toBe(chunk.time);
    expect((await s.result).text).toBe('Hello');
  });
});

describe('definitions are checked up front with typed errors', () => {
  it('refuses duplicate tool names', () => {
    expect(() =>
      defineAgent({ name: 'a', instructions: '', model: scriptedModel([]), tools: [add, add] }),
    ).toThrow(DuplicateToolError);
  });
  it('refuses bad limits, names and models', () => {
    expect(() =>
      defineAgent({ name: 'a', instructions: '', model: scriptedModel([]), limits: { maxSteps: 0 } }),
    ).toThrow(/maxSteps must be an integer >= 1/);
    expect(() => defineAgent({ name: 'a b', instructions: '', model: scriptedModel([]) })).toThrow(
      ConfigError,
    );
    expect(() => defineAgent({ name: 'a', instructions: '', model: {} as never })).toThrow(/ModelProvider/);
    expect(() => tool({ name: 'bad name', description: 'x', input: z.object({}), execute: () => 1 })).toThrow(
      ConfigError,
    );
    expect(() => tool({ name: 'ok', description: '', input: z.object({}), execute: () => 1 })).toThrow(
      /description/,
    );
  });
  it('sends tools as JSON Schema', () => {
    expect(add.parameters).toMatchObject({
      type: 'object',
      properties: { a: { type: 'number' } },
      required: ['a', 'b'],
    });
    expect(add.parameters).not.toHaveProperty('$schema');
  });
});
