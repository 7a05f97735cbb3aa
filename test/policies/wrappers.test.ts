import {
  createTerminationPolicy,
  standardTerminationPolicy,
  toolCallSignature,
  withDuplicateDetection,
  withToolCallCap,
} from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { noCounts, response } from '../support/responses.ts';

const search = (q: string, extra: Record<string, string> = {}) => ({ name: 'search', args: { q, ...extra } });

describe('toolCallSignature', () => {
  it('ignores key order and distinguishes values and names', () => {
    expect(toolCallSignature({ name: 'a', args: { x: 1, y: [1, { b: 2, a: 1 }] } })).toBe(
      toolCallSignature({ name: 'a', args: { y: [1, { a: 1, b: 2 }], x: 1 } }),
    );
    expect(toolCallSignature({ name: 'a', args: { x: 1 } })).not.toBe(
      toolCallSignature({ name: 'a', args: { x: 2 } }),
    );
    expect(toolCallSignature({ name: 'a', args: { x: 1 } })).not.toBe(
      toolCallSignature({ name: 'b', args: { x: 1 } }),
    );
  });
});

describe('withDuplicateDetection (wraps the standard policy)', () => {
  const policy = withDuplicateDetection(standardTerminationPolicy, 2);
  const sig = toolCallSignature(search('x'));
  it('lets a call run up to the limit', () => {
    expect(policy(response('tool_use', { calls: [search('x')] }), noCounts).kind).toBe('continue_with_tools');
    expect(
      policy(response('tool_use', { calls: [search('x')] }), { ...noCounts, callSignatures: { [sig]: 1 } })
        .kind,
    ).toBe('continue_with_tools');
  });
  it('ends the run when the same call already ran maxDuplicateToolCalls times', () => {
    const decision = policy(response('tool_use', { calls: [search('x')] }), {
      ...noCounts,
      callSignatures: { [sig]: 2 },
    });
    expect(decision).toMatchObject({ kind: 'terminate', reason: 'duplicate_tool_call' });
  });
  it('counts repeats within one turn, and key order does not hide a duplicate', () => {
    const turn = response('tool_use', {
      calls: [
        search('x', { a: '1', b: '2' }),
        search('x', { b: '2', a: '1' }),
        search('x', { a: '1', b: '2' }),
      ],
    });
    expect(policy(turn, noCounts)).toMatchObject({ kind: 'terminate', reason: 'duplicate_tool_call' });
  });
  it('passes non-tool decisions through untouched', () => {
    expect(
      policy(response('end_turn', { text: 'hi' }), { ...noCounts, callSignatures: { [sig]: 9 } }),
    ).toMatchObject({
      kind: 'terminate_with_output',
    });
  });
});

describe('withToolCallCap', () => {
  const policy = withToolCallCap(standardTerminationPolicy, 3);
  it('allows calls up to the cap, counting this turn', () => {
    expect(
      policy(response('tool_use', { calls: [search('a'), search('b')] }), {
        ...noCounts,
        toolCallCounts: { search: 1 },
      }).kind,
    ).toBe('continue_with_tools');
  });
  it('ends the run when this turn would take a tool past the cap', () => {
    expect(
      policy(response('tool_use', { calls: [search('a'), search('b')] }), {
        ...noCounts,
        toolCallCounts: { search: 2 },
      }),
    ).toMatchObject({ kind: 'terminate', reason: 'tool_call_limit' });
  });
  it('null means unlimited', () => {
    const unlimited = withToolCallCap(standardTerminationPolicy, null);
    expect(
      unlimited(response('tool_use', { calls: [search('a')] }), {
        ...noCounts,
        toolCallCounts: { search: 1e6 },
      }).kind,
    ).toBe('continue_with_tools');
  });
});

describe('createTerminationPolicy', () => {
  it('reports an identical repeat as a duplicate even when it also breaks the cap', () => {
    const policy = createTerminationPolicy({ maxDuplicateToolCalls: 1, maxToolCallsPerTool: 1 });
    const sig = toolCallSignature(search('x'));
    expect(
      policy(response('tool_use', { calls: [search('x')] }), {
        toolCallCounts: { search: 1 },
        callSignatures: { [sig]: 1 },
      }),
    ).toMatchObject({ reason: 'duplicate_tool_call' });
    expect(
      policy(response('tool_use', { calls: [search('y')] }), {
        toolCallCounts: { search: 1 },
        callSignatures: { [sig]: 1 },
      }),
    ).toMatchObject({ reason: 'tool_call_limit' });
  });
});
