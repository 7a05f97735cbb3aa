import { AssertionError } from 'node:assert';
import type { AnyTransitionDefinition, InspectionEvent } from 'xstate';
import { agentMachine, type GuardrailPlan } from '../machines/agent.ts';
import type { InspectedTransition } from '../run/inspect.ts';
import { allStates, allTransitions, applicableGraph, everyGuardrail, stateIds } from './agent-graph.ts';
import { transitionId, transitionWords } from './transition-words.ts';

/** What the recorded runs reached of the agent statechart, and what they never did. */
export interface CoverageReport {
  /** States by id (`agent.running.toolUse.callingModel`). */
  states: { total: number; reached: string[]; missed: string[] };
  /**
   * Transitions in words (`toolUse.callingModel → runningTools on model response with tool calls`), and
   * the same transitions by stable id (`agent.running.toolUse.callingModel --model.response[1]`: source state,
   * event, position among its siblings) in `takenIds` and `missedIds`, in the same order.
   */
  transitions: { total: number; taken: string[]; missed: string[]; takenIds: string[]; missedIds: string[] };
  /** No state and no transition missed (after `ignore`). */
  complete: boolean;
}

/** What a plain run can reach at most: with every kind of guardrail, without what only a session does. */
const atMost = applicableGraph(everyGuardrail);

/** What the paths of an agent can reach: state ids and transition ids. */
export interface ReachableSet {
  states: readonly string[];
  transitions: readonly string[];
}

/** Records which states and transitions of the agent statechart your runs go through. */
export interface PathCoverage {
  /** Pass it as a run's `inspect` option: `run(agent, input, { inspect: coverage.inspect })`. */
  readonly inspect: (event: InspectionEvent) => void;
  /** Runs recorded so far. */
  readonly runs: number;
  /**
   * What the recorded agents can reach, split into reached and missed. Once `agentPaths(agent, { coverage })` has
   * generated paths into it, that is exactly what those agents' paths can reach (an agent without an output schema
   * never retries a decode, one without tools never runs any): running every path makes it complete. Otherwise it
   * is what a plain run of the recorded agents can reach, the guardrail states and transitions counting only when a
   * recorded run's agent has guardrails of their kind. Names in `ignore` (state ids, transition ids or transitions in
   * words; exact, or ending in `*` for a prefix) count as reached.
   */
  report(options?: { ignore?: readonly string[] }): CoverageReport;
  /** Throws an AssertionError listing every missed state and transition, the transitions in words. */
  assertComplete(options?: { ignore?: readonly string[] }): void;
  /**
   * Adds what an agent's paths can reach to what this recorder expects (`agentPaths(agent, { coverage })` calls
   * it with what it generated); several agents' add up.
   */
  expectReachable(reachable: ReachableSet): void;
}

/**
 * A coverage recorder for the agent statechart: give it to `agentPaths(agent, { coverage })` (or its `inspect` to the
 * runs of your own tests), then ask which states and transitions they never reached. It expects what the paths
 * generated into it can reach for their agents, so running every path makes `assertComplete()` pass. Only agent
 * machines are counted (not the session that runs them, nor its effects actor); without `agentPaths`, states and
 * transitions only a session takes (handoffs, approvals, resuming from a checkpoint) are left out, and so are those
 * of guardrails the recorded agents do not have (an agent without guardrails never checks its input or its answer).
 */
