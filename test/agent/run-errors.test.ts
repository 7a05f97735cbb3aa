import { defineAgent, type ErrorInfo, RunStopped, run, stream, TroupeError, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';

const lookup = tool({
  name: 'lookup',
  description: 'Looks something up.',
  input: z.object({ q: z.string() }),
  execute: ({ q }) => `found ${q}`,
});

describe('a refusal', () => {
  it('is the result text when the model refuses in the final-output phase (agent without tools)', async () => {
    const agent = defineAgent({
      name: 'careful',
      instructions: '',
      model: scriptedModel([{ refusal: 'I cannot help with that.', stopReason: 'refusal' }]),
    });
    const result = await run(agent, 'something bad');
    expect(result).toMatchObject({
      status: 'stopped',
      stopReason: 'guardrail_blocked',
      text: 'I cannot help with that.',
      error: { name: 'RunStopped', code: 'guardrail_blocked' },
    });
  });

  it('is the result text when the model refuses while tools are offered, in run() and stream()', async () => {
    const agent = defineAgent({
      name: 'careful',
      instructions: '',
      model: scriptedModel([{ refusal: 'No, I will not.', stopReason: 'refusal' }], { loop: true }),
      tools: [lookup],
    });
    expect((await run(agent, 'x')).text).toBe('No, I will not.');
    const s = stream(agent, 'x');
    for await (const _ of s);
    expect(await s.result).toMatchObject({ stopReason: 'guardrail_blocked', text: 'No, I will not.' });
  });

  it('is the result text when a handoff target refuses (the session path)', async () => {
    const target = defineAgent({
      name: 'target',
      instructions: '',
      model: scriptedModel([{ refusal: 'Not my department.', stopReason: 'content_filter' }]),
    });
    const entry = defineAgent({
      name: 'entry',
      instructions: '',
      model: scriptedModel([{ toolCalls: [{ name: 'transfer_to_target' }], stopReason: 'tool_use' }]),
      handoffs: [target],
    });
    const result = await run(entry, 'x');
    expect(result).toMatchObject({
      agent: 'target',
      stopReason: 'guardrail_blocked',
      text: 'Not my department.',
    });
  });

  it('keeps the text when the model gave both text and a refusal', async () => {
    const agent = defineAgent({
      name: 'careful',
      instructions: '',
      model: scriptedModel([{ text: 'Sorry.', refusal: 'policy 7', stopReason: 'refusal' }]),
    });
    expect((await run(agent, 'x')).text).toBe('Sorry.');
  });
});

describe('RunStopped', () => {
  it('is an exported error class whose name is the one results use, and narrows a result error', async () => {
    const agent = defineAgent({
      name: 'looper',
      instructions: '',
      model: scriptedModel([{ toolCalls: [{ name: 'lookup', args: { q: 'a' } }], stopReason: 'tool_use' }], {
        loop: true,
      }),
      tools: [lookup],
      limits: { maxDuplicateToolCalls: 1, finalAnswerOnToolLimits: false },
    });
    const result = await run(agent, 'x');
    expect(result.stopReason).toBe('duplicate_tool_call');
    const error = result.error;
    expect(RunStopped.is(error)).toBe(true);
    if (!RunStopped.is(error)) return;
    expectTypeOf(error.code).toEqualTypeOf<RunStopped['code']>();
    const thrown = RunStopped.from(error);
    expect(thrown).toBeInstanceOf(RunStopped);
    expect(thrown).toBeInstanceOf(TroupeError);
    expect(thrown).toMatchObject({ name: error.name, code: 'duplicate_tool_call', message: error.message });
  });

  it('does not claim errors that are not stops', async () => {
    const agent = defineAgent({
      name: 'broken',
      instructions: '',
      model: scriptedModel([{ error: 'boom' }]),
    });
    const result = await run(agent, 'x');
    expect(result.stopReason).toBe('error');
    expect(result.error).toMatchObject({ name: 'ModelError', code: 'model_unknown' });
    expect(RunStopped.is(result.error)).toBe(false);
    const other: ErrorInfo = { name: 'TypeError', code: 'error', message: 'x' };
    expect(RunStopped.is(other)).toBe(false);
    expect(RunStopped.is(undefined)).toBe(false);
  });
});
