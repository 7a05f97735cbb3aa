import { describe, expect, it } from 'vitest';
import { createActor, fromCallback, SimulatedClock } from 'xstate';
import type { ErrorInfo } from '../../src/core/errors.ts';
import { defaultLimits } from '../../src/core/limits.ts';
import type { Message, ToolCall } from '../../src/core/messages.ts';
import {
  type AgentCheckpoint,
  type AgentMachineInput,
  type AgentMachineOutput,
  agentMachine,
  agentOutputOf,
} from '../../src/machines/agent.ts';
import {
  appendDelta,
  type SessionCommand,
  type SessionEmitted,
  type SessionEvent,
  type SessionMachineInput,
  type SupervisionPolicy,
  sessionMachine,
} from '../../src/machines/session.ts';

/**
 * The session supervisor driven by hand: agent children are inert (the test says when one is done or failed, as the
 * runtime's agents would), the effects actor records the commands, and the emitted handoff and supervisor events
 * are collected. Each test states what a session must do: which agent runs with which input, how a turn ends and
 * what the caller reads of it (the last turn's outcome and the transcript), what the event stream is told.
 */

const usage = (n: number) => ({ input: n, output: n, cached: 0, reasoning: 0 });
const user = (content: string): Message => ({ role: 'user', content });

const descriptor = (handoffTools: Record<string, string> = {}) => ({
  limits: defaultLimits,
  toolNames: Object.keys(handoffTools),
  hasOutputSchema: false,
  handoffTools,
});

const supervision: SupervisionPolicy = {
  strategy: 'restart',
  maxRestarts: 2,
  onExhausted: 'escalate',
  backoffMs: 100,
  backoffFactor: 3,
  maxBackoffMs: 500,
};

interface Spawned {
  id: string;
  input: AgentMachineInput;
}

function start(overrides: Partial<SessionMachineInput> = {}) {
  const commands: SessionCommand[] = [];
  const spawned: Spawned[] = [];
  const received: { id: string; event: unknown }[] = [];
  const emitted: SessionEmitted[] = [];
  const agent = fromCallback<{ type: string }, AgentMachineInput>(({ input, self, receive }) => {
    spawned.push({ id: self.id, input });
    receive((event) => received.push({ id: self.id, event }));
  });
  const sessionEffects = fromCallback<SessionCommand, { sessionId: string }>(({ receive }) => {
    receive((command) => commands.push(command));
  });
  const clock = new SimulatedClock();
  const actor = createActor(
    sessionMachine.provide({
      actors: { agent: agent as unknown as typeof agentMachine, sessionEffects },
    }),
    {
      clock,
      input: {
        sessionId: 'S',
        entry: 'triage',
        agents: {
          triage: descriptor({ to_billing: 'billing', to_tech: 'tech' }),
          billing: descriptor({ to_triage: 'triage', to_tech: 'tech' }),
          tech: descriptor({ to_triage: 'triage', to_billing: 'billing' }),
          'v1.agent': descriptor(),
        },
        history: [user('hello')],
        handoffLimits: { maxDepth: 3, maxRevisits: 0 },
        supervision,
        ...overrides,
      },
    },
  );
  actor.on('*', (event) => emitted.push(event as SessionEmitted));
  let failure: unknown;
  actor.subscribe({ error: (error) => (failure = error) });
  actor.start();
  const snapshot = () => {
    if (failure !== undefined) throw failure;
    return actor.getSnapshot();
  };
  return {
    commands,
    spawned,
    received,
    emitted,
    clock,
    send: (event: SessionEvent) => actor.send(event),
    snapshot,
    state: () => snapshot().value,
    lastTurn: () => snapshot().context.lastTurn,
    transcript: () => snapshot().context.transcript,
    /** The agent running now. */
    active: () => spawned[spawned.length - 1] as Spawned,
    /** The prepared history arrives: the current agent starts. */
    prepare: (history?: Message[], resume: AgentCheckpoint | null = null) => {
      const command = commands[commands.length - 1];
      actor.send({ type: 'prepared', history: history ?? command?.history ?? [], resume });
    },
    /** The running agent ends with this output. */
    finish: (output: AgentMachineOutput, id?: string) => {
      const actorId = id ?? (spawned[spawned.length - 1] as Spawned).id;
      actor.send({ type: `xstate.done.actor.${actorId}`, actorId, output });
    },
  };
}

