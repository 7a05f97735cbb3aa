import type { Configuration } from './configuration.ts';
import type { EngineEvent, EngineSnapshot, EngineStateNode, EngineTransition } from './xstate-shapes.ts';

type GuardFunction = ((args: { context: unknown; event: unknown }, params: unknown) => boolean) & {
  check?: (snapshot: EngineSnapshot, args: { context: unknown; event: unknown }, guard: unknown) => boolean;
};

/**
 * XState's evaluateGuard: a guard is an inline function, a name from the machine's `guards`, or `{ type, params }`;
 * built-in guards (and, or, not, stateIn) carry a `check` that XState's own code runs.
 */
export function evaluateGuard(
  guard: unknown,
  context: unknown,
  event: EngineEvent,
  snapshot: EngineSnapshot,
): boolean {
  const isInline = typeof guard === 'function';
  const name = typeof guard === 'string' ? guard : (guard as { type: string }).type;
  const resolved = (isInline ? guard : snapshot.machine.implementations.guards[name]) as
    | GuardFunction
    | undefined;
  if (!isInline && !resolved) throw new Error(`Guard '${name}' is not implemented.'.`);
  if (typeof resolved !== 'function') return evaluateGuard(resolved, context, event, snapshot);
  const args = guardArgs(context, event);
  let params: unknown;
  if (!isInline && typeof guard !== 'string' && guard && typeof guard === 'object' && 'params' in guard) {
    const raw = (guard as { params: unknown }).params;
    params = typeof raw === 'function' ? raw({ context, event }) : raw;
  }
  if (!('check' in resolved) || !resolved.check) return resolved(args, params);
  return resolved.check(snapshot, args, resolved);
}

/**
 * The `{ context, event }` a guard receives. XState makes one per evaluation; the guards of one selection see the
 * same pair, so the last one is reused while it still holds that pair (guards only read it).
 */
let lastArgs: { context: unknown; event: EngineEvent } = { context: undefined, event: { type: '' } };

function guardArgs(context: unknown, event: EngineEvent): { context: unknown; event: EngineEvent } {
  if (lastArgs.context !== context || lastArgs.event !== event) lastArgs = { context, event };
  return lastArgs;
}

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

/** Per state node, the candidate transitions for an event type (exact match first, then wildcards, longest first). */
export class CandidateTable {
  private readonly table = new Map<EngineStateNode, Map<string, readonly EngineTransition[]>>();

  of(node: EngineStateNode, eventType: string): readonly EngineTransition[] {
    let byType = this.table.get(node);
    if (!byType) {
      byType = new Map();
      this.table.set(node, byType);
    }
    let candidates = byType.get(eventType);
    if (!candidates) {
      const exact = node.transitions.get(eventType) ?? [];
      const wildcards = [...node.transitions.keys()]
        .filter((descriptor) => descriptor !== eventType && matchesDescriptor(eventType, descriptor))
        .sort((a, b) => b.length - a.length)
        .flatMap((descriptor) => node.transitions.get(descriptor) ?? []);
      candidates = [...exact, ...wildcards];
      byType.set(eventType, candidates);
    }
    return candidates;
  }
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
  for (const node of configuration.chain) {
    for (const candidate of candidates.of(node, event.type)) {
      const { guard } = candidate;
      let passed: boolean;
      try {
        passed = guard === undefined || evaluateGuard(guard, snapshot.context, event, snapshot);
      } catch (error) {
        const guardType =
          typeof guard === 'string'
            ? guard
            : typeof guard === 'object' && guard
              ? (guard as { type?: string }).type
              : undefined;
        throw new Error(
          `Unable to evaluate guard ${guardType ? `'${guardType}' ` : ''}in transition for event '${event.type}' in state node '${node.id}':\n${(error as Error).message}`,
        );
      }
      if (passed) return candidate;
    }
  }
  return undefined;
}

/** XState's selectEventlessTransitions for one active leaf: the first `always` transition whose guard passes. */
export function selectEventless(
  configuration: Configuration,
  event: EngineEvent,
  snapshot: EngineSnapshot,
): EngineTransition | undefined {
  const { leaf } = configuration;
  if (leaf.type !== 'atomic' && leaf.type !== 'final') return undefined;
  for (const node of configuration.chain) {
    if (!node.always) continue;
    for (const transition of node.always) {
      if (
        transition.guard === undefined ||
        evaluateGuard(transition.guard, snapshot.context, event, snapshot)
      )
        return transition;
    }
  }
  return undefined;
}
