import { ConfigError, defineAgent, run } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/** defineAgent() refuses at definition time what would otherwise be accepted silently and go wrong in a run. */

const model = scriptedModel([]);
const base = { name: 'a', instructions: '', model };

describe('defineAgent(): output schemas JSON cannot carry', () => {
  it.each([
    ['z.date()', z.object({ when: z.date() })],
    ['z.bigint()', z.object({ n: z.bigint() })],
    ['a date deep inside', z.object({ items: z.array(z.object({ at: z.object({ d: z.date() }) })) })],
    ['z.map()', z.object({ m: z.map(z.string(), z.number()) })],
    ['z.undefined()', z.object({ u: z.undefined() })],
  ])('%s is a ConfigError, not three paid calls that end decode_failed', (_label, output) => {
    expect(() => defineAgent({ ...base, output })).toThrowError(
      /output schema asks for a value JSON cannot carry/,
    );
  });

  it('accepts JSON types, ISO date strings and transforms of JSON input', async () => {
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: '{"when":"2024-01-01T00:00:00Z","n":"3"}' }]),
      output: z.object({ when: z.iso.datetime(), n: z.string().transform(Number) }),
    });
    expect((await run(agent, 'go')).output).toEqual({ when: '2024-01-01T00:00:00Z', n: 3 });
  });
});

describe('defineAgent(): limits', () => {
  it('refuses a misspelled key, naming the closest valid one', () => {
    expect(() => defineAgent({ ...base, limits: { maxStep: 3 } as never })).toThrowError(
      /limits has no option "maxStep" \(did you mean "maxSteps"\?\)/,
    );
    expect(() => defineAgent({ ...base, limits: { toolTimeout: 5 } as never })).toThrowError(
      /did you mean "toolTimeoutMs"/,
    );
  });

  it('refuses limits that are not an object', () => {
    expect(() => defineAgent({ ...base, limits: 5 as never })).toThrowError(/limits must be an object/);
  });
});

describe('defineAgent(): settings', () => {
  it.each([
    ['a string', 'fast'],
    ['an array', [1]],
    ['a misspelled key', { temprature: 0.2 }],
    ['a string temperature', { temperature: 'low' }],
    ['a fractional maxOutputTokens', { maxOutputTokens: 10.5 }],
    ['a topP above 1', { topP: 2 }],
    ['stopSequences that are not strings', { stopSequences: [1] }],
    ['providerOptions that are not JSON', { providerOptions: { at: new Date() } }],
  ])('refuses %s', (_label, settings) => {
    expect(() => defineAgent({ ...base, settings: settings as never })).toThrowError(ConfigError);
  });

  it('names the closest key for a typo', () => {
    expect(() => defineAgent({ ...base, settings: { maxTokens: 5 } as never })).toThrowError(
      /did you mean "maxOutputTokens"\?|valid options: maxOutputTokens/,
    );
  });

  it('keeps valid settings', () => {
    const agent = defineAgent({
      ...base,
      settings: {
        maxOutputTokens: 100,
        temperature: 0.2,
        topP: 0.9,
        stopSequences: ['END'],
        providerOptions: { a: 1 },
      },
    });
    expect(agent.settings).toEqual({
      maxOutputTokens: 100,
      temperature: 0.2,
      topP: 0.9,
      stopSequences: ['END'],
      providerOptions: { a: 1 },
    });
  });
});

describe('defineAgent(): options', () => {
  it('refuses a misspelled option, naming the closest one', () => {
    expect(() => defineAgent({ ...base, instruction: 'x' } as never)).toThrowError(
      /did you mean "instructions"/,
    );
    expect(() => defineAgent({ ...base, handoff: [] } as never)).toThrowError(/did you mean "handoffs"/);
  });
});