const blank = agentOutputOf(
  createActor(agentMachine, {
    input: {
      sessionId: 'x',
      agent: 'x',
      limits: defaultLimits,
      toolNames: [],
      hasOutputSchema: false,
      history: [],
      baseLength: 0,
    },
  }).getSnapshot().context,
);

/** What an agent that started from `input` returns after saying `text` (and maybe asking for a handoff). */
function outputOf(
  input: AgentMachineInput,
  options: { text?: string; handoffTo?: string; callId?: string; partial?: Partial<AgentMachineOutput> } = {},
): AgentMachineOutput {
  const { text = 'answer', handoffTo, callId = 'h1' } = options;
  const call: ToolCall = { id: callId, name: `to_${handoffTo}`, args: {} };
  const message: Message = handoffTo
    ? { role: 'assistant', content: '', agent: input.agent, toolCalls: [call] }
    : { role: 'assistant', content: text, agent: input.agent };
  return {
    ...blank,
    agent: input.agent,
    history: [...input.history, message],
    baseLength: input.baseLength,
    step: 1,
    modelCalls: 1,
    toolCallsRun: 1,
    usage: usage(2),
    text: handoffTo ? '' : text,
    stopReason: handoffTo ? null : 'completed',
    handoff: handoffTo ? { target: handoffTo, call } : null,
    openCalls: handoffTo ? [call] : [],
    ...options.partial,
  };
}

describe('session: a turn with one agent', () => {
  it('prepares the entry agent, starts it with the prepared history, and ends the turn with its answer', () => {
    const s = start();
    expect(s.commands).toEqual([
      {
        type: 'prepare',
        agent: 'triage',
        filterFrom: null,
        history: [user('hello')],
        fromCheckpoint: false,
        segment: 1,
      },
    ]);
    s.prepare([user('filtered hello')]);
    expect(s.state()).toBe('running');
    expect(s.active()).toEqual({
      id: 'triage-1',
      input: {
        sessionId: 'S/triage',
        agent: 'triage',
        limits: defaultLimits,
        toolNames: ['to_billing', 'to_tech'],
        hasOutputSchema: false,
        history: [user('filtered hello')],
        baseLength: 1,
        handoffTools: { to_billing: 'billing', to_tech: 'tech' },
      },
    });
    s.finish(outputOf(s.active().input, { text: 'hi there' }));
    expect(s.state()).toBe('idle');
    expect(s.snapshot().children['triage-1']).toBeUndefined();
    expect(s.lastTurn()).toEqual({
      status: 'completed',
      stopReason: 'completed',
      error: null,
      agent: 'triage',
      text: 'hi there',
      output: null,
      outputDecoded: false,
      truncated: false,
      usage: usage(2),
      modelCalls: 1,
      toolCallsRun: 1,
      path: ['triage'],
      turnStart: 0,
    });
    expect(s.snapshot().context.turns).toBe(1);
    // The transcript keeps the caller's messages and appends only what the agent said.
    expect(s.transcript()).toEqual([
      user('hello'),
      { role: 'assistant', content: 'hi there', agent: 'triage' },
    ]);
  });

  it('maps the agent’s stop reason to the turn’s status, and reports a decoded output only', () => {
    const cases = [
      ['completed', 'completed'],
      ['tool_failure_degraded', 'completed'],
      ['error', 'failed'],
      ['max_steps', 'stopped'],
      [null, 'failed'],
    ] as const;
    for (const [stopReason, status] of cases) {
      const s = start();
      s.prepare();
      s.finish(
        outputOf(s.active().input, { partial: { stopReason, output: { x: 1 }, outputDecoded: false } }),
      );
      expect(s.lastTurn(), String(stopReason)).toMatchObject({
        status,
        stopReason: stopReason ?? 'error',
        output: null,
      });
    }
    const decoded = start();
    decoded.prepare();
    decoded.finish(
      outputOf(decoded.active().input, {
        partial: { output: { x: 1 }, outputDecoded: true, truncated: true },
      }),
    );
    expect(decoded.lastTurn()).toMatchObject({ output: { x: 1 }, outputDecoded: true, truncated: true });
  });

  it('ignores the done event of an actor that is not the active agent', () => {
    const s = start();
    s.prepare();
    s.finish(outputOf(s.active().input), 'someone-else');
    expect(s.state()).toBe('running');
    expect(s.lastTurn()).toBeNull();
  });

  it('names children after the agent without dots, numbering them per start', () => {
    const s = start({ entry: 'v1.agent' });
    s.prepare();
    expect(s.active().id).toBe('v1_agent-1');
    s.finish(outputOf(s.active().input));
    s.send({ type: 'user.message', message: user('again') });
    s.prepare();
    expect(s.active().id).toBe('v1_agent-2');
  });

  it('the next user message starts a new turn on the whole transcript, counters reset', () => {
    const s = start();
    s.prepare();
    s.finish(outputOf(s.active().input, { text: 'one' }));
    s.send({ type: 'user.message', message: user('second') });
    expect(s.commands.at(-1)).toEqual({
      type: 'prepare',
      agent: 'triage',
      filterFrom: null,
      history: [user('hello'), { role: 'assistant', content: 'one', agent: 'triage' }, user('second')],
      fromCheckpoint: false,
      segment: 2,
    });
    s.prepare();
    s.finish(outputOf(s.active().input, { text: 'two' }));
    expect(s.lastTurn()).toMatchObject({
      text: 'two',
      turnStart: 2,
      usage: usage(2),
      modelCalls: 1,
      path: ['triage'],
    });
    expect(s.snapshot().context.turns).toBe(2);
  });

  it('a preparation that fails ends the turn failed with its error, and the session waits for the next message', () => {
    const s = start();
    const error: ErrorInfo = { name: 'StoreError', code: 'store_failed', message: 'no disk' };
    s.send({ type: 'prepare.failed', error });
    expect(s.state()).toBe('idle');
    expect(s.lastTurn()).toMatchObject({ status: 'failed', stopReason: 'error', error });
  });

  it('an entry the catalog lacks fails the turn instead of waiting forever', () => {
    const s = start({ entry: 'ghost' });
    s.prepare();
    expect(s.state()).toBe('idle');
    expect(s.spawned).toEqual([]);
    expect(s.lastTurn()).toMatchObject({
      status: 'failed',
      error: {
        name: 'ConfigError',
        code: 'agent_unknown',
        message: 'The session has no agent named "ghost".',
      },
    });
  });

  it('continues the turn numbering of a restored session', () => {
    const s = start({ turns: 4 });
    s.prepare();
    s.finish(outputOf(s.active().input));
    expect(s.snapshot().context.turns).toBe(5);
  });
});

