import {
  type AnyActorScope,
  type AnyTransitionDefinition,
  createActor,
  createMachine,
  type InspectionEvent,
} from 'xstate';
import { type AgentEvent, type AgentMachineInput, agentMachine } from '../machines/agent.ts';
import { type AgentSnapshot, stateIds, stateKey } from './agent-graph.ts';
import { transitionId } from './transition-words.ts';

/** A walk through the agent statechart: the events sent, the snapshot after each, the transitions each took. */
export interface GraphWalk {
  /** The events, in order. */
  events: AgentEvent[];
  /** The initial snapshot, then the snapshot after each event. */
  states: AgentSnapshot[];
  /** Ids of the transitions taken on the way (those of the initial state's entry included). */
  transitions: string[];
}

/** What an agent statechart can do for one configuration and one set of events, found by walking every state. */
export interface AgentReach {
  /** Ids of the states the walk entered, in the order first entered. */
  states: string[];
  /** Ids of the transitions the walk took, in the order first taken, each with the shortest walk that takes it. */
  transitions: Map<string, GraphWalk>;
  /** The shortest walk to each way of ending: the state it leaves, the event that ends it, the stop reason. */
  endings: Map<string, GraphWalk>;
  /** The walk followed by one more event. */
  extend(walk: GraphWalk, event: AgentEvent): GraphWalk;
}

/** The transitions taken by one step, recorded through the actor scope's inspection events. */
function recordingScope(): { scope: AnyActorScope; drain: () => string[] } {
  let taken: string[] = [];
  const recorder = createActor(createMachine({}), {
    inspect: (event: InspectionEvent) => {
      if (event.type !== '@xstate.microstep') return;
      for (const transition of event._transitions as readonly AnyTransitionDefinition[]) {
        const { source, eventType } = transition;
        const list = eventType === '' ? (source.always ?? []) : (source.transitions.get(eventType) ?? []);
        taken.push(transitionId(source, eventType, list.indexOf(transition)));
      }
    },
  });
  const scope = {
    self: recorder,
    logger: () => {},
    id: '',
    sessionId: 'paths',
    defer: () => {},
    system: recorder.system,
    stopChild: () => {},
    emit: () => {},
    actionExecutor: () => {},
  } as unknown as AnyActorScope;
  return {
    scope,
    drain: () => {
      const out = taken;
      taken = [];
      return out;
    },
  };
}

/**
 * Walks the agent statechart breadth first from the initial state of `input`, sending in every state each of
 * `events` the state handles and `accepts`: every state it can reach (told apart by the counters the guards read),
 * every transition it can take, and the shortest walk to each. The same walk generates `agentPaths` and decides
 * what `pathCoverage` expects of them, so that running every path covers all that the agent can reach.
 */
export function exploreAgent(
  input: AgentMachineInput,
  events: readonly AgentEvent[],
  accepts: (snapshot: AgentSnapshot, event: AgentEvent) => boolean = () => true,
  limit = 200_000,
): AgentReach {
  const { scope, drain } = recordingScope();
  const states = new Set<string>();
  const transitions = new Map<string, GraphWalk>();
  const endings = new Map<string, GraphWalk>();
  const enter = (snapshot: AgentSnapshot, taken: readonly string[]) => {
    states.add('agent');
    for (const id of stateIds('agent', snapshot.value)) states.add(id);
    // Transient states never show in a snapshot: taking a transition out of one proves it was entered.
    for (const id of taken) states.add(id.slice(0, id.indexOf(' --')));
  };
  const extend = (walk: GraphWalk, event: AgentEvent): GraphWalk => {
    const snapshot = walk.states[walk.states.length - 1] as AgentSnapshot;
    const next = agentMachine.transition(snapshot, event, scope) as AgentSnapshot;
    return {
      events: [...walk.events, event],
      states: [...walk.states, next],
      transitions: [...walk.transitions, ...drain()],
    };
  };
  const initial = agentMachine.getInitialSnapshot(scope, input) as AgentSnapshot;
  const first: GraphWalk = { events: [], states: [initial], transitions: drain() };
  enter(initial, first.transitions);
  for (const id of first.transitions) if (!transitions.has(id)) transitions.set(id, first);
  const seen = new Set([stateKey(initial)]);
  const queue: GraphWalk[] = [first];
  for (let at = 0; at < queue.length; at++) {
    if (seen.size > limit)
      throw new RangeError(`exploreAgent: more than ${limit} states; give the agent smaller limits`);
    const walk = queue[at] as GraphWalk;
    const snapshot = walk.states[walk.states.length - 1] as AgentSnapshot;
    if (snapshot.status !== 'active') continue;
    for (const event of events) {
      if (!snapshot.can(event) || !accepts(snapshot, event)) continue;
      const longer = extend(walk, event);
      const next = longer.states[longer.states.length - 1] as AgentSnapshot;
      const taken = longer.transitions.slice(walk.transitions.length);
      enter(next, taken);
      for (const id of taken) if (!transitions.has(id)) transitions.set(id, longer);
      if (next.status === 'done') {
        const key = JSON.stringify([snapshot.value, event, next.context.stopReason]);
        if (!endings.has(key)) endings.set(key, longer);
        continue;
      }
      const key = stateKey(next);
      if (seen.has(key)) continue;
      seen.add(key);
      queue.push(longer);
    }
  }
  return { states: [...states], transitions, endings, extend };
}
