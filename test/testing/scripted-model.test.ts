import { readFile } from 'node:fs/promises';
import {
  defineAgent,
  type ModelDelta,
  ModelError,
  type ModelRequest,
  type RunEvent,
  run,
  stream,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';

function request(onDelta?: (delta: ModelDelta) => void): ModelRequest {
  return {
    messages: [{ role: 'user', content: 'hi' }],
    tools: [],
    settings: {},
    signal: new AbortController().signal,
    ...(onDelta ? { onDelta } : {}),
  };
}

async function textDeltas(turnText: string): Promise<string[]> {
  const pieces: string[] = [];
  await scriptedModel([{ text: turnText }]).generate(
    request((delta) => {
      if (delta.type === 'text') pieces.push(delta.text);
    }),
  );
  return pieces;
}

describe('scriptedModel: text turns stream as deltas', () => {
  it('cuts a text after whitespace into a few pieces that add up to it, the same way every time', async () => {
    const text = 'The quick brown fox jumps over the lazy dog, twice.';
    const pieces = await textDeltas(text);
    expect(pieces.join('')).toBe(text);
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.length).toBeLessThanOrEqual(4);
    expect(await textDeltas(text)).toEqual(pieces);
    expect(await textDeltas('one')).toEqual(['one']);
    expect(await textDeltas('  padded  text ')).toEqual(['  ', 'padded  ', 'text ']);
    expect(await textDeltas('')).toEqual([]);
  });

  it('streams exactly the given `deltas` when a turn has them', async () => {
    const pieces: string[] = [];
    const model = scriptedModel([{ deltas: ['a', 'bc', 'd'] }]);
    const response = await model.generate(
      request((delta) => {
        if (delta.type === 'text') pieces.push(delta.text);
      }),
    );
    expect(pieces).toEqual(['a', 'bc', 'd']);
    expect(response.text).toBe('abcd');
  });

  it('gives a stream() of a scripted agent delta events that spell the answer', async () => {
    const agent = defineAgent({
      name: 'talker',
      instructions: '',
      model: scriptedModel([{ text: 'Hello there, how are you today?' }]),
    });
    const events: RunEvent[] = [];
    const s = stream(agent, 'hi');
    for await (const event of s) events.push(event);
    const deltas = events.flatMap((event) => (event.type === 'delta' ? [event.data.content] : []));
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('Hello there, how are you today?');
    expect((await s.result).text).toBe('Hello there, how are you today?');
  });
});

describe('scriptedModel: loop', () => {
  it('plays the turns again from the first once they run out', async () => {
    const model = scriptedModel([{ text: 'one' }, { text: 'two' }], { loop: true });
    const texts: string[] = [];
    for (let i = 0; i < 5; i++) texts.push((await model.generate(request())).text);
    expect(texts).toEqual(['one', 'two', 'one', 'two', 'one']);
    expect(model.calls).toBe(5);
  });

  it('without loop, a call past the last turn fails with the documented kind and code', async () => {
    const model = scriptedModel([{ text: 'one' }]);
    await model.generate(request());
    const error = await model.generate(request()).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ kind: 'script_exhausted', code: 'model_script_exhausted' });

    const agent = defineAgent({ name: 'once', instructions: '', model: scriptedModel([{ text: 'hi' }]) });
    await run(agent, 'first');
    const second = await run(agent, 'second');
    expect(second).toMatchObject({ status: 'failed', stopReason: 'error' });
    // The testing guide says which code a user sees; it must be the one a run reports.
    const guide = await readFile(new URL('../../docs/testing.md', import.meta.url), 'utf8');
    const testing = guide.slice(guide.indexOf('## The scripted model'), guide.indexOf('## Assertions'));
    expect(testing).toContain(`result.error.code ===\n'${second.error?.code}'`);
    expect(second.error?.code).toBe('model_script_exhausted');
  });
});
