import type { AnyStateMachine, EventObject, Snapshot } from 'xstate';
import { getShortestPaths, type StatePath } from 'xstate/graph';
import {
  type AgentCheckpoint,
  type AgentEvent,
  type AgentMachineInput,
  agentMachine,
} from '../../src/machines/agent.ts';
import type { SessionEvent } from '../../src/machines/session.ts';
import type { GroupEvent } from '../../src/machines/supervisor-group.ts';
import {
  agentCheckpoint,
  controlEvents,
  generatePaths,
  machineInput,
  modelEvents,
  type PathConfig,
  reply,
  smallLimits,
  toolEvents,
} from '../machines/agent-paths.ts';
import {
  generateGroupPaths,
  generateSessionPaths,
  groupInput,
  type SessionConfig,
  sessionInput,
} from '../machines/session-paths.ts';
import { type DiffSetup, expectSameBehaviour, type Observation, stepTree } from './differential.ts';

/**
 * The generated paths of Troupe's three machines, as event lists to replay on both interpreters. The agent's come
 * from test/machines/agent-paths.ts (the configurations of agent.paths.test.ts), plus the session-only inputs (a
 * handoff tool, a resume with open calls or at the step limit) traversed the same way; the session's and the
 * group's from test/machines/session-paths.ts (the inputs, event generators and state keys of
 * session.paths.test.ts).
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

/** A replay of each path: its events after the initial step, all from the one `input`. */
function replaysOf<TEvent extends EventObject>(
  name: string,
  input: unknown,
  paths: StatePath<Snapshot<unknown>, TEvent>[],
): Replay<TEvent>[] {
  return paths.map((path, index) => ({
    name: `${name} #${index}`,
    input,
    events: path.steps.slice(1).map((step) => step.event),
  }));
}

export function agentReplays(config: PathConfig): Replay<AgentEvent>[] {
  return replaysOf(config.name, machineInput(config), generatePaths(config));
}

/** A checkpoint to resume from: open calls with a `continue_with_tools` decision, or none, at `step`. */
function checkpoint(step: number, open: boolean): AgentCheckpoint {
  const call = { id: 'r1', name: 't', args: { n: 9 } };
  return agentCheckpoint({
    step,
    open: open ? [call] : [],
    history: [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: '', agent: 'pathfinder', ...(open ? { toolCalls: [call] } : {}) },
    ],
    usage: { input: step, output: step, cached: 0, reasoning: 0 },
  });
}

/** A checkpoint taken while the open call `r1` waited for a person. */
function awaitingCheckpoint(): AgentCheckpoint {
  return {
    ...checkpoint(1, true),
    approvals: { pending: [{ callId: 'r1', kind: 'approval' }], decided: [] },
  };
}

/** Events only a session sends: calls that wait for people, their decisions, a failed write-ahead commit. */
const approvalEvents: AgentEvent[] = [
  {
    type: 'tools.done',
    results: [],
    pending: [
      { callId: 'c1', kind: 'approval' },
      { callId: 'c2', kind: 'question' },
    ],
  },
  {
    type: 'tools.done',
    results: [
      {
        callId: 'c1',
        name: 't',
        content: 'ok',
        isError: false,
        executed: true,
        degraded: false,
        attempts: 1,
      },
    ],
    pending: [{ callId: 'c2', kind: 'approval' }],
  },
  { type: 'approval.decided', callId: 'c1', decision: { type: 'approve' } },
  { type: 'approval.decided', callId: 'c2', decision: { type: 'reject', reason: 'no' } },
  { type: 'approval.decided', callId: 'r1', decision: { type: 'answer', text: 'yes' } },
  {
    type: 'effects.failed',
    error: { name: 'StoreIoError', code: 'store_failed', message: 'disk full' },
  },
];

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
  // The tool gate let the handoff call through (the agent machine then hands off).
  const handedOff: AgentEvent = {
    type: 'tools.done',
    results: [
      {
        callId: 'h1',
        name: 'transfer_to_b',
        content: 'Transferred to b.',
        isError: false,
        executed: false,
        degraded: false,
        attempts: 0,
        handoff: true,
      },
    ],
  };
  const base: PathConfig = { name: 'session', limits: smallLimits, tools: true, schema: true };
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
        limits: { ...smallLimits, finalAnswerOnMaxSteps: true },
        resume: checkpoint(2, false),
      },
    },
    {
      name: 'resume in the final-output phase',
      input: {
        ...machineInput(base),
        resume: { ...checkpoint(1, false), phase: 'finalOutput', retryCount: 1 },
      },
    },
    {
      name: 'resume in the last answer after a tool-call limit',
      input: {
        ...machineInput(base),
        resume: { ...checkpoint(1, false), phase: 'finalOutput', forcedFinalAnswer: 'tool_call_limit' },
      },
    },
    { name: 'resume waiting for people', input: { ...machineInput(base), resume: awaitingCheckpoint() } },
    { name: 'calls that wait for people', input: machineInput(base) },
  ];
  const events = [
    handoff,
    handedOff,
    ...modelEvents(true),
    ...toolEvents,
    ...controlEvents,
    ...approvalEvents,
  ];
  return variants.flatMap(({ name, input }) =>
    replaysOf(
      name,
      input,
      getShortestPaths(agentMachine, {
        input,
        events,
        serializeState: (state, event, prev) =>
          `${JSON.stringify([state.value, state.context.step, state.context.retryCount, state.context.openCalls.length, state.context.decision?.kind ?? null, state.context.answer.outputDecoded, state.context.degradedTools, state.context.approvals])} via ${event ? JSON.stringify(event) : 'init'} from ${prev ? JSON.stringify([prev.value, prev.context.step, prev.context.retryCount]) : 'start'}`,
        filterEvents: (snapshot, event) => snapshot.can(event),
        limit: 50_000,
      }),
    ),
  );
}

// --- The session supervisor and the group supervisor (test/machines/session-paths.ts) ---

export function sessionReplays(config: SessionConfig): Replay<SessionEvent>[] {
  return replaysOf(config.name, sessionInput(config), generateSessionPaths(config));
}

export function groupReplays(): Replay<GroupEvent>[] {
  return replaysOf('group', groupInput, generateGroupPaths());
}
