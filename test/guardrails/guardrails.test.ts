import {
  ConfigError,
  createResourceManager,
  defineAgent,
  type GuardrailCheck,
  type GuardrailOptions,
  guardrail,
  type RunEvent,
  type RunEventOf,
  run,
  stream,
  tool,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/** Guardrails of every stage deciding allow, warn and block; failures failing closed; the events they emit. */

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const seen: T[] = [];
  for await (const item of items) seen.push(item);
  return seen;
}

function guardrailEvents(events: RunEvent[]): RunEventOf<'guardrail'>['data'][] {
  return events.filter((e): e is RunEventOf<'guardrail'> => e.type === 'guardrail').map((e) => e.data);
}

const decide =
  (decision: 'allow' | 'warn' | 'block', message?: string): GuardrailCheck =>
  () =>
    message === undefined ? { decision } : { decision, message };

const echo = tool({
  name: 'echo',
  description: 'echoes',
  input: z.object({ text: z.string() }),
  execute: ({ text }) => `echo: ${text}`,
});

function toolTurns() {
  return scriptedModel([
    { toolCalls: [{ id: 'c1', name: 'echo', args: { text: 'hi' } }], stopReason: 'tool_use' },
    { text: 'done' },
  ]);
}

describe('input guardrails', () => {
  for (const decision of ['allow', 'warn'] as const) {
    it(`${decision}: the run goes on and the decision is a guardrail event`, async () => {
      const model = scriptedModel([{ text: 'hello' }]);
      const agent = defineAgent({
        name: 'a',
        instructions: '',
        model,
        guardrails: { input: [{ name: 'in', check: decide(decision, 'noted') }] },
      });
      const s = stream(agent, 'hi');
      const events = await collect(s);
      const result = await s.result;
      expect(result.stopReason).toBe('completed');
      expect(result.text).toBe('hello');
      expect(guardrailEvents(events)).toEqual([
        { guardrail: 'in', stage: 'input', decision, message: 'noted' },
      ]);
    });
  }

  it('block: the run ends guardrail_blocked before any model call, naming the guardrail', async () => {
    const model = scriptedModel([{ text: 'never' }]);
    const seen: unknown[] = [];
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model,
      guardrails: {
        input: [
          guardrail({
            name: 'no-ssn',
            check: (value, info) => {
              seen.push(value, info.stage, info.text);
              return { decision: 'block', message: 'looks like an SSN' };
            },
          }),
        ],
      },
    });
    const result = await run(agent, 'my ssn is 123-45-6789');
    expect(model.calls).toBe(0);
    expect(result.stopReason).toBe('guardrail_blocked');
    expect(result.status).toBe('stopped');
    expect(result.guardrail).toEqual({ name: 'no-ssn', stage: 'input', message: 'looks like an SSN' });
    expect(result.error?.message).toContain('no-ssn');
    expect(result.text).toBe('');
    expect(seen).toEqual(['my ssn is 123-45-6789', 'input', 'my ssn is 123-45-6789']);
  });

  it('parallel mode: a block cancels the model call in flight through its AbortSignal', async () => {
    let callSignal: AbortSignal | undefined;
    const model = scriptedModel((request) => {
      callSignal = request.signal;
      return { text: 'too late', delayMs: 10_000 };
    });
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model,
      guardrails: {
        input: [
          {
            name: 'slow-check',
            mode: 'parallel',
            check: () =>
              new Promise((resolve) => setTimeout(() => resolve({ decision: 'block', message: 'no' }), 20)),
          },
        ],
      },
    });
    const started = Date.now();
    const s = stream(agent, 'hi');
    const events = await collect(s);
    const result = await s.result;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(model.calls).toBe(1);
    expect(callSignal?.aborted).toBe(true);
    expect(result.stopReason).toBe('guardrail_blocked');
    expect(result.guardrail).toMatchObject({ name: 'slow-check', stage: 'input' });
    expect(result.modelCalls).toBe(1);
    expect(events.some((e) => e.type === 'delta')).toBe(false);
  });

  it('parallel mode: a response that comes first waits for the check, then goes through when it allows', async () => {
    let checked = false;
    const model = scriptedModel([{ text: 'fast answer' }]);
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model,
      guardrails: {
        input: [
          {
            name: 'slow-allow',
            mode: 'parallel',
            check: () =>
              new Promise((resolve) =>
                setTimeout(() => {
                  checked = true;
                  resolve({ decision: 'allow' });
                }, 20),
              ),
          },
        ],
      },
    });
    const result = await run(agent, 'hi');
    expect(checked).toBe(true);
    expect(result.stopReason).toBe('completed');
    expect(result.text).toBe('fast answer');
  });
});

