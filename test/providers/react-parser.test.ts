import { describe, expect, it } from 'vitest';
import { findFinalAnswerStart, parseReactReply } from '../../src/providers/react-parser.ts';

describe('parseReactReply: well-formed replies', () => {
  it('reads Thought / Action / Action Input into a tool call', () => {
    expect(parseReactReply('Thought: I need the sum.\nAction: add\nAction Input: {"a": 2, "b": 3}')).toEqual({
      kind: 'action',
      thought: 'I need the sum.',
      tool: 'add',
      args: { a: 2, b: 3 },
    });
  });

  it('reads Thought / Final Answer, keeping a multi-line answer', () => {
    expect(parseReactReply('Thought: I know it.\nFinal Answer: Paris.\nIt is the capital.')).toEqual({
      kind: 'final',
      thought: 'I know it.',
      answer: 'Paris.\nIt is the capital.',
    });
  });

  it('takes unlabelled first lines as the thought, labels in any case with leading spaces, CRLF', () => {
    expect(parseReactReply('Let me check.\r\n  ACTION: lookup\r\n  action input: {}\r\n')).toEqual({
      kind: 'action',
      thought: 'Let me check.',
      tool: 'lookup',
      args: {},
    });
  });

  it('accepts a JSON code fence around the Action Input and backticks around the tool name', () => {
    expect(
      parseReactReply('Thought: t\nAction: `search`\nAction Input:\n```json\n{"q": "cats"}\n```'),
    ).toMatchObject({ kind: 'action', tool: 'search', args: { q: 'cats' } });
  });

  it('drops an imagined Observation and everything after it', () => {
    expect(
      parseReactReply(
        'Thought: t\nAction: add\nAction Input: {"a":1,"b":1}\nObservation: 2\nThought: done\nFinal Answer: 2',
      ),
    ).toEqual({ kind: 'action', thought: 't', tool: 'add', args: { a: 1, b: 1 } });
  });

  it('a multi-line JSON Action Input', () => {
    expect(parseReactReply('Action: add\nAction Input: {\n  "a": 1,\n  "b": 2\n}')).toMatchObject({
      kind: 'action',
      thought: '',
      args: { a: 1, b: 2 },
    });
  });
});

describe('parseReactReply: malformed replies are errors that say what to fix', () => {
  const cases: [string, string, RegExp][] = [
    ['plain text, no labels', 'The answer is 4.', /neither an Action nor a Final Answer/],
    [
      'both an action and a final answer',
      'Action: add\nAction Input: {}\nFinal Answer: 4',
      /both an Action and a Final Answer/,
    ],
    ['two actions', 'Action: a\nAction Input: {}\nAction: b\nAction Input: {}', /more than one Action/],
    ['two final answers', 'Final Answer: 1\nFinal Answer: 2', /more than one Final Answer/],
    ['an empty final answer', 'Thought: hmm\nFinal Answer:   ', /Final Answer is empty/],
    ['an action without input', 'Thought: t\nAction: add', /no "Action Input:" line/],
    ['an input without action', 'Action Input: {"a": 1}', /no "Action:" line/],
    ['input before action', 'Action Input: {}\nAction: add', /must come after/],
    ['non-JSON input', 'Action: add\nAction Input: a=1, b=2', /not valid JSON/],
    ['a JSON array as input', 'Action: add\nAction Input: [1, 2]', /must be one JSON object/],
    ['a bare string as input', 'Action: add\nAction Input: "2+2"', /must be one JSON object/],
    ['an empty input', 'Action: add\nAction Input:', /Action Input is empty/],
    [
      'a sentence as the tool name',
      'Action: I will use the add tool\nAction Input: {}',
      /is not a tool name/,
    ],
    ['an empty reply', '', /neither an Action nor a Final Answer/],
  ];
  for (const [name, reply, message] of cases) {
    it(name, () => {
      const parsed = parseReactReply(reply);
      expect(parsed.kind).toBe('error');
      expect(parsed.kind === 'error' && parsed.error).toMatch(message);
    });
  }

  it('keeps the thought of a malformed reply', () => {
    expect(parseReactReply('Thought: thinking hard\nAction: add\nAction Input: nope')).toMatchObject({
      kind: 'error',
      thought: 'thinking hard',
    });
  });
});

describe('findFinalAnswerStart (streaming)', () => {
  it('finds the answer after the marker at a line start', () => {
    const text = 'Thought: x\nFinal Answer: Paris';
    const found = findFinalAnswerStart(text);
    expect(found).toEqual({ markerStart: 11, answerStart: 25 });
    expect(text.slice((found as { answerStart: number }).answerStart)).toBe('Paris');
  });

  it('holds back a last line that could still become the marker, and nothing else', () => {
    expect(findFinalAnswerStart('Thought: x\nFinal Ans')).toEqual({ safeEnd: 11 });
    expect(findFinalAnswerStart('Thought: x\n  fin')).toEqual({ safeEnd: 11 });
    expect(findFinalAnswerStart('Thought: x\nAction: add')).toEqual({ safeEnd: 22 });
    expect(findFinalAnswerStart('Thought: the final answer is near')).toEqual({ safeEnd: 33 });
  });
});
