import { describe, expect, it } from 'vitest';
import type { Message } from '../../src/core/messages.ts';
import { stepsOf } from '../../src/run/run-result.ts';

describe('stepsOf: the steps of a run from its history', () => {
  it('pairs each tool answer with its call, across turns, and leaves an unanswered call without a result', () => {
    const delta: Message[] = [
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: 'two calls',
        toolCalls: [
          { id: 'a', name: 'f', args: { n: 1 } },
          { id: 'b', name: 'g', args: {} },
        ],
      },
      { role: 'tool', toolCallId: 'b', content: 'B', isError: true },
      { role: 'tool', toolCallId: 'a', content: 'A' },
      {
        role: 'assistant',
        content: 'one more',
        agent: 'other',
        toolCalls: [{ id: 'c', name: 'f', args: null }],
      },
      { role: 'assistant', content: 'done' },
    ];
    expect(stepsOf(delta, 'main')).toEqual([
      {
        index: 1,
        agent: 'main',
        thought: 'two calls',
        toolCalls: [
          { id: 'a', name: 'f', args: { n: 1 }, result: 'A', isError: false },
          { id: 'b', name: 'g', args: {}, result: 'B', isError: true },
        ],
      },
      { index: 2, agent: 'other', thought: 'one more', toolCalls: [{ id: 'c', name: 'f', args: null }] },
      { index: 3, agent: 'main', thought: 'done', toolCalls: [] },
    ]);
  });

  it('gives an answer to the latest call with its id when a provider uses an id again', () => {
    const delta: Message[] = [
      { role: 'assistant', content: '1', toolCalls: [{ id: 'call_0', name: 'f', args: 1 }] },
      { role: 'tool', toolCallId: 'call_0', content: 'first' },
      { role: 'assistant', content: '2', toolCalls: [{ id: 'call_0', name: 'f', args: 2 }] },
      { role: 'tool', toolCallId: 'call_0', content: 'second' },
      { role: 'tool', toolCallId: 'unknown', content: 'nobody called' },
    ];
    const steps = stepsOf(delta, 'main');
    expect(steps.map((step) => step.toolCalls.map((call) => call.result))).toEqual([['first'], ['second']]);
  });
});
