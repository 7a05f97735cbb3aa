import { defineAgent, type JsonValue, run, tool, validateHistory } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ModelRequest } from '../../src/core/model.ts';
import { defaultOutputEstimate, estimateRequest } from '../../src/resources/resource-binding.ts';

/**
 * Arguments nested thousands of levels deep (a model can write them; JSON.parse accepts them) used to overflow the
 * stack in the loop's recursive steps and fail the run. They are an error result the model reads, like any other
 * invalid arguments.
 */

function nested(depth: number): JsonValue {
  let value: JsonValue = 1;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

const take = tool({
  name: 'take',
  description: 'Takes anything',
  input: z.object({ a: z.unknown() }),
  execute: () => 'ran',
});

describe('deeply nested tool arguments', () => {
  it.each([5_000, 100_000])(
    '%i levels: an error result for the model, and the run completes',
    async (depth) => {
      const agent = defineAgent({
        name: 'a',
        instructions: '',
        tools: [take],
        model: scriptedModel([
          { toolCalls: [{ id: 'c1', name: 'take', args: nested(depth) }], stopReason: 'tool_use' },
          { text: 'ok', stopReason: 'end_turn' },
        ]),
      });
      const result = await run(agent, 'go', { budget: { tokens: 1e7 } });
      expect(result).toMatchObject({ status: 'completed', text: 'ok' });
      const answer = result.history.find((message) => message.role === 'tool');
      expect(answer).toMatchObject({ isError: true });
      expect(answer?.content).toContain('invalid arguments');
      expect(answer?.content).toContain('nests deeper than');
      expect(() => validateHistory(result.history)).not.toThrow();
    },
  );

  it('arguments a few levels deep still reach the tool', async () => {
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      tools: [take],
      model: scriptedModel([
        { toolCalls: [{ id: 'c1', name: 'take', args: { a: nested(20) } }], stopReason: 'tool_use' },
        { text: 'ok', stopReason: 'end_turn' },
      ]),
    });
    const result = await run(agent, 'go');
    expect(result.steps[0]?.toolCalls[0]).toMatchObject({ result: 'ran', isError: false });
  });

  it('a history holding such arguments is refused before the run starts', async () => {
    const agent = defineAgent({ name: 'a', instructions: '', tools: [take], model: scriptedModel([]) });
    const history = [
      {
        role: 'assistant' as const,
        content: '',
        toolCalls: [{ id: 't', name: 'take', args: nested(5_000) }],
      },
      { role: 'tool' as const, toolCallId: 't', content: 'x' },
    ];
    await expect(run(agent, 'go', { history })).rejects.toThrow(/nests deeper than/);
  });
});

describe('a tool schema whose refinement or transform throws', () => {
  it('is an error result for the model, not an unhandled rejection that leaves the run hanging', async () => {
    const fragile = tool({
      name: 'fragile',
      description: 'Has a buggy schema',
      input: z.object({
        a: z.string().transform((value): string => {
          throw new Error(`cannot transform ${value}`);
        }),
      }),
      execute: () => 'ran',
    });
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      tools: [fragile],
      model: scriptedModel([
        { toolCalls: [{ id: 'c1', name: 'fragile', args: { a: 'x' } }], stopReason: 'tool_use' },
        { text: 'ok', stopReason: 'end_turn' },
      ]),
    });
    const result = await run(agent, 'go');
    expect(result).toMatchObject({ status: 'completed', text: 'ok' });
    expect(result.steps[0]?.toolCalls[0]).toMatchObject({ isError: true });
    expect(result.steps[0]?.toolCalls[0]?.result).toContain('cannot transform x');
  });
});

describe('the budget estimate never throws', () => {
  const request = (messages: unknown[]): ModelRequest => ({
    messages: messages as ModelRequest['messages'],
    tools: [],
    settings: {},
    signal: new AbortController().signal,
  });

  it('counts what it can measure in malformed messages and skips the rest', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const estimate = estimateRequest(
      request([
        { role: 'user', content: [null, 42, { type: 'video' }, { type: 'text', text: 'abcd' }] },
        { role: 'user', content: null },
        null,
        { role: 'assistant', content: '', toolCalls: [null, { name: 'x', args: cyclic }, { args: 10n }] },
        { role: 'assistant', content: '', toolCalls: [{ name: 't', args: nested(100_000) }] },
      ]),
    );
    expect(estimate.input).toBeGreaterThan(0);
    expect(estimate.output).toBe(defaultOutputEstimate);
  });
});
