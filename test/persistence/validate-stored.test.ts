import { describe, expect, it } from 'vitest';
import { StoreCorruptError } from '../../src/persistence/store-errors.ts';
import {
  parseStoredJson,
  validateAgentCheckpoint,
  validateApprovalRecord,
  validateStoredSession,
} from '../../src/persistence/validate-stored.ts';
import { approval, checkpoint, idleRow, openCall, sessionRow, transcript } from './fixtures.ts';

const remove = Symbol('remove');

/**
 * A deep copy of a valid running session with the field at `path` (dotted, array indexes included) changed to
 * `change`: a value, `remove`, or a function of the old value. As if the stored record had been altered.
 */
function damaged(path: string, change: unknown): unknown {
  const copy = JSON.parse(JSON.stringify(sessionRow('s1'))) as Record<string, unknown>;
  const keys = path.split('.');
  let target = copy;
  for (const key of keys.slice(0, -1)) target = target[key] as Record<string, unknown>;
  const last = keys.at(-1) as string;
  if (change === remove) delete target[last];
  else
    target[last] =
      typeof change === 'function' ? (change as (old: unknown) => unknown)(target[last]) : change;
  return copy;
}

const appended =
  (...items: unknown[]) =>
  (old: unknown): unknown[] => [...(old as unknown[]), ...items];

function corruption(run: () => unknown): StoreCorruptError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(StoreCorruptError);
    return error as StoreCorruptError;
  }
  throw new Error('the record was accepted');
}

