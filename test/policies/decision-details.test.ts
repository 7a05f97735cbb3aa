import type { ModelResponse } from 'troupe';
import {
  standardTerminationPolicy,
  toolCallSignature,
  withDuplicateDetection,
  withToolCallCap,
} from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { terminationPolicyFor } from '../../src/policies/termination-policy.ts';
import { noCounts, response } from '../support/responses.ts';

// What the standard policy and its wrappers tell the caller beyond the decision's kind: the messages a stopped run
// carries, the truncation flag, and the rows that must not fall through to the fallback.

const call = { name: 'search', args: { q: 'x' } };
const decide = (r: ModelResponse) => standardTerminationPolicy(r, noCounts);
const messageOf = (decision: ReturnType<typeof decide>): string =>
  decision.kind === 'terminate' ? decision.message : `(not a termination: ${decision.kind})`;

describe('standard policy: the rows a stop signal decides alone', () => {
  it('end_turn with only reasoning completes with an empty answer (the model said it is done)', () => {
    expect(decide(response('end_turn', { reasoning: true }))).toEqual({
      kind: 'terminate_with_output',
      text: '',
      truncated: false,
    });
  });
  it('stop_sequence takes the text as the answer, even with tool calls or reasoning alone', () => {
    expect(decide(response('stop_sequence', { text: 'a', calls: [call] }))).toEqual({
      kind: 'terminate_with_output',
      text: 'a',
      truncated: false,
    });
    expect(decide(response('stop_sequence', { reasoning: true }))).toEqual({
      kind: 'terminate_with_output',
      text: '',
      truncated: false,
    });
  });
  it('no stop reason: text is a complete, untruncated answer', () => {
    expect(decide(response(undefined, { text: 't' }))).toEqual({
      kind: 'terminate_with_output',
      text: 't',
      truncated: false,
    });
  });
  it('no stop reason: an empty reasoning list is no reasoning (the run completes instead of looping)', () => {
    const empty: ModelResponse = { ...response(undefined), reasoning: [] };
    expect(decide(empty)).toEqual({ kind: 'terminate_with_output', text: '', truncated: false });
  });
});

describe('standard policy: messages of a stopped run', () => {
  it('says why tool_use without calls or text cannot go on', () => {
    expect(messageOf(decide(response('tool_use')))).toBe(
      'The model reported tool_use but returned no tool call and no text.',
    );
  });
  it('tells a cut tool call from a reply cut before any text', () => {
    expect(messageOf(decide(response('max_tokens', { calls: [call] })))).toMatch(
      /max_tokens in the middle of a tool call/,
    );
    expect(messageOf(decide(response('max_tokens')))).toBe(
      'The model hit max_tokens before producing any text.',
    );
  });
  it('names a refusal or a content filter, with the refusal text when there is one', () => {
    const refused: ModelResponse = { ...response('refusal'), refusal: 'I cannot help with that' };
    expect(messageOf(decide(refused))).toBe('The model refused: I cannot help with that');
    expect(messageOf(decide(response('refusal')))).toBe('The model refused.');
    expect(messageOf(decide(response('content_filter')))).toBe('The model was stopped by a content filter.');
  });
});

describe('wrappers: messages name the tool, the count and the limit', () => {
  it('duplicate detection counts the call being refused', () => {
    const policy = withDuplicateDetection(standardTerminationPolicy, 2);
    const decision = policy(response('tool_use', { calls: [call] }), {
      ...noCounts,
      callSignatures: { [toolCallSignature(call)]: 2 },
    });
    expect(messageOf(decision)).toBe('Tool "search" was called with the same arguments 3 times (limit 2).');
  });
  it('the per-tool cap counts this turn', () => {
    const policy = withToolCallCap(standardTerminationPolicy, 3);
    const decision = policy(response('tool_use', { calls: [call, { name: 'search', args: { q: 'y' } }] }), {
      ...noCounts,
      toolCallCounts: { search: 2 },
    });
    expect(messageOf(decision)).toBe('Tool "search" would be called 4 times (limit 3 per run).');
  });
});

describe('terminationPolicyFor', () => {
  it('builds one policy per limits object and applies that object’s limits', () => {
    const strict = { maxDuplicateToolCalls: 1, maxToolCallsPerTool: null };
    const lenient = { maxDuplicateToolCalls: 5, maxToolCallsPerTool: null };
    expect(terminationPolicyFor(strict)).toBe(terminationPolicyFor(strict));
    expect(terminationPolicyFor(lenient)).not.toBe(terminationPolicyFor(strict));
    const state = { ...noCounts, callSignatures: { [toolCallSignature(call)]: 1 } };
    const turn = response('tool_use', { calls: [call] });
    expect(terminationPolicyFor(strict)(turn, state).kind).toBe('terminate');
    expect(terminationPolicyFor(lenient)(turn, state).kind).toBe('continue_with_tools');
  });
});
