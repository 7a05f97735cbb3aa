import {
  defineAgent,
  type ModelProvider,
  type ModelResponse,
  type RunEvent,
  run,
  stream,
  tool,
} from 'troupe';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * A plain run's model call is answered straight into its machine, without a promise of its own per call: a
 * provider's answer, its rejection and a throw out of `generate` itself each reach the run once, in order.
 */

const usage = { input: 1, output: 1, cached: 0, reasoning: 0 };

const step = tool({
  name: 'step',
  description: 'one step',
  input: z.object({ n: z.number() }),
  execute: ({ n }) => `ok ${n}`,
});

/** A provider answering `turns` in order; a turn that is an Error is thrown out of `generate` before any promise. */
function model(turns: (ModelResponse | Error | Promise<ModelResponse>)[]): ModelProvider & { calls: number } {
  const provider = {
    provider: 'test',
    model: 'answers',
    calls: 0,
    // Not async: a turn that is an Error is thrown before any promise is made.
    generate(): Promise<ModelResponse> {
      const turn = turns[provider.calls++];
      if (turn instanceof Error) throw turn;
      if (turn === undefined) throw new Error('no more turns');
      return Promise.resolve(turn);
    },
  };
  return provider;
}

const toolTurn = (n: number): ModelResponse => ({
  text: '',
  toolCalls: [{ id: `c${n}`, name: 'step', args: { n } }],
  stopReason: 'tool_use',
  usage,
});
const textTurn: ModelResponse = { text: 'done', toolCalls: [], stopReason: 'end_turn', usage };

describe('a plain model call answered into its run', () => {
  it('runs turns a provider answers with settled and pending promises', async () => {
    const provider = model([Promise.resolve(toolTurn(1)), toolTurn(2), Promise.resolve(textTurn)]);
    const result = await run(
      defineAgent({ name: 'a', instructions: 'go', model: provider, tools: [step] }),
      'go',
    );
    expect(result.status).toBe('completed');
    expect(result.text).toBe('done');
    expect(result.steps.map((s) => s.toolCalls.map((c) => c.result))).toEqual([['ok 1'], ['ok 2'], []]);
    expect(provider.calls).toBe(3);
  });

  it('fails the run once with the error a provider throws out of generate, after its tool step', async () => {
    const provider = model([toolTurn(1), new Error('provider down')]);
    const events: RunEvent[] = [];
    const s = stream(defineAgent({ name: 'a', instructions: 'go', model: provider, tools: [step] }), 'go');
    for await (const event of s) events.push(event);
    const result = await s.result;
    expect(result.status).toBe('failed');
    expect(result.error?.message).toBe('provider down');
    expect(provider.calls).toBe(2);
    const errors = events.filter((event) => event.type === 'error');
    expect(errors).toHaveLength(1);
    // The tool step finished before the failing call was answered; the run ends after the error.
    const types = events.map((event) => event.type);
    expect(types.indexOf('tool_response')).toBeLessThan(types.indexOf('error'));
    expect(types.at(-1)).toBe('run_end');
  });

  it('fails the run with a provider rejection', async () => {
    const provider = model([Promise.reject(new Error('rejected')) as Promise<ModelResponse>]);
    const result = await run(defineAgent({ name: 'a', instructions: '', model: provider }), 'go');
    expect(result.status).toBe('failed');
    expect(result.error?.message).toBe('rejected');
  });
});