describe('output guardrails', () => {
  for (const decision of ['allow', 'warn'] as const) {
    it(`${decision}: the answer is returned`, async () => {
      const agent = defineAgent({
        name: 'a',
        instructions: '',
        model: scriptedModel([{ text: 'the answer' }]),
        guardrails: { output: [{ name: 'out', check: decide(decision) }] },
      });
      const s = stream(agent, 'q');
      const events = await collect(s);
      const result = await s.result;
      expect(result.stopReason).toBe('completed');
      expect(result.text).toBe('the answer');
      expect(guardrailEvents(events)).toEqual([{ guardrail: 'out', stage: 'output', decision }]);
    });
  }

  it('block: the run ends guardrail_blocked and the answer is withheld from the result and the history', async () => {
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: 'a rude answer' }]),
      guardrails: { output: [{ name: 'polite', check: decide('block', 'rude') }] },
    });
    const result = await run(agent, 'q');
    expect(result.stopReason).toBe('guardrail_blocked');
    expect(result.guardrail).toEqual({ name: 'polite', stage: 'output', message: 'rude' });
    expect(result.text).toBe('');
    expect(JSON.stringify(result.history)).not.toContain('rude answer');
    expect(result.modelCalls).toBe(1);
  });

  it('checks the decoded structured output, after the decode, also in the tool-use phase', async () => {
    const values: unknown[] = [];
    const agent = defineAgent({
      name: 'typed',
      instructions: '',
      model: scriptedModel([
        { toolCalls: [{ name: 'echo', args: { text: 'x' } }], stopReason: 'tool_use' },
        { text: '{"total": 7}' },
      ]),
      tools: [echo],
      output: z.object({ total: z.number() }),
      guardrails: {
        output: [
          {
            name: 'small',
            check: (value) => {
              values.push(value);
              return (value as { total: number }).total > 5
                ? { decision: 'block', message: 'too big' }
                : { decision: 'allow' };
            },
          },
        ],
      },
    });
    const result = await run(agent, 'sum');
    expect(values).toEqual([{ total: 7 }]);
    expect(result.stopReason).toBe('guardrail_blocked');
    expect(result.output).toBeUndefined();
  });

  it('checks the final-output phase answer (no tools) and lets a passing one complete', async () => {
    const agent = defineAgent({
      name: 'typed',
      instructions: '',
      model: scriptedModel([{ text: 'nope' }, { text: '{"total": 2}' }]),
      output: z.object({ total: z.number() }),
      guardrails: { output: [{ name: 'small', check: decide('allow') }] },
    });
    const result = await run(agent, 'sum');
    expect(result.stopReason).toBe('completed');
    expect(result.output).toEqual({ total: 2 });
  });
});

