import { AssertionError } from 'node:assert';
import type { AnyTransitionDefinition, InspectionEvent } from 'xstate';
import type { GuardrailPlan } from '../machines/agent.ts';
import type { InspectedTransition } from '../run/inspect.ts';
import { applicableGraph, everyGuardrail, stateIds, transitionName } from './agent-graph.ts';

/** What the recorded runs reached of the agent statechart, and what they never did. */
export interface CoverageReport {
  states: { total: number; reached: string[]; missed: string[] };
  transitions: { total: number; taken: string[]; missed: string[] };
  /** No state and no transition missed (after `ignore`). */
  complete: boolean;
}

/** What a plain run can reach at most: with every kind of guardrail, without what only a session does. */
const atMost = applicableGraph(everyGuardrail);

/** Records which states and transitions of the agent statechart your runs go through. */
export interface PathCoverage {
  /** Pass it as a run's `inspect` option: `run(agent, input, { inspect: coverage.inspect })`. */
  readonly inspect: (event: InspectionEvent) => void;
  /** Runs recorded so far. */
  readonly runs: number;
  /**
   * The states (`agent.running.toolUse.callingModel`) and transitions (`agent.running.toolUse.deciding --[2]`,
   * source state, event, position) a plain run of the recorded agents can take, split into reached and missed: the
   * guardrail states and transitions count only when a recorded run's agent has guardrails of their kind. Names in `ignore`
   * (exact, or ending in `*` for a prefix) count as reached.
   */
  report(options?: { ignore?: readonly string[] }): CoverageReport;
  /** Throws an AssertionError listing every missed state and transition. */
  assertComplete(options?: { ignore?: readonly string[] }): void;
}

/**
 * A coverage recorder for the agent statechart: give its `inspect` to the runs of your own tests (or to
 * `agentPaths(agent, { coverage })`), then ask which states and transitions they never reached. Only the agent
 * machine of each run is counted (not its effects actor); states and transitions only a session takes (handoffs,
 * approvals, resuming from a checkpoint) are left out, and so are those of guardrails the recorded agents do not have
 * (an agent without guardrails never checks its input or its answer).
 */
export function pathCoverage(): PathCoverage {
  const taken = new Set<string>();
  const reached = new Set<string>();
  const roots = new Set<string>();
  // The kinds of guardrail any recorded run's agent has: which guardrail states and transitions apply.
  const plan: GuardrailPlan = { input: false, parallelInput: false, output: false, tools: false };
  const inspect = (event: InspectionEvent) => {
    if (event.rootId !== event.actorRef.sessionId) return;
    if (event.type === '@xstate.actor') roots.add(event.actorRef.sessionId);
    if (event.type !== '@xstate.microstep') return;
    const snapshot = event.snapshot as unknown as {
      value: unknown;
      context: { config: { guardrails: GuardrailPlan } };
    };
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
      taken.add(transitionName(source, eventType, index));
      // Taking a transition out of a state proves the state was entered (transient ones never show in snapshots).
      reached.add(source.id);
    }
  };
  const report = (options: { ignore?: readonly string[] } = {}): CoverageReport => {
    const ignore = options.ignore ?? [];
    const ignored = (name: string) =>
      ignore.some((pattern) =>
        pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern,
      );
    const applicable = applicableGraph(plan);
    // What a plain run did applies to its agent (a streaming output guardrail's block is not in the plan).
    const states = atMost.states.filter((id) => applicable.states.includes(id) || reached.has(id));
    const transitions = atMost.transitions.filter(
      (name) => applicable.transitions.includes(name) || taken.has(name),
    );
    const missedStates = states.filter((id) => !reached.has(id) && !ignored(id));
    const missedTransitions = transitions.filter((name) => !taken.has(name) && !ignored(name));
    return {
      states: { total: states.length, reached: states.filter((id) => reached.has(id)), missed: missedStates },
      transitions: {
        total: transitions.length,
        taken: transitions.filter((name) => taken.has(name)),
        missed: missedTransitions,
      },
      complete: missedStates.length === 0 && missedTransitions.length === 0,
    };
  };
  return {
    inspect,
    get runs() {
      return roots.size;
    },
    report,
    assertComplete(options) {
      const result = report(options);
      if (result.complete) return;
      const lines = [
        `the runs (${roots.size}) left ${result.states.missed.length} of ${result.states.total} states and ${result.transitions.missed.length} of ${result.transitions.total} transitions of the agent statechart unreached:`,
        ...result.states.missed.map((id) => `  state ${id}`),
        ...result.transitions.missed.map((name) => `  transition ${name}`),
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

/** A transition's place among its source's transitions for its event type (`always` for eventless ones). */
function indexOf(transition: AnyTransitionDefinition): number {
  const { source, eventType } = transition;
  const list = eventType === '' ? (source.always ?? []) : (source.transitions.get(eventType) ?? []);
  return list.indexOf(transition);
}
