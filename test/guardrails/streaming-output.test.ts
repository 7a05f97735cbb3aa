import { blockedPatterns, defineAgent, type RunEvent, stream, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/** Streaming output guardrails: text checked as it arrives; after a block, no further delta of the reply. */

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const seen: T[] = [];
  for await (const item of items) seen.push(item);
  return seen;
}

const deltasOf = (events: RunEvent[]) =>
  events.flatMap((e) => (e.type === 'delta' ? [(e.data as { content: string }).content] : []));

describe('streaming output guardrails', () => {
  it('a synchronous check: deltas before the block are delivered at once, none from the block on', async () => {
    let callSignal: AbortSignal | undefined;
    const model = scriptedModel((request) => {
      callSignal = request.signal;
      return { deltas: ['Hello ', 'world, ', 'the SECRET ', 'is 42.'] };
    });
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model,
      guardrails: { output: [blockedPatterns([/SECRET/], { streaming: true })] },
    });
    const s = stream(agent, 'tell me');
    const events = await collect(s);
    const result = await s.result;
    expect(deltasOf(events)).toEqual(['Hello ', 'world, ']);
    expect(callSignal?.aborted).toBe(true);
    expect(result.stopReason).toBe('guardrail_blocked');
    expect(result.guardrail).toMatchObject({ name: 'blocked-patterns', stage: 'output' });
    expect(result.text).toBe('');
    expect(JSON.stringify(result.history)).not.toContain('SECRET');
    // The block is the last guardrail decision, and nothing of the reply follows it.
    const blockAt = events.findIndex((e) => e.type === 'guardrail' && e.data.decision === 'block');
    expect(blockAt).toBeGreaterThan(0);
    expect(events.slice(blockAt).some((e) => e.type === 'delta')).toBe(false);
  });

  it('an asynchronous check: deltas wait for the check covering them; after a block none is delivered', async () => {
    const checked: string[] = [];
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ deltas: ['one ', 'two ', 'three ', 'BAD ', 'five'] }]),
      guardrails: {
        output: [
          {
            name: 'slow',
            streaming: true,
            check: (_value, info) => {
              checked.push(info.text);
              const verdict = info.text.includes('BAD')
                ? { decision: 'block' as const, message: 'bad word' }
                : { decision: 'allow' as const };
              return new Promise((resolve) => setTimeout(() => resolve(verdict), 5));
            },
          },
        ],
      },
    });
    const s = stream(agent, 'count');
    const events = await collect(s);
    const result = await s.result;
    expect(result.stopReason).toBe('guardrail_blocked');
    // The first check covers 'one '; the deltas that came meanwhile are checked together, and that check blocks.
    expect(checked[0]).toBe('one ');
    expect(checked.at(-1)).toContain('BAD');
    expect(deltasOf(events)).toEqual(['one ']);
  });

  it('a reply that passes streams whole and completes; a reply that came without deltas is checked whole', async () => {
    const partials: boolean[] = [];
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ deltas: ['all ', 'fine'] }]),
      guardrails: {
        output: [
          {
            name: 'watch',
            streaming: true,
            check: (_v, info) => {
              partials.push(info.partial);
              return { decision: 'allow' };
            },
          },
        ],
      },
    });
    const s = stream(agent, 'x');
    const events = await collect(s);
    expect((await s.result).text).toBe('all fine');
    expect(deltasOf(events)).toEqual(['all ', 'fine']);
    expect(partials).toEqual([true, true]);

    // A provider that does not stream: the whole text is checked when the reply comes.
    const silent = scriptedModel([{ text: 'SECRET plan' }]);
    const quiet = defineAgent({
      name: 'q',
      instructions: '',
      model: { ...silent, generate: (request) => silent.generate({ ...request, onDelta: undefined }) },
      guardrails: { output: [blockedPatterns([/SECRET/], { streaming: true })] },
    });
    const q = stream(quiet, 'x');
    const quietEvents = await collect(q);
    expect((await q.result).stopReason).toBe('guardrail_blocked');
    expect(deltasOf(quietEvents)).toEqual([]);
  });

  it('checks the text streamed with tool calls too, and a whole-answer output guardrail still runs at the end', async () => {
    const whole: string[] = [];
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([
        { text: 'let me check', toolCalls: [{ name: 'noop', args: {} }], stopReason: 'tool_use' },
        { text: 'final' },
      ]),
      tools: [tool({ name: 'noop', description: 'does nothing', input: z.object({}), execute: () => 'ok' })],
      guardrails: {
        output: [
          blockedPatterns([/forbidden/], { streaming: true }),
          {
            name: 'whole',
            check: (_v, info) => {
              whole.push(info.text);
              return { decision: 'allow' };
            },
          },
        ],
      },
    });
    const s = stream(agent, 'x');
    const events = await collect(s);
    expect((await s.result).text).toBe('final');
    expect(whole).toEqual(['final']);
    const decisions = events.filter((e) => e.type === 'guardrail').map((e) => e.data.guardrail);
    expect(decisions.filter((name) => name === 'blocked-patterns').length).toBeGreaterThan(1);
  });
});