describe('session: handoffs', () => {
  it('an accepted handoff answers the call, moves the conversation to the target and adds up what was spent', () => {
    const s = start();
    s.prepare();
    const first = s.active().input;
    s.finish(outputOf(first, { handoffTo: 'billing' }));
    expect(s.emitted).toEqual([
      {
        type: 'handoff',
        agent: 'triage',
        data: { from: 'triage', to: 'billing', outcome: 'accepted', depth: 1, path: ['triage', 'billing'] },
      },
    ]);
    const call = { id: 'h1', name: 'to_billing', args: {} };
    const handedOver = [
      user('hello'),
      { role: 'assistant', content: '', agent: 'triage', toolCalls: [call] },
      {
        role: 'tool',
        toolCallId: 'h1',
        name: 'to_billing',
        content: 'Transferred to billing.',
        isError: false,
      },
    ];
    expect(s.commands.at(-1)).toEqual({
      type: 'prepare',
      agent: 'billing',
      filterFrom: 'triage',
      history: handedOver,
      fromCheckpoint: false,
      segment: 2,
    });
    s.prepare();
    expect(s.active().id).toBe('billing-2');
    s.finish(outputOf(s.active().input, { text: 'paid' }));
    expect(s.lastTurn()).toMatchObject({
      agent: 'billing',
      text: 'paid',
      path: ['triage', 'billing'],
      usage: usage(4),
      modelCalls: 2,
      toolCallsRun: 2,
    });
    expect(s.transcript()).toEqual([...handedOver, { role: 'assistant', content: 'paid', agent: 'billing' }]);
  });

  it('a handoff past the depth limit ends the turn with handoff_limit and answers the call', () => {
    const s = start({ handoffLimits: { maxDepth: 1, maxRevisits: 0 } });
    s.prepare();
    s.finish(outputOf(s.active().input, { handoffTo: 'billing' }));
    s.prepare();
    s.finish(outputOf(s.active().input, { handoffTo: 'tech', callId: 'h2' }));
    expect(s.state()).toBe('idle');
    const message =
      'Handoff to tech not done: the handoff depth limit (maxHandoffDepth 1, maxHandoffRevisits 0, path triage -> billing -> tech).';
    expect(s.lastTurn()).toMatchObject({
      status: 'stopped',
      stopReason: 'handoff_limit',
      agent: 'billing',
      error: { name: 'RunStopped', code: 'handoff_limit', message },
    });
    expect(s.transcript().at(-1)).toEqual({
      role: 'tool',
      toolCallId: 'h2',
      name: 'to_tech',
      content: `Not run: ${message}`,
      isError: true,
    });
    expect(s.emitted.at(-1)).toEqual({
      type: 'handoff',
      agent: 'billing',
      data: {
        from: 'billing',
        to: 'tech',
        outcome: 'limit',
        depth: 1,
        path: ['triage', 'billing'],
        reason: 'maxHandoffDepth reached',
      },
    });
  });

  it('refuses a handoff back to an agent already on the path, and the agent goes on without it', () => {
    const s = start();
    s.prepare();
    s.finish(outputOf(s.active().input, { handoffTo: 'billing' }));
    s.prepare();
    const billing = s.active().input;
    const asked = outputOf(billing, {
      handoffTo: 'triage',
      callId: 'h2',
      partial: { step: 3, modelCalls: 4 },
    });
    s.finish(asked);
    const reason =
      'triage is already on the handoff path (triage -> billing) and may be revisited at most 0 time(s)';
    expect(s.emitted.at(-1)).toEqual({
      type: 'handoff',
      agent: 'billing',
      data: {
        from: 'billing',
        to: 'triage',
        outcome: 'refused',
        depth: 1,
        path: ['triage', 'billing'],
        reason,
      },
    });
    expect(s.state()).toBe('preparing');
    expect(s.commands.at(-1)).toMatchObject({ agent: 'billing', filterFrom: null, fromCheckpoint: false });
    s.prepare([user('ignored: a refused handoff resumes the agent')]);
    const resumed = s.active();
    expect(resumed.id).toBe('billing-3');
    expect(resumed.input.baseLength).toBe(billing.baseLength);
    // It resumes with its counters, the handoff call answered, nothing open, a fresh tool-use phase.
    expect({ ...resumed.input.resume, history: [] }).toEqual({
      history: [],
      step: 3,
      modelCalls: 4,
      toolCallsRun: asked.toolCallsRun,
      toolCallCounts: asked.toolCallCounts,
      callSignatures: asked.callSignatures,
      degradedTools: asked.degradedTools,
      usage: asked.usage,
      openCalls: [],
      decision: null,
      retryCount: 0,
      forcedFinalAnswer: false,
      approvals: null,
      phase: 'toolUse',
    });
    expect(resumed.input.history).toEqual([
      ...asked.history,
      {
        role: 'tool',
        toolCallId: 'h2',
        name: 'to_triage',
        content: `Error: handoff to triage refused: ${reason}. Continue without it.`,
        isError: true,
      },
    ]);
    // Asking again ends the turn.
    s.finish(outputOf(resumed.input, { handoffTo: 'triage', callId: 'h3' }));
    expect(s.state()).toBe('idle');
    expect(s.lastTurn()?.error?.message).toMatch(
      /^Handoff to triage not done: a refused handoff was asked for again/,
    );
    expect(s.emitted.at(-1)).toMatchObject({
      data: { outcome: 'limit', reason: 'repeated refused handoff' },
    });
  });

  it('a revisit within maxRevisits is accepted', () => {
    const s = start({ handoffLimits: { maxDepth: 5, maxRevisits: 1 } });
    s.prepare();
    s.finish(outputOf(s.active().input, { handoffTo: 'billing' }));
    s.prepare();
    s.finish(outputOf(s.active().input, { handoffTo: 'triage', callId: 'h2' }));
    expect(s.emitted.at(-1)).toMatchObject({
      data: { outcome: 'accepted', path: ['triage', 'billing', 'triage'] },
    });
  });
});

