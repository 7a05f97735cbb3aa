import type { AnyActorRef, EventObject } from 'xstate';

/**
 * The few members of XState's actor objects that are not in its public types and that Troupe relies on, on both
 * interpreters: an actor's parent, the system's relay (what `sendBack` and `sendParent` use), and an actor's stop
 * procedure. They are kept here, beside the compiled interpreter, so that one file says what an XState upgrade must
 * keep: the runtime check (runtime-gate.ts) requires each of them before the compiled interpreter runs, and on an
 * xstate without one these functions fall back to the public API (no parent, a plain `send`, no orphan stopped)
 * rather than throw.
 */
interface ActorInternals {
  _parent?: AnyActorRef;
  _stop?: () => void;
}

interface SystemInternals {
  _relay?: (source: AnyActorRef, target: AnyActorRef, event: EventObject) => void;
}

/**
 * The fields of a machine snapshot that are the machine's own structure (its state nodes, the machine, the history
 * of its history states), not the actor's data: an inspector leaves them out of what it shows.
 */
export const machineStructureFields: ReadonlySet<string> = new Set(['machine', '_nodes', 'historyValue']);

/** The actor that spawned or invoked `actor`; undefined for a root actor. */
export function parentOf(actor: AnyActorRef): AnyActorRef | undefined {
  const parent = (actor as AnyActorRef & ActorInternals)._parent;
  return typeof parent === 'object' && parent !== null ? parent : undefined;
}

/** Delivers `event` from `source` to `target` as XState's own `sendBack` does (inspected, in order). */
export function relay(system: unknown, source: AnyActorRef, target: AnyActorRef, event: EventObject): void {
  const internals = system as SystemInternals;
  if (typeof internals._relay === 'function') internals._relay(source, target, event);
  else target.send(event);
}

/**
 * Stops the children a failed actor left running. An actor that errors from its own action leaves its children
 * running (statelyai/xstate#5153): their cleanup never runs, so their in-flight calls are never aborted. The public
 * API cannot stop a non-root actor; the internal stop runs the child's normal stop procedure.
 */
export function stopOrphans(failed: { getSnapshot(): unknown }): void {
  const children = (failed.getSnapshot() as { children?: Record<string, unknown> }).children ?? {};
  for (const orphan of Object.values(children)) {
    const stop = (orphan as ActorInternals)._stop;
    if (typeof stop === 'function') stop.call(orphan);
  }
}
