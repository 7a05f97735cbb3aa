import { ConfigError, createAgentSystem, defineAgent, parallel, run, tool, validateHistory } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * Tool and agent names come from outside (the model writes the tool name it calls). Looked up on a plain object,
 * `constructor` or `toString` is found on Object.prototype: these tests pin that no lookup reads the prototype chain.
 */

const prototypeNames = ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'];

const echo = tool({
  name: 'echo',
  description: 'Echoes',
  input: z.object({ text: z.string() }),
  execute: ({ text }) => text,
});

describe('a model calling a tool named like an Object.prototype member', () => {
  it.each(prototypeNames)(
    'run(): "%s" is an unknown tool, answered with an error; the run completes',
    async (name) => {
      const model = scriptedModel([
        { toolCalls: [{ id: 'c1', name, args: {} }], stopReason: 'tool_use' },
        { text: 'done', stopReason: 'end_turn' },
      ]);
      const agent = defineAgent({ name: 'a', instructions: '', model, tools: [echo] });
      const result = await run(agent, 'go');
      expect(result).toMatchObject({ status: 'completed', stopReason: 'completed', text: 'done' });
      const answer = result.history.find((message) => message.role === 'tool');
      expect(answer).toMatchObject({ toolCallId: 'c1', isError: true });
      expect(answer?.content).toContain(`unknown tool "${name}"`);
      expect(() => validateHistory(result.history)).not.toThrow();
    },
  );

  it('calls of "__proto__" count toward maxToolCallsPerTool like any tool', async () => {
    const model = scriptedModel([
      { toolCalls: [{ id: 'c1', name: '__proto__', args: { n: 1 } }], stopReason: 'tool_use' },
      { toolCalls: [{ id: 'c2', name: '__proto__', args: { n: 2 } }], stopReason: 'tool_use' },
      { text: 'done', stopReason: 'end_turn' },
    ]);
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model,
      tools: [echo],
      limits: { maxToolCallsPerTool: 1 },
    });
    const result = await run(agent, 'go');
    expect(result.stopReason).toBe('tool_call_limit');
    expect(() => validateHistory(result.history)).not.toThrow();
  });

  it.each(prototypeNames)(
    'a session with handoffs: "%s" is no handoff, and the session keeps taking messages',
    async (name) => {
      const billing = defineAgent({
        name: 'billing',
        instructions: '',
        model: scriptedModel([{ text: 'billing here', stopReason: 'end_turn' }]),
      });
      const model = scriptedModel([
        { toolCalls: [{ id: 'c1', name, args: {} }], stopReason: 'tool_use' },
        { text: 'first', stopReason: 'end_turn' },
        { toolCalls: [{ id: 'c2', name, args: {} }], stopReason: 'tool_use' },
        { text: 'second', stopReason: 'end_turn' },
      ]);
      const triage = defineAgent({ name: 'triage', instructions: '', model, handoffs: [billing] });
      const system = createAgentSystem();
      try {
        const session = system.spawn(triage, 'hi');
        const first = await session.result;
        expect(first).toMatchObject({ status: 'completed', agent: 'triage', text: 'first' });
        const second = await session.send('again');
        expect(second).toMatchObject({ status: 'completed', agent: 'triage', text: 'second' });
        expect(session.status).toBe('idle');
        expect(() => validateHistory(second.history)).not.toThrow();
      } finally {
        await system.shutdown();
      }
    },
  );

  it('run() of an agent with handoffs: "toString" is an unknown tool, not a handoff to "[object Undefined]"', async () => {
    const billing = defineAgent({
      name: 'billing',
      instructions: '',
      model: scriptedModel([{ text: 'billing here' }]),
    });
    const triage = defineAgent({
      name: 'triage',
      instructions: '',
      handoffs: [billing],
      model: scriptedModel([
        { toolCalls: [{ id: 'c1', name: 'toString', args: {} }], stopReason: 'tool_use' },
        { text: 'still me', stopReason: 'end_turn' },
      ]),
    });
    const result = await run(triage, 'go');
    expect(result).toMatchObject({ status: 'completed', agent: 'triage', text: 'still me' });
    expect(result.path).toEqual(['triage']);
  });
});

describe('names of Object.prototype members are refused at definition time', () => {
  it.each(prototypeNames.filter((name) => /^[\w-]+$/.test(name)))('tool({ name: "%s" })', (name) => {
    expect(() => tool({ name, description: 'x', input: z.object({}), execute: () => 'x' })).toThrowError(
      ConfigError,
    );
  });

  it.each(prototypeNames)('defineAgent({ name: "%s" }) and a handoff to "%s"', (name) => {
    const model = scriptedModel([]);
    expect(() => defineAgent({ name, instructions: '', model })).toThrowError(ConfigError);
    expect(() => defineAgent({ name: 'a', instructions: '', model, handoffs: [name] })).toThrowError(
      ConfigError,
    );
  });
});

describe('parallel(..., { merge: "vote" })', () => {
  it('counts an answer that reads like a prototype member like any other', async () => {
    const voter = (name: string, text: string) =>
      defineAgent({ name, instructions: '', model: scriptedModel([{ text, stopReason: 'end_turn' }]) });
    const result = await parallel(
      [voter('a', 'constructor'), voter('b', 'constructor'), voter('c', 'other')],
      { merge: 'vote' },
    ).run('pick one');
    expect(result.status).toBe('completed');
    expect(result.text).toBe('constructor');
    expect(Object.hasOwn(result.votes ?? {}, 'constructor')).toBe(true);
    expect(result.votes?.constructor).toBe(2);
  });
});
