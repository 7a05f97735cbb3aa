import { type AnyStateMachine, createActor, type SnapshotFrom } from 'xstate';
import { getShortestPaths } from 'xstate/graph';
import { defaultLimits, type ResolvedLimits } from '../../src/core/limits.ts';
import type { Message } from '../../src/core/messages.ts';
import type { ModelResponse } from '../../src/core/model.ts';
import {
  type AgentCheckpoint,
  type AgentEvent,
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
import {
  controlEvents,
  generatePaths,
  machineInput,
  modelEvents,
  type PathConfig,
  toolEvents,
} from '../machines/agent-paths.ts';
import { type DiffSetup, expectSameBehaviour, type Observation, stepTree } from './differential.ts';

/**
 * The generated paths of Troupe's three machines, as event lists to replay on both interpreters. The agent's come
 * from test/machines/agent-paths.ts (the configurations of agent.paths.test.ts), plus the session-only inputs (a
 * handoff tool, a resume with open calls or at the step limit) traversed the same way; the session's and the
 * group's are built as test/machines/session.paths.test.ts builds them (inputs, event generators, state keys).
 */

export interface Replay<TEvent> {
  name: string;
  input: unknown;
  events: TEvent[];
}

/**
 * Replays paths on both interpreters: the paths of one input as one tree of steps (a shared prefix is taken once,
 * and each further branch goes on from an actor restored where it forks). Returns XState's observations.
 */
export async function replayOnBoth<TEvent extends { type: string }>(
  machine: AnyStateMachine,
  replays: readonly Replay<TEvent>[],
  setup: DiffSetup,
): Promise<Observation[]> {
  const byInput = new Map<unknown, Replay<TEvent>[]>();
  for (const replay of replays) byInput.set(replay.input, [...(byInput.get(replay.input) ?? []), replay]);
  const observations: Observation[] = [];
  for (const [input, group] of byInput) {
    const tree = stepTree(group.map((replay) => replay.events as unknown as { type: string }[]));
    observations.push(
      ...(await expectSameBehaviour(
        machine,
        { ...setup, input },
        { tree },
        `${machine.id}: ${group[0]?.name}`,
      )),
    );
  }
  return observations;
}

const small: ResolvedLimits = {
  ...defaultLimits,
  maxSteps: 2,
  maxDecodeRetries: 1,
  maxDuplicateToolCalls: 1,
  maxToolCallsPerTool: 1,
  toolRetries: 0,
};

export const agentConfigs: PathConfig[] = [
  { name: 'tools + schema', limits: small, tools: true, schema: true },
  {
    name: 'tools + schema + final answer at the step limit',
    limits: { ...small, finalAnswerOnMaxSteps: true },
    tools: true,
    schema: true,
  },
  { name: 'tools, no schema', limits: small, tools: true, schema: false },
  { name: 'no tools + schema', limits: small, tools: false, schema: true },
];

export function agentReplays(config: PathConfig): Replay<AgentEvent>[] {
  return generatePaths(config).map((path, index) => ({
    name: `${config.name} #${index}`,
    input: machineInput(config),
    events: path.steps.slice(1).map((step) => step.event),
  }));
}

const usage = { input: 1, output: 1, cached: 0, reasoning: 0 };
const reply = (partial: Partial<ModelResponse>): ModelResponse => ({
  text: '',
  toolCalls: [],
  stopReason: 'end_turn',
  usage,
  ...partial,
});

/** A checkpoint to resume from: open calls with a `continue_with_tools` decision, or none, at `step`. */
function checkpoint(step: number, open: boolean): AgentCheckpoint {
  const call = { id: 'r1', name: 't', args: { n: 9 } };
  return {
    history: [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: '', agent: 'pathfinder', ...(open ? { toolCalls: [call] } : {}) },
    ],
    step,
    modelCalls: step,
    toolCallsRun: 0,
    toolCallCounts: {},
    callSignatures: {},
    degradedTools: [],
    usage: { input: step, output: step, cached: 0, reasoning: 0 },
    openCalls: open ? [call] : [],
    decision: open ? { kind: 'continue_with_tools', calls: [call] } : null,
  };
}

