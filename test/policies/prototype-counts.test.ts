import { createTerminationPolicy } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { addCount, countOf } from '../../src/core/records.ts';
import { noCounts, response } from '../support/responses.ts';

/**
 * The loop's counters are plain records keyed by tool names the model wrote. A name such as `constructor` or
 * `__proto__` must read as a count of zero (not Object.prototype's member), and a count stored under it must be data
 * that survives the JSON round trip of a checkpoint.
 */

const policy = createTerminationPolicy({ maxDuplicateToolCalls: 2, maxToolCallsPerTool: 1 });

describe('the per-tool cap and duplicate detection with prototype names', () => {
  it.each(['constructor', 'toString', 'valueOf', 'hasOwnProperty'])(
    'two calls of "%s" in one turn break a cap of 1',
    (name) => {
      const turn = response('tool_use', {
        calls: [
          { name, args: { n: 1 } },
          { name, args: { n: 2 } },
        ],
      });
      expect(policy(turn, noCounts)).toMatchObject({ kind: 'terminate', reason: 'tool_call_limit' });
    },
  );
});

describe('addCount / countOf', () => {
  it('store "__proto__" as an own property, leave the prototype alone, and round-trip through JSON', () => {
    const counts: Record<string, number> = {};
    addCount(counts, '__proto__');
    addCount(counts, '__proto__');
    addCount(counts, 'constructor');
    expect(Object.getPrototypeOf(counts)).toBe(Object.prototype);
    expect(countOf(counts, '__proto__')).toBe(2);
    expect(countOf(counts, 'constructor')).toBe(1);
    expect(countOf(counts, 'toString')).toBe(0);
    const copy = JSON.parse(JSON.stringify({ ...counts })) as Record<string, number>;
    expect(countOf(copy, '__proto__')).toBe(2);
    expect(Object.keys(copy).sort()).toEqual(['__proto__', 'constructor']);
  });
});