describe('tool guardrails', () => {
  it('tool input allow and warn: the tool runs; each decision is an event naming the call', async () => {
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: toolTurns(),
      tools: [echo],
      guardrails: {
        toolInput: [
          { name: 'ok', check: decide('allow') },
          { name: 'hm', check: decide('warn', 'odd') },
        ],
      },
    });
    const s = stream(agent, 'go');
    const events = await collect(s);
    const result = await s.result;
    expect(result.stopReason).toBe('completed');
    expect(result.steps[0]?.toolCalls[0]?.result).toBe('echo: hi');
    expect(guardrailEvents(events)).toEqual([
      { guardrail: 'ok', stage: 'tool_input', decision: 'allow', callId: 'c1', tool: 'echo' },
      {
        guardrail: 'hm',
        stage: 'tool_input',
        decision: 'warn',
        message: 'odd',
        callId: 'c1',
        tool: 'echo',
      },
    ]);
  });

  it('tool input block: the tool never runs and the run ends guardrail_blocked with a valid history', async () => {
    let ran = false;
    const spy = tool({
      name: 'echo',
      description: 'echoes',
      input: z.object({ text: z.string() }),
      execute: () => {
        ran = true;
        return 'ran';
      },
    });
    const args: unknown[] = [];
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: toolTurns(),
      tools: [spy],
      guardrails: {
        toolInput: [
          {
            name: 'no-echo',
            check: (value) => {
              args.push(value);
              return { decision: 'block', message: 'not allowed' };
            },
          },
        ],
      },
    });
    const result = await run(agent, 'go');
    expect(ran).toBe(false);
    expect(args).toEqual([{ text: 'hi' }]);
    expect(result.stopReason).toBe('guardrail_blocked');
    expect(result.guardrail).toEqual({
      name: 'no-echo',
      stage: 'tool_input',
      message: 'not allowed',
      tool: 'echo',
      callId: 'c1',
    });
    expect(result.toolCallCount).toBe(0);
    expect(result.steps[0]?.toolCalls[0]?.result).toContain('blocked by guardrail "no-echo"');
  });

  it("tool input: the check gets the real arguments, its text has the tool's secret arguments redacted", async () => {
    const login = tool({
      name: 'login',
      description: 'logs in',
      input: z.object({ user: z.string(), password: z.string() }),
      secret: ['password'],
      execute: () => 'ok',
    });
    const seen: unknown[] = [];
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([
        {
          toolCalls: [{ name: 'login', args: { user: 'ann', password: 'hunter2' } }],
          stopReason: 'tool_use',
        },
        { text: 'in' },
      ]),
      tools: [login],
      guardrails: {
        toolInput: [
          {
            name: 'spy',
            check: (value, info) => {
              seen.push(value, info.text);
              return { decision: 'allow' };
            },
          },
        ],
      },
    });
    await run(agent, 'go');
    expect(seen[0]).toEqual({ user: 'ann', password: 'hunter2' });
    expect(seen[1]).toContain('ann');
    expect(seen[1]).not.toContain('hunter2');
  });

  it("tool input block with onBlock 'answer': the model is told and the run goes on", async () => {
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: toolTurns(),
      tools: [echo],
      guardrails: { toolInput: [{ name: 'no-echo', onBlock: 'answer', check: decide('block', 'nope') }] },
    });
    const result = await run(agent, 'go');
    expect(result.stopReason).toBe('completed');
    expect(result.text).toBe('done');
    expect(result.steps[0]?.toolCalls[0]).toMatchObject({ isError: true });
    expect(result.steps[0]?.toolCalls[0]?.result).toContain('nope');
  });

  it('tool output: allow and warn pass the result; block keeps it from the model and ends the run', async () => {
    for (const decision of ['allow', 'warn'] as const) {
      const agent = defineAgent({
        name: 'a',
        instructions: '',
        model: toolTurns(),
        tools: [echo],
        guardrails: { toolOutput: [{ name: 'out', check: decide(decision) }] },
      });
      const result = await run(agent, 'go');
      expect(result.stopReason).toBe('completed');
      expect(result.steps[0]?.toolCalls[0]?.result).toBe('echo: hi');
    }
    const model = toolTurns();
    const seen: unknown[] = [];
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model,
      tools: [echo],
      guardrails: {
        toolOutput: [
          {
            name: 'leak',
            check: (value) => {
              seen.push(value);
              return { decision: 'block', message: 'leaks' };
            },
          },
        ],
      },
    });
    const result = await run(agent, 'go');
    expect(seen).toEqual(['echo: hi']);
    expect(model.calls).toBe(1);
    expect(result.stopReason).toBe('guardrail_blocked');
    expect(result.guardrail).toMatchObject({ name: 'leak', stage: 'tool_output', tool: 'echo' });
    expect(JSON.stringify(result.history)).not.toContain('echo: hi');
    expect(result.toolCallCount).toBe(1);
  });
});