describe('session: supervision of a failing agent', () => {
  const crash = (s: ReturnType<typeof start>, message = 'tool exploded', history?: Message[]) =>
    s.send({
      type: 'agent.crashed',
      id: s.active().id,
      error: { name: 'ToolError', code: 'tool_failed', message },
      ...(history ? { history } : {}),
    });

  it('restarts after a back-off that grows by the factor up to the cap, resuming from the checkpoint', () => {
    const s = start();
    s.prepare();
    crash(s);
    expect(s.state()).toBe('backingOff');
    expect(s.emitted.at(-1)).toEqual({
      type: 'supervisor',
      agent: 'triage',
      data: {
        decision: 'restart',
        agent: 'triage',
        error: { name: 'ToolError', code: 'tool_failed', message: 'tool exploded' },
        restarts: 1,
        delayMs: 100,
      },
    });
    s.clock.increment(99);
    expect(s.state()).toBe('backingOff');
    s.clock.increment(1);
    expect(s.commands.at(-1)).toMatchObject({
      type: 'prepare',
      agent: 'triage',
      fromCheckpoint: true,
      segment: 1,
    });
    const checkpoint: AgentCheckpoint = {
      ...blank,
      history: [user('hello'), { role: 'assistant', content: 'so far' }],
      step: 2,
      phase: 'toolUse',
    };
    s.prepare([], checkpoint);
    expect(s.active().input.resume).toEqual(checkpoint);
    expect(s.active().input.history).toEqual(checkpoint.history);
    crash(s);
    expect(s.emitted.at(-1)).toMatchObject({ data: { decision: 'restart', restarts: 2, delayMs: 300 } });
    s.clock.increment(299);
    expect(s.state()).toBe('backingOff');
    s.clock.increment(1);
    expect(s.state()).toBe('preparing');
  });

  it('caps the back-off at maxBackoffMs', () => {
    const s = start({ supervision: { ...supervision, maxRestarts: 5, backoffMs: 400 } });
    s.prepare();
    crash(s);
    s.clock.increment(400);
    s.prepare();
    crash(s);
    expect(s.emitted.at(-1)).toMatchObject({ data: { restarts: 2, delayMs: 500 } });
    s.clock.increment(499);
    expect(s.state()).toBe('backingOff');
    s.clock.increment(1);
    expect(s.state()).toBe('preparing');
  });

  it('a restart without a checkpoint starts the agent again from its input', () => {
    const s = start();
    s.prepare([user('prepared')]);
    crash(s);
    s.clock.increment(100);
    s.prepare([user('reloaded')], null);
    expect(s.active().input.resume).toBeUndefined();
    expect(s.active().input.history).toEqual([user('prepared')]);
  });

  it('escalates once the restarts are used up: the session fails, keeping what the agent said', () => {
    const s = start({ supervision: { ...supervision, maxRestarts: 0 } });
    s.prepare();
    const open: ToolCall = { id: 'c1', name: 'search', args: {} };
    const done: ToolCall = { id: 'c0', name: 'search', args: { q: 1 } };
    const answered: Message = {
      role: 'tool',
      toolCallId: 'c0',
      name: 'search',
      content: 'found',
      isError: false,
    };
    crash(s, 'fatal', [
      user('hello'),
      { role: 'assistant', content: 'trying', agent: 'triage', toolCalls: [done, open] },
      answered,
    ]);
    expect(s.state()).toBe('failed');
    expect(s.emitted.at(-1)).toEqual({
      type: 'supervisor',
      agent: 'triage',
      data: {
        decision: 'escalate',
        agent: 'triage',
        error: { name: 'ToolError', code: 'tool_failed', message: 'fatal' },
        restarts: 0,
      },
    });
    expect(s.lastTurn()).toMatchObject({
      status: 'failed',
      stopReason: 'error',
      error: { message: 'fatal' },
    });
    expect(s.transcript()).toEqual([
      user('hello'),
      { role: 'assistant', content: 'trying', agent: 'triage', toolCalls: [done, open] },
      { role: 'tool', toolCallId: 'c1', name: 'search', content: 'Not run: fatal', isError: true },
      answered,
    ]);
  });

  it('stops the turn (the session lives on) with the stop strategy, or onExhausted stop', () => {
    for (const policy of [
      { ...supervision, strategy: 'stop' as const },
      { ...supervision, maxRestarts: 0, onExhausted: 'stop' as const },
    ]) {
      const s = start({ supervision: policy });
      s.prepare();
      crash(s);
      expect(s.state()).toBe('idle');
      expect(s.emitted.at(-1)).toMatchObject({ type: 'supervisor', data: { decision: 'stop' } });
      expect(s.lastTurn()).toMatchObject({ status: 'failed', stopReason: 'error' });
      expect(s.transcript()).toEqual([user('hello')]);
    }
    const escalate = start({ supervision: { ...supervision, strategy: 'escalate' } });
    escalate.prepare();
    crash(escalate);
    expect(escalate.state()).toBe('failed');
  });

  it('reads the error of a failed agent actor, whatever was thrown', () => {
    const thrown: [unknown, ErrorInfo][] = [
      [new TypeError('bad'), { name: 'TypeError', code: 'agent_crashed', message: 'bad' }],
      [{ message: 'plain object' }, { name: 'Error', code: 'agent_crashed', message: 'plain object' }],
      ['just text', { name: 'Error', code: 'agent_crashed', message: 'just text' }],
    ];
    for (const [error, info] of thrown) {
      const s = start({ supervision: { ...supervision, strategy: 'escalate' } });
      s.prepare();
      const actorId = s.active().id;
      s.send({ type: `xstate.error.actor.${actorId}`, actorId, error });
      expect(s.lastTurn()?.error).toEqual(info);
    }
  });

  it('ignores failures of other actors and of sub-agents', () => {
    const s = start();
    s.prepare();
    s.send({ type: 'agent.crashed', id: 'other-9', error: { name: 'E', code: 'x', message: 'm' } });
    s.send({ type: 'xstate.error.actor.sub-1', actorId: 'sub-1', error: new Error('sub failed') });
    expect(s.state()).toBe('running');
    expect(s.emitted).toEqual([]);
  });
});

