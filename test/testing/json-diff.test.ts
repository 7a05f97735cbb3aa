import { describe, expect, it } from 'vitest';
import { formatDifferences, jsonDifferences } from '../../src/testing/json-diff.ts';

describe('jsonDifferences', () => {
  it('finds each difference by path: changed, missing and extra values, arrays by index', () => {
    const expected = {
      messages: [{ role: 'user', content: 'a' }, { role: 'assistant' }],
      settings: { t: 1 },
    };
    const actual = { messages: [{ role: 'user', content: 'b' }], settings: { t: 1, 'top-p': 2 } };
    expect(jsonDifferences(expected, actual)).toEqual([
      { path: 'messages[0].content', expected: 'a', actual: 'b' },
      { path: 'messages[1]', expected: { role: 'assistant' }, actual: undefined },
      { path: 'settings["top-p"]', expected: undefined, actual: 2 },
    ]);
    expect(jsonDifferences({ a: [1, 2] }, { a: [1, 2] })).toEqual([]);
    expect(jsonDifferences(1, 2)).toEqual([{ path: '(the whole value)', expected: 1, actual: 2 }]);
  });

  it('skips ignored paths, with * for any one key or index', () => {
    const expected = {
      messages: [
        { content: 'a', role: 'user' },
        { content: 'b', role: 'user' },
      ],
      settings: { t: 1 },
    };
    const actual = {
      messages: [
        { content: 'x', role: 'user' },
        { content: 'y', role: 'tool' },
      ],
      settings: { t: 2 },
    };
    expect(jsonDifferences(expected, actual, ['messages[*].content', 'settings'])).toEqual([
      { path: 'messages[1].role', expected: 'user', actual: 'tool' },
    ]);
    expect(jsonDifferences(expected, actual, ['messages[1]', 'messages[0].content', 'settings.t'])).toEqual(
      [],
    );
  });

  it('formats one line per difference, long values cut in the middle, and a count of the rest', () => {
    const long = 'x'.repeat(200);
    const text = formatDifferences([
      { path: 'a', expected: 'short', actual: undefined },
      { path: 'b', expected: long, actual: 1 },
    ]);
    expect(text.split('\n')[0]).toBe('  a: expected "short" got (missing)');
    expect(text.split('\n')[1]).toMatch(/^ {2}b: expected "x+…x+" got 1$/);
    expect(text.split('\n')[1]?.length).toBeLessThan(100);
    const many = Array.from({ length: 12 }, (_, i) => ({ path: `p${i}`, expected: i, actual: -i }));
    expect(formatDifferences(many).split('\n').at(-1)).toBe('  ... and 2 more difference(s)');
  });
});

describe('keys from the compared JSON', () => {
  it('are read as own properties only, __proto__ included', () => {
    const withProto = JSON.parse('{"__proto__": {"x": 1}, "a": 1}') as unknown;
    expect(jsonDifferences(withProto, { a: 1 })).toEqual([
      { path: '__proto__', expected: { x: 1 }, actual: undefined },
    ]);
  });
});