describe('failing checks', () => {
  it('a check that throws blocks (fail closed) with a message saying so', async () => {
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: 'x' }]),
      guardrails: {
        input: [
          {
            name: 'buggy',
            check: () => {
              throw new Error('kaboom');
            },
          },
        ],
      },
    });
    const result = await run(agent, 'hi');
    expect(result.stopReason).toBe('guardrail_blocked');
    expect(result.guardrail?.message).toBe('the check failed: kaboom');
  });

  it('a check that times out blocks; a rejected promise too; onError warn lets the run go on', async () => {
    const never: GuardrailOptions = {
      name: 'hangs',
      timeoutMs: 20,
      check: () => new Promise(() => undefined),
    };
    const timedOut = await run(
      defineAgent({
        name: 'a',
        instructions: '',
        model: scriptedModel([{ text: 'x' }]),
        guardrails: { output: [never] },
      }),
      'hi',
    );
    expect(timedOut.stopReason).toBe('guardrail_blocked');
    expect(timedOut.guardrail?.message).toBe('the check did not answer within 20 ms');

    const rejected = await run(
      defineAgent({
        name: 'a',
        instructions: '',
        model: scriptedModel([{ text: 'x' }]),
        guardrails: { output: [{ name: 'rejects', check: () => Promise.reject(new Error('down')) }] },
      }),
      'hi',
    );
    expect(rejected.guardrail?.message).toBe('the check failed: down');

    const lenient = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: 'x' }]),
      guardrails: { output: [{ ...never, onError: 'warn' }] },
    });
    const s = stream(lenient, 'hi');
    const events = await collect(s);
    expect((await s.result).stopReason).toBe('completed');
    expect(guardrailEvents(events)).toEqual([
      {
        guardrail: 'hangs',
        stage: 'output',
        decision: 'warn',
        message: 'the check did not answer within 20 ms',
      },
    ]);
  });

  it('a block leaves no check unhandled: a slower check that rejects later is ignored', async () => {
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: 'x' }]),
      guardrails: {
        input: [
          {
            name: 'late-failure',
            check: () => new Promise((_resolve, reject) => setTimeout(() => reject(new Error('late')), 5)),
          },
          { name: 'quick-block', check: decide('block', 'no') },
        ],
      },
    });
    const result = await run(agent, 'hi');
    expect(result.guardrail?.name).toBe('quick-block');
    await new Promise((resolve) => setTimeout(resolve, 20));
  });

  it('a check that returns no verdict blocks', async () => {
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: 'x' }]),
      guardrails: { input: [{ name: 'sloppy', check: (() => 'yes') as unknown as GuardrailCheck }] },
    });
    const result = await run(agent, 'hi');
    expect(result.stopReason).toBe('guardrail_blocked');
    expect(result.guardrail?.message).toContain('no verdict');
  });
});

describe('definitions', () => {
  it('bad guardrails fail at defineAgent with a ConfigError', () => {
    const model = scriptedModel([]);
    const define = (guardrails: unknown) => () =>
      defineAgent({ name: 'a', instructions: '', model, guardrails: guardrails as never });
    expect(define({ inputs: [] })).toThrow(ConfigError);
    expect(define({ input: [{ name: 'x' }] })).toThrow(/check must be a function/);
    expect(define({ input: [{ name: 'bad name!', check: decide('allow') }] })).toThrow(ConfigError);
    expect(
      define({
        input: [
          { name: 'x', check: decide('allow') },
          { name: 'x', check: decide('allow') },
        ],
      }),
    ).toThrow(/twice/);
    expect(define({ output: [{ name: 'x', mode: 'parallel', check: decide('allow') }] })).toThrow(/input/);
    expect(define({ input: [{ name: 'x', streaming: true, check: decide('allow') }] })).toThrow(/output/);
    expect(define({ input: [{ name: 'x', timeoutMs: -1, check: decide('allow') }] })).toThrow(/timeoutMs/);
  });

  it('an agent without guardrails has none, and its runs are unchanged', () => {
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel([]) });
    expect(agent.guardrails).toBeUndefined();
    const empty = defineAgent({ name: 'a', instructions: '', model: scriptedModel([]), guardrails: {} });
    expect(empty.guardrails).toBeUndefined();
  });

  it('guardrails of a run with a budget: their decisions do not touch the budget', async () => {
    const resources = createResourceManager();
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: 'fine', usage: { input: 3, output: 2 } }]),
      guardrails: { input: [{ name: 'in', check: decide('allow') }] },
    });
    const result = await run(agent, 'hi', { resources, sessionId: 'budgeted' });
    expect(result.stopReason).toBe('completed');
    expect(resources.usage({ session: 'budgeted' }).session?.spentTokens).toBe(5);
    resources.stop();
  });
});
