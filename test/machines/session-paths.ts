import { createActor, type SnapshotFrom } from 'xstate';
import { getShortestPaths, type StatePath } from 'xstate/graph';
import { defaultLimits } from '../../src/core/limits.ts';
import type { Message } from '../../src/core/messages.ts';
import {
  type AgentMachineInput,
  type AgentMachineOutput,
  agentMachine,
  agentOutputOf,
} from '../../src/machines/agent.ts';
import {
  type SessionContext,
  type SessionEvent,
  type SessionMachine,
  type SessionMachineInput,
  type SupervisionPolicy,
  sessionMachine,
} from '../../src/machines/session.ts';
import {
  type GroupEvent,
  type GroupInput,
  type GroupMachine,
  groupMachine,
} from '../../src/machines/supervisor-group.ts';

/**
 * Model-based test support for the session supervisor and the group supervisor: the configurations and inputs the
 * traversals start from, the events a running session (or group) can receive, and the traversals themselves
 * (shortest paths to every (state, incoming transition) pair). Used by test/machines/session.paths.test.ts, which
 * replays the paths on the machines, and by test/engine/troupe-paths.ts, which replays them on both interpreters.
 */

const descriptor = (handoffTools: Record<string, string>) => ({
  limits: defaultLimits,
  toolNames: Object.keys(handoffTools),
  hasOutputSchema: false,
  handoffTools,
});

export interface SessionConfig {
  name: string;
  supervision: SupervisionPolicy;
  entry?: string;
}

const supervision: SupervisionPolicy = {
  strategy: 'restart',
  maxRestarts: 1,
  onExhausted: 'escalate',
  backoffMs: 10,
  backoffFactor: 2,
  maxBackoffMs: 100,
};

export const sessionConfigs: SessionConfig[] = [
  { name: 'restart once, then escalate', supervision },
  { name: 'restart once, then stop', supervision: { ...supervision, onExhausted: 'stop' } },
  { name: 'stop at once', supervision: { ...supervision, strategy: 'stop' } },
  { name: 'escalate at once', supervision: { ...supervision, strategy: 'escalate' } },
  // An entry the catalog lacks (the runtime refuses it before starting; the machine still fails the turn).
  { name: 'unknown entry', supervision, entry: 'ghost' },
];

export function sessionInput(config: SessionConfig): SessionMachineInput {
  return {
    sessionId: 's',
    entry: config.entry ?? 'a',
    agents: {
      a: descriptor({ transfer_to_b: 'b' }),
      b: descriptor({ transfer_to_a: 'a', transfer_to_c: 'c' }),
      c: descriptor({ transfer_to_a: 'a' }),
    },
    history: [{ role: 'user', content: 'hi' }],
    // Depth 2 and no revisits: a -> b -> c reaches the depth limit, b -> a is refused.
    handoffLimits: { maxDepth: 2, maxRevisits: 0 },
    supervision: config.supervision,
  };
}

export type SessionSnapshot = SnapshotFrom<SessionMachine>;

/** A finished agent's output: its input history plus one assistant turn, with or without a handoff call. */
function agentOutput(context: SessionContext, handoffTo: string | null): AgentMachineOutput {
  const id = `h${context.childSeq}`;
  const call = { id, name: `transfer_to_${handoffTo}`, args: {} };
  const message: Message = handoffTo
    ? { role: 'assistant', content: '', agent: context.current, toolCalls: [call] }
    : { role: 'assistant', content: 'answer', agent: context.current };
  const initial = createActor(agentMachine, {
    input: {
      sessionId: 'x',
      agent: context.current,
      limits: defaultLimits,
      toolNames: [],
      hasOutputSchema: false,
      history: [],
      baseLength: 0,
    },
  }).getSnapshot().context;
  return {
    ...agentOutputOf(initial),
    history: [...context.agentHistory, message],
    baseLength: context.agentBase,
    step: 1,
    modelCalls: 1,
    text: handoffTo ? '' : 'answer',
    stopReason: handoffTo ? null : 'completed',
    handoff: handoffTo ? { target: handoffTo, call } : null,
    openCalls: handoffTo ? [call] : [],
  };
}

const backoffEvent = (() => {
  const node = sessionMachine.getStateNodeById('session.backingOff');
  const type = [...node.transitions.keys()].find((key) => key.startsWith('xstate.after.'));
  if (!type) throw new Error('backingOff has no delayed transition');
  return type;
})();