describe('validateStoredSession', () => {
  it('refuses a row whose status, counters and names disagree with its turn', () => {
    const cases: [string, unknown, string][] = [
      ['status', 'idle', 'session.turn is set, but a idle session holds no turn in progress'],
      ['status', 'closed', 'a closed session holds no turn in progress'],
      ['status', 'failed', 'a failed session holds no turn in progress'],
      ['turns', 4, 'session.turn.number is 2, but the session finished 4 turns'],
      [
        'agent',
        'billing',
        'session.turn.session.current is "support", but the session\'s agent is "billing"',
      ],
      ['turn.session.path', ['support', 'triage'], 'session.turn.session.path does not end with'],
      ['turn.agent.name', 'billing', 'session.turn.agent.name is "billing"'],
      ['turn.agent.segment', 1, 'session.turn.agent.segment is 1, but the session is in segment 2'],
    ];
    for (const [path, value, message] of cases)
      expect(corruption(() => validateStoredSession('s1', damaged(path, value))).message).toContain(message);
  });

  it('accepts what the runtime writes: a session mid-turn with its open call, and an idle one', () => {
    expect(validateStoredSession('s1', sessionRow('s1'))).toEqual(sessionRow('s1'));
    expect(() => validateStoredSession('s1', idleRow('s1'))).not.toThrow();
    expect(() =>
      validateStoredSession('s1', sessionRow('s1', { turn: { ...sessionRow('s1').turn!, agent: null } })),
    ).not.toThrow();
  });

  const cp = 'turn.agent.checkpoint';
  const cases: [label: string, path: string, change: unknown, message: string][] = [
    ['a status that is not one', 'status', 'sleeping', 'session.status "sleeping" is not one of'],
    ["another session's row", 'id', 's2', 'session.id is "s2"'],
    ['an empty agent name', 'agent', '', 'session.agent must not be empty'],
    ['negative turns', 'turns', -1, 'session.turns must be a non-negative integer; got -1'],
    ['fractional turns', 'turns', 1.5, 'session.turns must be a non-negative integer; got 1.5'],
    ['a transcript that is not an array', 'transcript', { 0: 'hi' }, 'session.transcript must be an array'],
    [
      'an orphan tool message in the transcript',
      'transcript',
      appended({ role: 'tool', toolCallId: 'call_x', content: '?' }),
      'session.transcript is not a valid conversation: [5] tool message answers call_x',
    ],
    [
      'an unanswered call in the transcript',
      'transcript',
      appended({ role: 'assistant', content: '', toolCalls: [openCall] }),
      'session.transcript is not a valid conversation: [6] tool call(s) call_2 are never answered',
    ],
    ['a message with an unknown role', 'transcript.1.role', 'robot', 'role must be one of'],
    ['a running session without its turn', 'turn', null, 'session.turn is null, but a running session'],
    ['a turn numbered 0', 'turn.number', 0, 'session.turn.number must be 1 or more'],
    ['an input that is neither text nor parts', 'turn.input', 42, 'session.turn.input must be an array'],
    [
      'a content part of unknown type',
      'turn.input.1.type',
      'video',
      'session.turn.input[1].type must be one of text, image',
    ],
    ['a queued input that is not one', 'queued', [null], 'session.queued[0] must be an array; got null'],
    [
      'a turnStart past the transcript',
      'turn.session.turnStart',
      99,
      'session.turn.session.turnStart points past',
    ],
    [
      'a bad agent history',
      'turn.session.agentHistory',
      'nope',
      'session.turn.session.agentHistory must be an array',
    ],
    ['a path that is not strings', 'turn.session.path', [1], 'session.turn.session.path[0] must be a string'],
    [
      'spent without usage',
      'turn.session.spent.usage',
      remove,
      'session.turn.session.spent.usage must be an object; got nothing',
    ],
    [
      'an orphan tool message in the checkpoint',
      `${cp}.history`,
      (old: unknown) =>
        (old as unknown[]).toSpliced(5, 0, { role: 'tool', toolCallId: 'call_9', content: 'x' }),
      'session.turn.agent.checkpoint.history is not a valid conversation: [5] tool message answers call_9',
    ],
    [
      'a checkpoint history that is not an array',
      `${cp}.history`,
      { role: 'user' },
      'session.turn.agent.checkpoint.history must be an array; got an object',
    ],
    [
      'an unanswered call the checkpoint does not list as open',
      `${cp}.openCalls`,
      [],
      'tool call(s) call_2 are never answered',
    ],
    [
      'an open call the history never asked for',
      `${cp}.openCalls`,
      appended({ id: 'call_7', name: 'add', args: {} }),
      'which no earlier assistant message asked for',
    ],
    [
      'a negative step',
      `${cp}.step`,
      -2,
      'session.turn.agent.checkpoint.step must be a non-negative integer',
    ],
    [
      'an unknown phase',
      `${cp}.phase`,
      'napping',
      'session.turn.agent.checkpoint.phase must be one of toolUse, finalOutput',
    ],
    [
      'usage with a missing field',
      `${cp}.usage.cached`,
      remove,
      'checkpoint.usage.cached must be a non-negative number; got nothing',
    ],
    [
      'a fractional call count',
      `${cp}.toolCallCounts.add`,
      0.5,
      'checkpoint.toolCallCounts.add must be a non-negative integer',
    ],
    [
      'degraded tools that are not names',
      `${cp}.degradedTools`,
      [{}],
      'checkpoint.degradedTools[0] must be a string',
    ],
    [
      'an open call without an id',
      `${cp}.openCalls.0.id`,
      remove,
      'checkpoint.openCalls[0].id must be a string',
    ],
    [
      'a decision of unknown kind',
      `${cp}.decision`,
      { kind: 'guess' },
      'checkpoint.decision.kind must be one of',
    ],
    [
      'a termination with an unknown stop reason',
      `${cp}.decision`,
      { kind: 'terminate', reason: 'bored', message: '' },
      'checkpoint.decision.reason must be one of completed',
    ],
    [
      'approvals pending of unknown kind',
      `${cp}.approvals.pending.0.kind`,
      'vote',
      'checkpoint.approvals.pending[0].kind must be one of approval, question',
    ],
    [
      'a retry count that is not a count',
      `${cp}.retryCount`,
      'one',
      'checkpoint.retryCount must be a non-negative integer',
    ],
    [
      'a segment that is not a count',
      'turn.agent.segment',
      -1,
      'session.turn.agent.segment must be a non-negative integer',
    ],
    [
      'an unknown supervision strategy',
      'options.supervision.strategy',
      'pray',
      'session.options.supervision.strategy must be one of restart, stop, escalate',
    ],
    [
      'a negative budget',
      'options.budget.usd',
      -1,
      'session.options.budget.usd must be a non-negative number',
    ],
    ['a tenant that is not a string', 'options.tenant', 7, 'session.options.tenant must be a string'],
    ['no update time', 'updatedAt', remove, 'session.updatedAt must be a non-negative number; got nothing'],
  ];

  it.each(cases)('refuses %s, naming the session and the field', (_, path, change, message) => {
    const error = corruption(() => validateStoredSession('s1', damaged(path, change)));
    expect(error.sessionId).toBe('s1');
    expect(error.message).toContain('The stored record of session "s1" is damaged');
    expect(error.message).toContain(message);
  });

  it('refuses a record that is not an object', () => {
    for (const value of [null, [], 'row', 3])
      expect(corruption(() => validateStoredSession('s1', value)).message).toContain(
        'session must be an object',
      );
  });

  it('reads only own fields: a field inherited through the prototype chain counts as missing', () => {
    const { status, ...rest } = idleRow('s1');
    const inherited = Object.assign(Object.create({ status }) as object, rest);
    expect(corruption(() => validateStoredSession('s1', inherited)).message).toContain(
      'session.status must be a string; got nothing',
    );
  });
});

