import type { AnyStateNode, SnapshotFrom } from 'xstate';
import { getShortestPaths, type StatePath } from 'xstate/graph';
import {
  type AgentEvent,
  type AgentMachine,
  type AgentMachineInput,
  agentMachine,
  type GuardrailPlan,
} from '../machines/agent.ts';
import { guardNames, transitionId } from './transition-words.ts';

/**
 * The agent statechart as a graph: its states and transitions by name, and the shortest paths through it for a
 * given configuration, computed with xstate/graph. Shared by `agentPaths` and `pathCoverage`.
 */

export type AgentSnapshot = SnapshotFrom<AgentMachine>;
export type AgentPathThroughGraph = StatePath<AgentSnapshot, AgentEvent>;

/** State identity for the traversal: the state value and the counters the guards read (not the history text). */
export function stateKey(snapshot: AgentSnapshot): string {
  const c = snapshot.context;
  return JSON.stringify({
    value: snapshot.value,
    step: c.step,
    calls: c.modelCalls,
    retry: c.retryCount,
    counts: c.toolCallCounts,
    sigs: c.callSignatures,
    degraded: c.degradedTools,
    decision: c.decision?.kind ?? null,
    open: c.openCalls.map((call) => call.id),
    decoded: c.answer.outputDecoded,
    forced: c.forcedFinalAnswer,
    stop: c.stopReason,
  });
}

function eventKey(event: AgentEvent | undefined): string {
  return event ? JSON.stringify(event) : 'init';
}

/**
 * Shortest paths to every (state, incoming transition) pair, so that every event edge the machine can take is the
 * last step of some path (as createTestModel does by appending the transition to the state key).
 */
export function shortestAgentPaths(
  input: AgentMachineInput,
  events: readonly AgentEvent[],
  limit = 200_000,
  accepts: (snapshot: AgentSnapshot, event: AgentEvent) => boolean = () => true,
): AgentPathThroughGraph[] {
  return getShortestPaths(agentMachine, {
    input,
    events: [...events],
    serializeState: (state, event, prev) =>
      `${stateKey(state)} via ${eventKey(event)} from ${prev ? stateKey(prev) : 'start'}`,
    // Events the state does not handle would only add self-loops that the runtime can never produce.
    filterEvents: (snapshot, event) => snapshot.can(event) && accepts(snapshot, event),
    limit,
  });
}

/** A stable name for a transition of the definition: source state, event, position among its siblings. */
export const transitionName = transitionId;

/**
 * Guards of the transitions only a session takes (a handoff the tool gate let through, a resume from a checkpoint:
 * with open calls, in the final-output phase, at the step limit or waiting for people; calls that wait for people and
 * their decisions), and the states only those reach: `run()` of an agent without handoffs never takes them.
 */
export const sessionOnlyGuards: readonly string[] = [
  'handsOff',
  'resumingTools',
  'resumedAtStepLimit',
  'resumingFinalOutput',
  'resumingApproval',
  'waitsForPeople',
  'decidesPendingCall',
];
export const sessionOnlyStates: readonly string[] = [
  'agent.handingOff',
  'agent.running.toolUse.awaitingApproval',
];
/** Events only a session sends its agents: people's decisions, and a failed write-ahead commit. */
export const sessionOnlyEvents: readonly string[] = ['approval.decided', 'effects.failed'];

/**
 * The guards and events of the transitions only an agent with guardrails takes, each with the kinds of guardrail
 * (fields of the run's guardrail plan) that make it possible: a transition applies to a run when, for each of its
 * guardrail guards and its event, one of those kinds is on. A `guardrail.blocked` during a model call also comes
 * from streaming output guardrails, which the plan does not list (its `output` is the whole-answer check).
 */
export const guardrailOnlyGuards: ReadonlyMap<string, readonly (keyof GuardrailPlan)[]> = new Map([
  ['checksInput', ['input']],
  ['checksOutput', ['output']],
  ['guardrailBlocked', ['input', 'output']],
  ['toolGuardrailBlocked', ['tools']],
] as const);
export const guardrailOnlyEvents: ReadonlyMap<string, readonly (keyof GuardrailPlan)[]> = new Map([
  ['guardrails.done', ['input', 'output']],
  ['guardrail.blocked', ['parallelInput', 'output']],
] as const);

