import { createTerminationPolicy, type PolicyState } from 'troupe';
import { describe, expect, it } from 'vitest';
import { addCount, countOf } from '../../src/core/records.ts';
import { noCounts, response } from '../support/responses.ts';

/**
 * The loop's counters are plain records keyed by tool names the model wrote. A name such as `constructor` or
 * `__proto__` must read as a count of zero (not Object.prototype's member), and a count stored under it must be data
 * that survives the JSON round trip of a checkpoint.
 */

const policy = createTerminationPolicy({ maxDuplicateToolCalls: 2, maxToolCallsPerTool: 1 });
const call = (name: string) => response('tool_use', { calls: [{ name, args: {} }] });

describe('the per-tool cap and duplicate detection with prototype names', () => {
  it.each(['constructor', 'toString', '__proto__', 'valueOf'])('a first call of "%s" runs', (name) => {
    expect(policy(call(name), noCounts).kind).toBe('continue_with_tools');
  });

  it('a second call of "__proto__" breaks a cap of 1, with the counts read back from JSON', () => {
    const counts: Record<string, number> = {};
    addCount(counts, '__proto__');
    const state = JSON.parse(JSON.stringify({ toolCallCounts: counts, callSignatures: {} })) as PolicyState;
    expect(policy(call('__proto__'), state)).toMatchObject({ kind: 'terminate', reason: 'tool_call_limit' });
  });
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