/** The events a session in this state can receive. */
function sessionEvents(snapshot: SessionSnapshot): SessionEvent[] {
  const c = snapshot.context;
  if (snapshot.status !== 'active') return [];
  const events: SessionEvent[] = [
    { type: 'stop' },
    // A sub-agent (agentTool) child failing, in any state: the session must not fail with it.
    { type: 'xstate.error.actor.sub-1', actorId: 'sub-1', error: new Error('sub bug') },
  ];
  if (snapshot.matches('preparing')) {
    events.push(
      { type: 'prepared', history: c.transcript, resume: null },
      { type: 'prepare.failed', error: { name: 'Error', code: 'filter', message: 'bad filter' } },
    );
  }
  if (snapshot.matches('running') && c.activeId !== null) {
    const id = c.activeId;
    const targets = Object.values(c.config.agents[c.current]?.handoffTools ?? {});
    events.push(
      { type: `xstate.done.actor.${id}`, actorId: id, output: agentOutput(c, null) },
      ...targets.map(
        (target): SessionEvent => ({
          type: `xstate.done.actor.${id}`,
          actorId: id,
          output: agentOutput(c, target),
        }),
      ),
      { type: `xstate.error.actor.${id}`, actorId: id, error: new Error('bug') },
      { type: 'agent.crashed', id, error: { name: 'FatalToolError', code: 'tool_fatal', message: 'x' } },
      // Events from children that are no longer active are ignored.
      { type: 'xstate.done.actor.old-1', actorId: 'old-1', output: agentOutput(c, null) },
      { type: 'xstate.error.actor.old-1', actorId: 'old-1', error: new Error('late') },
      // An agentTool call of the active agent: its sub-agent is a child until the runtime ends it.
      {
        type: 'delegate.start',
        id: 'sub-1',
        input: {
          sessionId: 's/sub',
          agent: 'researcher',
          limits: defaultLimits,
          toolNames: [],
          hasOutputSchema: false,
          history: [{ role: 'user', content: 'look it up' }],
          baseLength: 0,
        },
      },
      { type: 'delegate.end', id: 'sub-1' },
      {
        type: 'agent.crashed',
        id: 'old-1',
        error: { name: 'FatalToolError', code: 'tool_fatal', message: 'late' },
      },
    );
  }
  if (snapshot.matches('backingOff')) events.push({ type: backoffEvent } as unknown as SessionEvent);
  if (snapshot.matches('idle') && c.turns < 2)
    events.push({ type: 'user.message', message: { role: 'user', content: 'more' } });
  return events;
}

/** State identity for the traversal: the state value and the context the guards and the assertions read. */
function sessionStateKey(snapshot: SessionSnapshot): string {
  const c = snapshot.context;
  return JSON.stringify({
    value: snapshot.value,
    current: c.current,
    path: c.path,
    refusals: c.refusals,
    restarts: c.restarts,
    stopping: c.stopping,
    turns: c.turns,
    resume: c.resume !== null,
    fromCheckpoint: c.fromCheckpoint,
    stop: c.lastTurn?.stopReason ?? null,
  });
}

/** Shortest paths of the session machine to every (state, incoming transition) pair, from `config`'s input. */
export function generateSessionPaths(config: SessionConfig): StatePath<SessionSnapshot, SessionEvent>[] {
  return getShortestPaths(sessionMachine, {
    input: sessionInput(config),
    events: sessionEvents,
    serializeState: (state, event, prev) =>
      `${sessionStateKey(state)} via ${event ? JSON.stringify({ t: event.type, o: (event as { output?: AgentMachineOutput }).output?.handoff?.target }) : 'init'} from ${prev ? sessionStateKey(prev) : 'start'}`,
    limit: 100_000,
  });
}

// --- The group supervisor (parallel) ---

const memberInput = (agent: string): AgentMachineInput => ({
  sessionId: `g/${agent}`,
  agent,
  limits: defaultLimits,
  toolNames: [],
  hasOutputSchema: false,
  history: [{ role: 'user', content: 'x' }],
  baseLength: 0,
});

export const groupInput: GroupInput = {
  members: [
    { id: 'm1', input: memberInput('m1') },
    { id: 'm2', input: memberInput('m2') },
  ],
};

export type GroupSnapshot = SnapshotFrom<GroupMachine>;

const memberOutput = agentOutputOf(
  createActor(agentMachine, { input: memberInput('m') }).getSnapshot().context,
);

/** The events a group in this state can receive: an abort, and each member's (and an unknown one's) ending. */
function groupEvents(snapshot: GroupSnapshot): GroupEvent[] {
  return snapshot.status !== 'active'
    ? []
    : [
        { type: 'abort' },
        ...['m1', 'm2', 'ghost'].flatMap((id): GroupEvent[] => [
          {
            type: `xstate.done.actor.${id}`,
            actorId: id,
            output: { ...memberOutput, stopReason: 'completed' },
          },
          { type: `xstate.error.actor.${id}`, actorId: id, error: new Error('bug') },
          { type: 'timeout', id },
        ]),
      ];
}

/** Shortest paths of the group machine to every (state, incoming transition) pair, from `groupInput`. */
export function generateGroupPaths(): StatePath<GroupSnapshot, GroupEvent>[] {
  return getShortestPaths(groupMachine, {
    input: groupInput,
    events: groupEvents,
    serializeState: (state, event, prev) =>
      `${JSON.stringify([state.value, Object.keys(state.context.outputs), Object.keys(state.context.failures)])} via ${event?.type ?? 'init'} from ${prev ? JSON.stringify(prev.value) : ''}`,
  });
}