export function pathCoverage(): PathCoverage {
  const taken = new Set<string>();
  const reached = new Set<string>();
  const roots = new Set<string>();
  // The kinds of guardrail any recorded run's agent has: which guardrail states and transitions apply.
  const plan: GuardrailPlan = { input: false, parallelInput: false, output: false, tools: false };
  // What the agents given to agentPaths can reach, once any was.
  let expected: { states: Set<string>; transitions: Set<string> } | undefined;
  const inspect = (event: InspectionEvent) => {
    if (event.type === '@xstate.actor' && event.rootId === event.actorRef.sessionId)
      roots.add(event.actorRef.sessionId);
    if (event.type !== '@xstate.microstep') return;
    // Agent machines only: the root of a plain run, or the agents a session runs (not the session, not its effects).
    const snapshot = event.snapshot as unknown as { value: unknown; context?: unknown };
    if (!isAgentContext(snapshot.context)) return;
    const value = snapshot.value;
    const guardrails = snapshot.context.config.guardrails;
    for (const kind of Object.keys(plan) as (keyof GuardrailPlan)[]) if (guardrails[kind]) plan[kind] = true;
    reached.add('agent');
    for (const id of stateIds('agent', value)) reached.add(id);
    // Troupe's inspector hands transitions on as InspectedTransition (ids and an index); XState's own, as nodes.
    for (const transition of event._transitions as readonly (
      | InspectedTransition
      | AnyTransitionDefinition
    )[]) {
      const { source, eventType } = transition;
      const index = 'index' in transition ? transition.index : indexOf(transition);
      taken.add(transitionId(source, eventType, index));
      // Taking a transition out of a state proves the state was entered (transient ones never show in snapshots).
      reached.add(source.id);
    }
  };
  const report = (options: { ignore?: readonly string[] } = {}): CoverageReport => {
    const ignore = options.ignore ?? [];
    const matches = (name: string) =>
      ignore.some((pattern) =>
        pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern,
      );
    let states: string[];
    let transitions: string[];
    if (expected !== undefined) {
      const wanted = expected;
      states = allStates().filter((id) => wanted.states.has(id));
      transitions = allTransitionIds().filter((id) => wanted.transitions.has(id));
    } else {
      const applicable = applicableGraph(plan);
      // What a plain run did applies to its agent (a streaming output guardrail's block is not in the plan).
      states = atMost.states.filter((id) => applicable.states.includes(id) || reached.has(id));
      transitions = atMost.transitions.filter((id) => applicable.transitions.includes(id) || taken.has(id));
    }
    const missedStates = states.filter((id) => !reached.has(id) && !matches(id));
    const missedIds = transitions.filter(
      (id) => !taken.has(id) && !matches(id) && !matches(transitionWords(id)),
    );
    const takenIds = transitions.filter((id) => taken.has(id));
    return {
      states: { total: states.length, reached: states.filter((id) => reached.has(id)), missed: missedStates },
      transitions: {
        total: transitions.length,
        taken: takenIds.map((id) => transitionWords(id)),
        missed: missedIds.map((id) => transitionWords(id)),
        takenIds,
        missedIds,
      },
      complete: missedStates.length === 0 && missedIds.length === 0,
    };
  };
  return {
    inspect,
    get runs() {
      return roots.size;
    },
    report,
    expectReachable(reachable) {
      expected ??= { states: new Set(), transitions: new Set() };
      for (const id of reachable.states) expected.states.add(id);
      for (const id of reachable.transitions) expected.transitions.add(id);
    },
    assertComplete(options) {
      const result = report(options);
      if (result.complete) return;
      const lines = [
        `the runs (${roots.size}) left ${result.states.missed.length} of ${result.states.total} states and ${result.transitions.missed.length} of ${result.transitions.total} transitions of the agent statechart unreached:`,
        ...result.states.missed.map((id) => `  state ${id}`),
        ...result.transitions.missed.map(
          (words, at) => `  transition ${words}  (${result.transitions.missedIds[at] as string})`,
        ),
      ];
      throw new AssertionError({
        message: lines.join('\n'),
        actual: { states: result.states.missed, transitions: result.transitions.missed },
        expected: { states: [], transitions: [] },
        operator: 'assertComplete',
      });
    },
  };
}

/** Whether an actor's context is an agent machine's (the agent's run configuration, with its guardrail plan). */
function isAgentContext(context: unknown): context is { config: { guardrails: GuardrailPlan } } {
  if (typeof context !== 'object' || context === null || !('config' in context)) return false;
  const config = context.config;
  return (
    typeof config === 'object' &&
    config !== null &&
    'guardrails' in config &&
    'toolNames' in config &&
    typeof config.guardrails === 'object' &&
    config.guardrails !== null
  );
}

/** Every transition id of the definition: those a plain run can take, then those only a session takes. */
function allTransitionIds(): string[] {
  return [...allTransitions(agentMachine.root, 'run'), ...allTransitions(agentMachine.root, 'session')];
}

/** A transition's place among its source's transitions for its event type (`always` for eventless ones). */
function indexOf(transition: AnyTransitionDefinition): number {
  const { source, eventType } = transition;
  const list = eventType === '' ? (source.always ?? []) : (source.transitions.get(eventType) ?? []);
  return list.indexOf(transition);
}
