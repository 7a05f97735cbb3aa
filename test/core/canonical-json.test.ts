import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stacklessError } from '../../src/core/abort.ts';
import { canonicalHash, canonicalJson, hashText } from '../../src/core/json.ts';

/** The straightforward definition the loop version must match byte for byte. */
function reference(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((item) => reference(item)).join(',')}]`;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record)
    .filter((key) => record[key] !== undefined)
    .sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${reference(record[key])}`).join(',')}}`;
}

describe('canonicalJson', () => {
  it('matches the reference definition on arbitrary values, undefined members included', () => {
    fc.assert(
      fc.property(fc.anything({ withObjectString: false, withNullPrototype: true }), (value) => {
        expect(canonicalJson(value)).toBe(reference(value));
      }),
      { numRuns: 500 },
    );
  });

  it('sorts keys at every depth and drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, undefined, 'x'], c: undefined } })).toBe(
      '{"a":{"d":[1,null,"x"]},"b":1}',
    );
    expect(canonicalJson([])).toBe('[]');
    expect(canonicalJson({})).toBe('{}');
    expect(canonicalJson({ a: undefined })).toBe('{}');
  });
});

describe('canonicalHash', () => {
  it('is the hash of the canonical text, on arbitrary values and strings JSON escapes', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.anything({ withObjectString: false, withNullPrototype: true }),
          fc.string({ unit: 'binary' }),
          fc.dictionary(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' })),
        ),
        (value) => {
          expect(canonicalHash(value)).toBe(hashText(canonicalJson(value)));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('hashes quotes, backslashes, control characters, surrogates and numbers as JSON writes them', () => {
    for (const value of [
      'a"b',
      'a\\b',
      'line\nbreak',
      '\u0001',
      '\ud83d\ude00',
      '\ud800 alone',
      { b: [1, -0, 1.5e300, Number.NaN, Number.POSITIVE_INFINITY], a: { y: true, x: null, z: undefined } },
      [undefined, () => 1, Symbol('s')],
    ])
      expect(canonicalHash(value)).toBe(hashText(canonicalJson(value)));
  });
});

describe('stacklessError', () => {
  it('is an Error with the message and leaves the stack limit as it was', () => {
    const limit = Error.stackTraceLimit;
    const error = stacklessError('gone');
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe('gone');
    expect(Error.stackTraceLimit).toBe(limit);
  });
});
