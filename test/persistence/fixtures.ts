import type { ApprovalRecord } from '../../src/core/approvals.ts';
import type { RunEvent } from '../../src/core/events.ts';
import type { Message, ToolCall } from '../../src/core/messages.ts';
import type { AgentCheckpoint } from '../../src/machines/agent.ts';
import type { StoredSession } from '../../src/persistence/store.ts';

/** Stored values as the runtime writes them: a session mid-turn, waiting for its second tool call to be approved. */

export const usage = { input: 120, output: 30, cached: 0, reasoning: 4 };

export const transcript: Message[] = [
  { role: 'system', content: 'Be helpful.' },
  { role: 'user', content: 'What is 2 + 3?' },
  { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'add', args: { a: 2, b: 3 } }] },
  { role: 'tool', toolCallId: 'call_1', name: 'add', content: '5' },
  { role: 'assistant', content: 'It is 5.', agent: 'support' },
];

const followUp: Message = {
  role: 'user',
  content: [
    { type: 'text', text: 'And 4 + 4?' },
    { type: 'image', url: 'https://example.com/sum.png', detail: 'low' },
  ],
};

export const openCall: ToolCall = { id: 'call_2', name: 'add', args: { a: 4, b: 4 } };

export function checkpoint(overrides: Partial<AgentCheckpoint> = {}): AgentCheckpoint {
  return {
    history: [...transcript, followUp, { role: 'assistant', content: '', toolCalls: [openCall] }],
    step: 2,
    modelCalls: 2,
    retryCount: 0,
    toolCallsRun: 1,
    toolCallCounts: { add: 1 },
    callSignatures: { 'add:1x2y3z': 1 },
    degradedTools: [],
    usage,
    openCalls: [openCall],
    decision: { kind: 'continue_with_tools', calls: [openCall] },
    forcedFinalAnswer: false,
    approvals: { pending: [{ callId: 'call_2', kind: 'approval' }], decided: [] },
    phase: 'toolUse',
    ...overrides,
  };
}

/** A session in the middle of its second turn (status running), or finished (pass status 'idle', turn null). */
export function sessionRow(id: string, overrides: Partial<StoredSession> = {}): StoredSession {
  const row = rowOf(id, overrides);
  // The turn in progress is the one after the finished ones (a stored row that says otherwise is damaged).
  if (row.turn !== null && !Object.hasOwn(overrides, 'turn'))
    row.turn = { ...row.turn, number: row.turns + 1 };
  return row;
}

function rowOf(id: string, overrides: Partial<StoredSession>): StoredSession {
  return {
    id,
    status: 'running',
    entry: 'triage',
    agent: 'support',
    turns: 1,
    transcript,
    turn: {
      number: 2,
      input: followUp.content,
      session: {
        current: 'support',
        transcript: [...transcript, followUp],
        turnStart: transcript.length,
        agentHistory: [...transcript, followUp],
        agentBase: transcript.length + 1,
        path: ['support'],
        refusals: 0,
        spent: { usage, modelCalls: 0, toolCallsRun: 0 },
        segment: 2,
        turns: 1,
      },
      agent: { name: 'support', segment: 2, checkpoint: checkpoint() },
    },
    queued: ['one more thing'],
    options: {
      maxHandoffDepth: 5,
      maxHandoffRevisits: 1,
      supervision: {
        strategy: 'restart',
        maxRestarts: 2,
        onExhausted: 'escalate',
        backoffMs: 100,
        backoffFactor: 2,
        maxBackoffMs: 10_000,
      },
      tenant: 'acme',
      budget: { usd: 1.5, warnAt: 0.8 },
    },
    updatedAt: 1_000,
    ...overrides,
  };
}

export function idleRow(id: string, overrides: Partial<StoredSession> = {}): StoredSession {
  return sessionRow(id, { status: 'idle', turn: null, queued: [], ...overrides });
}

/** `count` delta events with seq from `first`. */
export function events(sessionId: string, first: number, count: number): RunEvent[] {
  return Array.from({ length: count }, (_, index) => {
    const seq = first + index;
    return {
      time: 1_000 + seq,
      agent: 'support',
      sessionId,
      route: seq % 2 === 0 ? 'support' : 'support>call_1/researcher',
      depth: seq % 2,
      seq,
      type: 'delta',
      data: { content: `piece ${seq}` },
    } satisfies RunEvent;
  });
}

export function approval(
  sessionId: string,
  callId: string,
  overrides: Partial<ApprovalRecord> = {},
): ApprovalRecord {
  return {
    sessionId,
    callId,
    agent: 'support',
    route: 'support',
    tool: 'add',
    args: { a: 4, b: 4 },
    kind: 'approval',
    requestedAt: 2_000,
    status: 'pending',
    ...overrides,
  };
}