describe('validateAgentCheckpoint', () => {
  it('accepts a checkpoint whose open calls are unanswered, and one without open calls', () => {
    expect(() => validateAgentCheckpoint('s1', checkpoint(), 'nested run "r"')).not.toThrow();
    expect(() =>
      validateAgentCheckpoint(
        's1',
        checkpoint({ history: transcript, openCalls: [], decision: null, approvals: null }),
      ),
    ).not.toThrow();
  });

  it('accepts a checkpoint without the fields a resume defaults (retryCount, forcedFinalAnswer, approvals)', () => {
    const { retryCount, forcedFinalAnswer, approvals, ...older } = checkpoint();
    expect(() => validateAgentCheckpoint('s1', older)).not.toThrow();
  });

  it('accepts the limit a last answer was asked for at (or true, false), and refuses anything else', () => {
    for (const forcedFinalAnswer of [
      true,
      false,
      'max_steps',
      'duplicate_tool_call',
      'tool_call_limit',
    ] as const)
      expect(() => validateAgentCheckpoint('s1', checkpoint({ forcedFinalAnswer }))).not.toThrow();
    const error = corruption(() =>
      validateAgentCheckpoint('s1', { ...checkpoint(), forcedFinalAnswer: 'completed' }),
    );
    expect(error.message).toContain(
      'forcedFinalAnswer must be one of max_steps, duplicate_tool_call, tool_call_limit',
    );
  });

  it('names where the checkpoint is', () => {
    const error = corruption(() =>
      validateAgentCheckpoint('s1', { ...checkpoint(), history: 'lost' }, 'nested run "a>call_1/b"'),
    );
    expect(error.message).toContain('nested run "a>call_1/b".history must be an array');
  });
});

describe('validateApprovalRecord', () => {
  it('accepts pending and decided records', () => {
    expect(() => validateApprovalRecord('s1', approval('s1', 'c'))).not.toThrow();
    expect(() =>
      validateApprovalRecord(
        's1',
        approval('s1', 'c', { status: 'answered', decision: { type: 'answer', text: 'blue' }, decidedAt: 9 }),
      ),
    ).not.toThrow();
    // Withdrawn: nobody waits for it any more; it holds the rejection its agent got.
    expect(() =>
      validateApprovalRecord(
        's1',
        approval('s1', 'c', {
          status: 'withdrawn',
          decision: { type: 'reject', reason: 'the turn ended before a decision' },
          decidedAt: 9,
        }),
      ),
    ).not.toThrow();
  });

  it.each([
    [
      'an unknown status',
      approval('s1', 'c', { status: 'maybe' as 'pending' }),
      'approval.status must be one of',
    ],
    [
      'a pending record with a decision',
      approval('s1', 'c', { decision: { type: 'approve' } }),
      'is set, but the approval is pending',
    ],
    [
      'a decided record without a decision',
      approval('s1', 'c', { status: 'approved' }),
      'is missing, but the approval is approved',
    ],
    [
      'a decision that does not give the status',
      approval('s1', 'c', { status: 'approved', decision: { type: 'reject', reason: 'no' } }),
      'is "reject", which does not give the status "approved"',
    ],
    [
      'a withdrawn record holding anything but a rejection',
      approval('s1', 'c', { status: 'withdrawn', decision: { type: 'answer', text: 'blue' } }),
      'is "answer", which does not give the status "withdrawn"',
    ],
    [
      'an unknown kind',
      approval('s1', 'c', { kind: 'poll' as 'approval' }),
      'approval.kind must be one of approval, question',
    ],
    ['no call id', approval('s1', '', {}), 'approval.callId must not be empty'],
  ])('refuses %s', (_, record, message) => {
    expect(corruption(() => validateApprovalRecord('s1', record)).message).toContain(message);
  });
});

describe('parseStoredJson', () => {
  it('parses JSON text and refuses anything else, naming the session and the column', () => {
    expect(parseStoredJson('s1', 'x', '{"a":[1]}')).toEqual({ a: [1] });
    const error = corruption(() => parseStoredJson('s1', 'the session row', '{"id":'));
    expect(error.sessionId).toBe('s1');
    expect(error.message).toContain('the session row is not valid JSON');
    expect(corruption(() => parseStoredJson('s1', 'the data of event 3', 42)).message).toContain(
      'the data of event 3 is stored as number, not as JSON text',
    );
  });
});
