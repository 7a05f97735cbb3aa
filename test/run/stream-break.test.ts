import { defineAgent, type RunEvent, stream, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/** A tool that runs until its call is aborted, and says when that happened. */
function slowLookup() {
  let release: (reason: unknown) => void = () => undefined;
  const aborted = new Promise<unknown>((resolve) => {
    release = resolve;
  });
  const lookup = tool({
    name: 'lookup',
    description: 'looks something up, slowly',
    input: z.object({ q: z.string() }),
    execute: (_input, ctx) =>
      new Promise<string>((_resolve, reject) => {
        ctx.signal.addEventListener('abort', () => {
          release(ctx.signal.reason);
          reject(ctx.signal.reason);
        });
      }),
  });
  return { lookup, aborted };
}

const lookupTurn = {
  toolCalls: [{ id: 'c1', name: 'lookup', args: { q: 'x' } }],
  stopReason: 'tool_use' as const,
};

describe('a break out of for await (… of stream())', () => {
  it('aborts a run on the single-actor path: the tool in flight is aborted and the model is not called again', async () => {
    const { lookup, aborted } = slowLookup();
    const model = scriptedModel([lookupTurn, { text: 'never' }]);
    const agent = defineAgent({ name: 'solo', instructions: '', model, tools: [lookup] });
    const running = stream(agent, 'go');
    const seen: RunEvent['type'][] = [];
    for await (const event of running) {
      seen.push(event.type);
      if (event.type === 'tool_call') break;
    }
    await aborted;
    const result = await running.result;
    expect(result.stopReason).toBe('aborted');
    expect(result.error?.message).toContain('the stream was closed before the run ended');
    expect(model.calls).toBe(1);
    expect(seen.at(-1)).toBe('tool_call');
  });

  it('stops a run in a private session (an agent with handoffs) the same way', async () => {
    const { lookup, aborted } = slowLookup();
    const model = scriptedModel([lookupTurn, { text: 'never' }]);
    const other = defineAgent({ name: 'other', instructions: '', model: scriptedModel([]) });
    const agent = defineAgent({ name: 'desk', instructions: '', model, tools: [lookup], handoffs: [other] });
    const running = stream(agent, 'go');
    for await (const event of running) if (event.type === 'tool_call') break;
    await aborted;
    const result = await running.result;
    expect(result.stopReason).toBe('aborted');
    expect(model.calls).toBe(1);
  });

  it('stops it when the reader of steps() breaks too', async () => {
    const { lookup } = slowLookup();
    const model = scriptedModel([{ ...lookupTurn, text: 'let me look' }, { text: 'never' }]);
    const agent = defineAgent({ name: 'solo', instructions: '', model, tools: [lookup] });
    const running = stream(agent, 'go');
    for await (const step of running.steps()) if (step.type === 'thinking') break;
    const result = await running.result;
    expect(result.stopReason).toBe('aborted');
    expect(model.calls).toBe(1);
  });

  it('leaves a run that was read to its end as it finished', async () => {
    const model = scriptedModel([{ text: 'hello' }]);
    const agent = defineAgent({ name: 'solo', instructions: '', model });
    const running = stream(agent, 'go');
    for await (const event of running) if (event.type === 'run_end') break;
    const result = await running.result;
    expect(result.status).toBe('completed');
    expect(result.text).toBe('hello');
  });
});