/** A plan with every kind of guardrail on: what the machine can do at most. */
export const everyGuardrail: GuardrailPlan = Object.freeze({
  input: true,
  parallelInput: true,
  output: true,
  tools: true,
});

/**
 * Every transition of the machine definition (event-driven and eventless), by name: those a plain run can take
 * (`run`), or those only a session takes (`session`).
 */
export function allTransitions(
  root: AnyStateNode = agentMachine.root,
  scope: 'run' | 'session' = 'run',
): string[] {
  const names: string[] = [];
  const wanted = (transition: { guard?: unknown; eventType?: string }) =>
    (guardNames(transition.guard).some((name) => sessionOnlyGuards.includes(name)) ||
      sessionOnlyEvents.includes(transition.eventType ?? '')) ===
    (scope === 'session');
  const visit = (node: AnyStateNode) => {
    for (const [eventType, list] of node.transitions) {
      for (let index = 0; index < list.length; index++)
        if (wanted(list[index] as { guard?: unknown })) names.push(transitionName(node, eventType, index));
    }
    const always = node.always ?? [];
    for (let index = 0; index < always.length; index++)
      if (wanted(always[index] as { guard?: unknown })) names.push(transitionName(node, '', index));
    for (const child of Object.values(node.states)) visit(child);
  };
  visit(root);
  return names;
}

interface TransitionShape {
  guard?: unknown;
  eventType?: string;
  target?: readonly AnyStateNode[] | undefined;
}

/** Whether a transition can be taken by a plain run whose agent has the guardrails `plan` says. */
function appliesTo(transition: TransitionShape, plan: GuardrailPlan): boolean {
  const guards = guardNames(transition.guard);
  if (guards.some((name) => sessionOnlyGuards.includes(name))) return false;
  if (sessionOnlyEvents.includes(transition.eventType ?? '')) return false;
  const needs = [
    ...guards.flatMap((name) => {
      const kinds = guardrailOnlyGuards.get(name);
      return kinds ? [kinds] : [];
    }),
    ...[guardrailOnlyEvents.get(transition.eventType ?? '')].filter((kinds) => kinds !== undefined),
  ];
  return needs.every((kinds) => kinds.some((kind) => plan[kind]));
}

/**
 * The states and transitions of the definition a plain run can reach for an agent with the guardrails `plan` says
 * (none: an agent without guardrails): from the initial state, through the transitions whose guards and events
 * apply. Session-only ones are never in it.
 */
export function applicableGraph(
  plan: GuardrailPlan,
  root: AnyStateNode = agentMachine.root,
): { states: string[]; transitions: string[] } {
  const states = new Set<AnyStateNode>();
  const transitions = new Set<string>();
  const pending: AnyStateNode[] = [];
  const enter = (node: AnyStateNode | undefined) => {
    for (let at = node; at !== undefined && !states.has(at); at = at.parent) {
      states.add(at);
      pending.push(at);
    }
  };
  enter(root);
  while (pending.length > 0) {
    const node = pending.pop() as AnyStateNode;
    for (const target of node.initial?.target ?? []) enter(target);
    const lists: [string, readonly TransitionShape[]][] = [
      ...[...node.transitions].map(([eventType, list]): [string, readonly TransitionShape[]] => [
        eventType,
        list,
      ]),
      ['', node.always ?? []],
    ];
    for (const [eventType, list] of lists)
      for (let index = 0; index < list.length; index++) {
        const transition = list[index] as TransitionShape;
        if (!appliesTo(transition, plan)) continue;
        transitions.add(transitionName(node, eventType, index));
        for (const target of transition.target ?? []) enter(target);
      }
  }
  const order = allStates(root);
  const names = allTransitions(root);
  return {
    states: order.filter((id) => [...states].some((node) => node.id === id)),
    transitions: names.filter((name) => transitions.has(name)),
  };
}

/** The ids of every state node of the definition (`agent`, `agent.running`, `agent.running.toolUse`, ...). */
export function allStates(node: AnyStateNode = agentMachine.root): string[] {
  return [node.id, ...Object.values(node.states).flatMap((child) => allStates(child))];
}

/** The ids of the active state nodes of a state value, e.g. agent.running, agent.running.toolUse, ... */
export function stateIds(prefix: string, value: unknown): string[] {
  if (typeof value === 'string') return [`${prefix}.${value}`];
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, inner]) => [
    `${prefix}.${key}`,
    ...stateIds(`${prefix}.${key}`, inner),
  ]);
}
