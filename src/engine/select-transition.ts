import type { Configuration } from './configuration.ts';
import type { GuardTest, GuardTests } from './guards.ts';
import type { EngineEvent, EngineSnapshot, EngineStateNode, EngineTransition } from './xstate-shapes.ts';

/**
 * Event-descriptor matching as XState does it: exact, `*`, or a `prefix.*` wildcard. XState's development build also
 * warns, once per state and event type, about a wildcard inside a descriptor; that warning stays XState's own (its
 * `can()` and its fallback paths give it), the compiled interpreter does not give it a second time.
 */
function matchesDescriptor(eventType: string, descriptor: string): boolean {
  if (descriptor === eventType || descriptor === '*') return true;
  if (!descriptor.endsWith('.*')) return false;
  const partial = descriptor.split('.');
  const tokens = eventType.split('.');
  for (let index = 0; index < partial.length; index++) {
    if (partial[index] === '*') return index === partial.length - 1;
    if (partial[index] !== tokens[index]) return false;
  }
  return true;
}

/** A transition that may be taken, with its guard's test (none: it passes). */
export interface Candidate {
  transition: EngineTransition;
  test: GuardTest | undefined;
}

/**
 * Per configuration and event type, the candidate transitions in the order XState tries them: the leaf's first,
 * then each ancestor's up to the root; within a node, exact matches first, then wildcards, longest first. Per
 * configuration too, its eventless (`always`) transitions in the same order. Built on first use and kept on the
 * configuration.
 */
export class CandidateTable {
  constructor(private readonly guards: GuardTests) {}

  of(configuration: Configuration, eventType: string): readonly Candidate[] {
    let candidates = configuration.candidates.get(eventType);
    if (!candidates) {
      candidates = configuration.chain.flatMap((node) =>
        nodeCandidates(node, eventType).map((transition) => this.candidate(transition)),
      );
      configuration.candidates.set(eventType, candidates);
    }
    return candidates;
  }

  /** The `always` transitions of the configuration's nodes, leaf first (empty when the leaf is not atomic). */
  always(configuration: Configuration): readonly Candidate[] {
    let candidates = configuration.eventless;
    if (!candidates) {
      const { leaf } = configuration;
      candidates =
        leaf.type !== 'atomic' && leaf.type !== 'final'
          ? []
          : configuration.chain.flatMap((node) =>
              (node.always ?? []).map((transition) => this.candidate(transition)),
            );
      configuration.eventless = candidates;
    }
    return candidates;
  }

  private candidate(transition: EngineTransition): Candidate {
    const { guard } = transition;
    return { transition, test: guard === undefined ? undefined : this.guards.of(guard) };
  }
}

/** One node's transitions for an event type: exact match first, then wildcards, longest first. */
function nodeCandidates(node: EngineStateNode, eventType: string): EngineTransition[] {
  const exact = node.transitions.get(eventType) ?? [];
  const wildcards = [...node.transitions.keys()]
    .filter((descriptor) => descriptor !== eventType && matchesDescriptor(eventType, descriptor))
    .sort((a, b) => b.length - a.length)
    .flatMap((descriptor) => node.transitions.get(descriptor) ?? []);
  return [...exact, ...wildcards];
}

/**
 * XState's transitionNode for a configuration chain: the deepest node with a candidate whose guard passes wins;
 * a guard that throws is reported the way StateNode.next reports it.
 */
export function selectTransition(
  configuration: Configuration,
  candidates: CandidateTable,
  event: EngineEvent,
  snapshot: EngineSnapshot,
): EngineTransition | undefined {
  const list = candidates.of(configuration, event.type);
  const context = snapshot.context;
  // Read once each, and a candidate's transition only when it is taken: this runs in V8's baseline tiers for a
  // while, where every property read is an inline-cache call.
  const count = list.length;
  for (let index = 0; index < count; index++) {
    const candidate = list[index] as Candidate;
    const test = candidate.test;
    if (test === undefined) return candidate.transition;
    let passed: boolean;
    try {
      passed = test(context, event, snapshot);
    } catch (error) {
      const { transition } = candidate;
      const { guard } = transition;
      const guardType =
        typeof guard === 'string'
          ? guard
          : typeof guard === 'object' && guard
            ? (guard as { type?: string }).type
            : undefined;
      throw new Error(
        `Unable to evaluate guard ${guardType ? `'${guardType}' ` : ''}in transition for event '${event.type}' in state node '${transition.source.id}':\n${(error as Error).message}`,
      );
    }
    if (passed) return candidate.transition;
  }
  return undefined;
}

/** XState's selectEventlessTransitions for one active leaf: the first `always` transition whose guard passes. */
export function selectEventless(
  configuration: Configuration,
  candidates: CandidateTable,
  event: EngineEvent,
  snapshot: EngineSnapshot,
): EngineTransition | undefined {
  const list = candidates.always(configuration);
  const count = list.length;
  if (count === 0) return undefined;
  const context = snapshot.context;
  for (let index = 0; index < count; index++) {
    const candidate = list[index] as Candidate;
    const test = candidate.test;
    if (test === undefined || test(context, event, snapshot)) return candidate.transition;
  }
  return undefined;
}
