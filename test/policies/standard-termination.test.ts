import { standardTerminationPolicy } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { noCounts, response } from '../support/responses.ts';

const call = { name: 'search', args: { q: 'x' } };
const decide = (r: ReturnType<typeof response>) => standardTerminationPolicy(r, noCounts);

describe('standardTerminationPolicy: reference 000 decision table, row by row', () => {
  it('tool_use with tool calls continues with tools', () => {
    expect(decide(response('tool_use', { calls: [call] }))).toMatchObject({ kind: 'continue_with_tools' });
  });
  it('tool_use without tool calls keeps the text as the answer', () => {
    expect(decide(response('tool_use', { text: 'hi' }))).toEqual({
      kind: 'terminate_with_output',
      text: 'hi',
      truncated: false,
    });
  });
  it('tool_use with neither tool calls nor text terminates with an error', () => {
    expect(decide(response('tool_use'))).toMatchObject({ kind: 'terminate', reason: 'error' });
  });
  it('end_turn checks tool calls FIRST (Gemini returns STOP with function calls)', () => {
    const decision = decide(response('end_turn', { text: 'calling', calls: [call] }));
    expect(decision.kind).toBe('continue_with_tools');
    expect(decision.kind === 'continue_with_tools' && decision.calls[0]?.name).toBe('search');
  });
  it('end_turn with text terminates with output', () => {
    expect(decide(response('end_turn', { text: 'done' }))).toEqual({
      kind: 'terminate_with_output',
      text: 'done',
      truncated: false,
    });
  });
  it('pause_turn continues the turn (its partial text is not the answer); calls in it run', () => {
    expect(decide(response('pause_turn', { text: 'searching' }))).toEqual({
      kind: 'continue_thinking',
      continuesTurn: true,
    });
    expect(decide(response('pause_turn', { text: 'calling', calls: [call] })).kind).toBe(
      'continue_with_tools',
    );
  });
  it('end_turn with nothing completes with empty output', () => {
    expect(decide(response('end_turn'))).toEqual({
      kind: 'terminate_with_output',
      text: '',
      truncated: false,
    });
  });
  it('max_tokens with text terminates with output flagged truncated', () => {
    expect(decide(response('max_tokens', { text: 'partial' }))).toEqual({
      kind: 'terminate_with_output',
      text: 'partial',
      truncated: true,
    });
  });
  it('max_tokens without text terminates immediately (error), even with a half-written tool call', () => {
    expect(decide(response('max_tokens'))).toMatchObject({ kind: 'terminate', reason: 'error' });
    const cut = decide(response('max_tokens', { calls: [call] }));
    expect(cut).toMatchObject({ kind: 'terminate', reason: 'error' });
    expect(cut.kind === 'terminate' && cut.message).toMatch(/tool call/);
  });
  it('stop_sequence with text terminates with output; without text completes', () => {
    expect(decide(response('stop_sequence', { text: 'a' }))).toMatchObject({
      kind: 'terminate_with_output',
      text: 'a',
    });
    expect(decide(response('stop_sequence'))).toMatchObject({ kind: 'terminate_with_output', text: '' });
  });
  it('refusal and content_filter terminate as guardrail_blocked', () => {
    expect(decide(response('refusal'))).toMatchObject({ kind: 'terminate', reason: 'guardrail_blocked' });
    expect(decide(response('content_filter', { text: 'x' }))).toMatchObject({
      kind: 'terminate',
      reason: 'guardrail_blocked',
    });
  });
  describe.each([undefined, 'unknown' as const])(
    'no usable stop reason (%s): fallback tools, then text, then empty',
    (reason) => {
      it('tools first', () => {
        expect(decide(response(reason, { text: 't', calls: [call] })).kind).toBe('continue_with_tools');
      });
      it('then text', () => {
        expect(decide(response(reason, { text: 't' }))).toMatchObject({
          kind: 'terminate_with_output',
          text: 't',
        });
      });
      it('reasoning only: continue thinking', () => {
        expect(decide(response(reason, { reasoning: true }))).toEqual({ kind: 'continue_thinking' });
      });
      it('then empty', () => {
        expect(decide(response(reason))).toEqual({
          kind: 'terminate_with_output',
          text: '',
          truncated: false,
        });
      });
    },
  );
});