/** The agent inputs only a session gives: a handoff tool to take, and resumes from checkpoints. */
export function sessionOnlyAgentReplays(): Replay<AgentEvent>[] {
  const handoff: AgentEvent = {
    type: 'model.response',
    response: reply({
      toolCalls: [
        { id: 'h1', name: 'transfer_to_b', args: {} },
        { id: 'h2', name: 't', args: { n: 3 } },
      ],
      stopReason: 'tool_use',
    }),
  };
  const base: PathConfig = { name: 'session', limits: small, tools: true, schema: true };
  const variants: { name: string; input: AgentMachineInput }[] = [
    {
      name: 'handoff tools',
      input: {
        ...machineInput(base),
        toolNames: ['t', 'transfer_to_b'],
        handoffTools: { transfer_to_b: 'b' },
      },
    },
    { name: 'resume with open calls', input: { ...machineInput(base), resume: checkpoint(1, true) } },
    { name: 'resume at the step limit', input: { ...machineInput(base), resume: checkpoint(2, false) } },
    {
      name: 'resume at the step limit, final answer',
      input: {
        ...machineInput(base),
        limits: { ...small, finalAnswerOnMaxSteps: true },
        resume: checkpoint(2, false),
      },
    },
  ];
  const events = [handoff, ...modelEvents(true), ...toolEvents, ...controlEvents];
  return variants.flatMap(({ name, input }) =>
    getShortestPaths(agentMachine, {
      input,
      events,
      serializeState: (state, event, prev) =>
        `${JSON.stringify([state.value, state.context.step, state.context.retryCount, state.context.openCalls.length, state.context.decision?.kind ?? null, state.context.answer.outputDecoded, state.context.degradedTools])} via ${event ? JSON.stringify(event) : 'init'} from ${prev ? JSON.stringify([prev.value, prev.context.step, prev.context.retryCount]) : 'start'}`,
      filterEvents: (snapshot, event) => snapshot.can(event),
      limit: 50_000,
    }).map((path, index) => ({
      name: `${name} #${index}`,
      input,
      events: path.steps.slice(1).map((step) => step.event),
    })),
  );
}

// --- The session supervisor (as test/machines/session.paths.test.ts) ---

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
    handoffLimits: { maxDepth: 2, maxRevisits: 0 },
    supervision: config.supervision,
  };
}

type SessionSnapshot = SnapshotFrom<SessionMachine>;

const initialAgentContext = createActor(agentMachine, {
  input: {
    sessionId: 'x',
    agent: 'a',
    limits: defaultLimits,
    toolNames: [],
    hasOutputSchema: false,
    history: [],
    baseLength: 0,
  },
}).getSnapshot().context;

function agentOutput(context: SessionContext, handoffTo: string | null): AgentMachineOutput {
  const id = `h${context.childSeq}`;
  const call = { id, name: `transfer_to_${handoffTo}`, args: {} };
  const message: Message = handoffTo
    ? { role: 'assistant', content: '', agent: context.current, toolCalls: [call] }
    : { role: 'assistant', content: 'answer', agent: context.current };
  return {
    ...agentOutputOf({
      ...initialAgentContext,
      config: { ...initialAgentContext.config, agent: context.current },
    }),
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

export const backoffEvent = (() => {
  const node = sessionMachine.getStateNodeById('session.backingOff');
  const type = [...node.transitions.keys()].find((key) => key.startsWith('xstate.after.'));
  if (!type) throw new Error('backingOff has no delayed transition');
  return type;
})();

function sessionEvents(snapshot: SessionSnapshot): SessionEvent[] {
  const c = snapshot.context;
  if (snapshot.status !== 'active') return [];
  const events: SessionEvent[] = [
    { type: 'stop' },
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
      { type: 'xstate.done.actor.old-1', actorId: 'old-1', output: agentOutput(c, null) },
      { type: 'xstate.error.actor.old-1', actorId: 'old-1', error: new Error('late') },
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

function sessionKey(snapshot: SessionSnapshot): string {
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

export function sessionReplays(config: SessionConfig): Replay<SessionEvent>[] {
  const input = sessionInput(config);
  return getShortestPaths(sessionMachine, {
    input,
    events: sessionEvents,
    serializeState: (state, event, prev) =>
      `${sessionKey(state)} via ${event ? JSON.stringify({ t: event.type, o: (event as { output?: AgentMachineOutput }).output?.handoff?.target }) : 'init'} from ${prev ? sessionKey(prev) : 'start'}`,
    limit: 100_000,
  }).map((path, index) => ({
    name: `${config.name} #${index}`,
    input,
    events: path.steps.slice(1).map((step) => step.event),
  }));
}

// --- The group supervisor ---

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

type GroupSnapshot = SnapshotFrom<GroupMachine>;

export function groupReplays(): Replay<GroupEvent>[] {
  const output = agentOutputOf(createActor(agentMachine, { input: memberInput('m') }).getSnapshot().context);
  const events = (snapshot: GroupSnapshot): GroupEvent[] =>
    snapshot.status !== 'active'
      ? []
      : [
          { type: 'abort' },
          ...['m1', 'm2', 'ghost'].flatMap((id): GroupEvent[] => [
            { type: `xstate.done.actor.${id}`, actorId: id, output: { ...output, stopReason: 'completed' } },
            { type: `xstate.error.actor.${id}`, actorId: id, error: new Error('bug') },
            { type: 'timeout', id },
          ]),
        ];
  return getShortestPaths(groupMachine, {
    input: groupInput,
    events,
    serializeState: (state, event, prev) =>
      `${JSON.stringify([state.value, Object.keys(state.context.outputs), Object.keys(state.context.failures)])} via ${event?.type ?? 'init'} from ${prev ? JSON.stringify(prev.value) : ''}`,
  }).map((path, index) => ({
    name: `group #${index}`,
    input: groupInput,
    events: path.steps.slice(1).map((step) => step.event),
  }));
}