describe('session: stopping', () => {
  it('while an agent runs: aborts it with the reason and closes once it is done', () => {
    const s = start();
    s.prepare();
    s.send({ type: 'stop', reason: 'shutting down' });
    expect(s.received).toEqual([{ id: 'triage-1', event: { type: 'abort', reason: 'shutting down' } }]);
    expect(s.state()).toBe('running');
    s.finish(outputOf(s.active().input, { partial: { stopReason: 'aborted' } }));
    expect(s.state()).toBe('closed');
    expect(s.lastTurn()).toMatchObject({ status: 'stopped', stopReason: 'aborted' });
  });

  it('while an agent runs: an agent that fails instead closes the session as stopped', () => {
    const s = start();
    s.prepare();
    s.send({ type: 'stop' });
    expect(s.received.at(-1)?.event).toEqual({ type: 'abort', reason: 'the session was stopped' });
    s.send({ type: 'agent.crashed', id: s.active().id, error: { name: 'E', code: 'x', message: 'm' } });
    expect(s.state()).toBe('closed');
    expect(s.lastTurn()).toMatchObject({
      status: 'stopped',
      stopReason: 'aborted',
      error: { name: 'RunStopped', code: 'aborted', message: 'the session was stopped' },
    });
  });

  it('before the agent starts, or while backing off: closes at once', () => {
    const preparing = start();
    preparing.send({ type: 'stop', reason: 'bye' });
    expect(preparing.state()).toBe('closed');
    expect(preparing.lastTurn()).toMatchObject({ stopReason: 'aborted', error: { message: 'bye' } });
    const backingOff = start();
    backingOff.prepare();
    backingOff.send({ type: 'agent.crashed', id: 'triage-1', error: { name: 'E', code: 'x', message: 'm' } });
    backingOff.send({ type: 'stop' });
    expect(backingOff.state()).toBe('closed');
    const idle = start();
    idle.prepare();
    idle.finish(outputOf(idle.active().input));
    idle.send({ type: 'stop' });
    expect(idle.state()).toBe('closed');
  });
});

describe('session: sub-agents of agent tools', () => {
  it('starts and stops them as children under the given id', () => {
    const s = start();
    s.prepare();
    const input = { ...s.active().input, agent: 'tech' };
    s.send({ type: 'delegate.start', id: 'sub-1', input });
    expect(s.active()).toEqual({ id: 'sub-1', input });
    expect(s.snapshot().children['sub-1']).toBeDefined();
    s.send({ type: 'delegate.end', id: 'sub-1' });
    expect(s.snapshot().children['sub-1']).toBeUndefined();
    expect(s.snapshot().children['triage-1']).toBeDefined();
  });
});

describe('session: recovering an interrupted turn', () => {
  it('loads the checkpoint of the agent that held the conversation', () => {
    const s = start({
      restore: {
        current: 'billing',
        transcript: [user('hello')],
        turnStart: 0,
        agentHistory: [user('hello')],
        agentBase: 1,
        path: ['triage', 'billing'],
        refusals: 0,
        spent: { usage: usage(3), modelCalls: 3, toolCallsRun: 0 },
        segment: 7,
        turns: 2,
      },
    });
    expect(s.commands).toEqual([
      {
        type: 'prepare',
        agent: 'billing',
        filterFrom: null,
        history: [user('hello')],
        fromCheckpoint: true,
        segment: 7,
      },
    ]);
  });
});

describe('appendDelta', () => {
  it('renames a tool-call id already in the transcript, in the call and in its answer', () => {
    const transcript: Message[] = [
      user('q'),
      { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 't', args: {} }] },
      { role: 'tool', toolCallId: 'c1', name: 't', content: 'r', isError: false },
    ];
    const delta: Message[] = [
      {
        role: 'assistant',
        content: '',
        toolCalls: [
          { id: 'c1', name: 't', args: { n: 2 } },
          { id: 'c2', name: 't', args: {} },
        ],
      },
      { role: 'tool', toolCallId: 'c1', name: 't', content: 'again', isError: false },
      { role: 'tool', toolCallId: 'c2', name: 't', content: 'other', isError: false },
    ];
    const out = appendDelta(transcript, delta);
    expect(out.slice(0, 3)).toEqual(transcript);
    const renamed = out[3] as Extract<Message, { role: 'assistant' }>;
    const ids = renamed.toolCalls?.map((c) => c.id) ?? [];
    expect(ids[1]).toBe('c2');
    expect(ids[0]).not.toBe('c1');
    expect(ids[0]).not.toBe('c2');
    expect(out[4]).toMatchObject({ toolCallId: ids[0], content: 'again' });
    expect(out[5]).toMatchObject({ toolCallId: 'c2', content: 'other' });
    expect(transcript).toHaveLength(3);
  });

  it('never gives a renamed call an id already taken', () => {
    const transcript: Message[] = [
      { role: 'assistant', content: '', toolCalls: [{ id: 'c', name: 't', args: {} }] },
      { role: 'tool', toolCallId: 'c', name: 't', content: '', isError: false },
      { role: 'assistant', content: '', toolCalls: [{ id: 'c_2', name: 't', args: {} }] },
      { role: 'tool', toolCallId: 'c_2', name: 't', content: '', isError: false },
    ];
    const out = appendDelta(transcript, [
      { role: 'assistant', content: '', toolCalls: [{ id: 'c', name: 't', args: {} }] },
      { role: 'tool', toolCallId: 'c', name: 't', content: 'x', isError: false },
      { role: 'assistant', content: '', toolCalls: [{ id: 'c', name: 't', args: {} }] },
      { role: 'tool', toolCallId: 'c', name: 't', content: 'y', isError: false },
    ]);
    const ids = out.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []).map((c) => c.id) : []));
    expect(new Set(ids).size).toBe(ids.length);
    const answers = out.filter((m) => m.role === 'tool').map((m) => (m.role === 'tool' ? m.toolCallId : ''));
    expect(answers).toEqual(ids);
  });

  it('leaves a delta without clashes as it is', () => {
    const delta: Message[] = [
      { role: 'assistant', content: '', toolCalls: [{ id: 'a', name: 't', args: {} }] },
      { role: 'tool', toolCallId: 'a', name: 't', content: '', isError: false },
    ];
    expect(appendDelta([user('q')], delta)).toEqual([user('q'), ...delta]);
  });
});
