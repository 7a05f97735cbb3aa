import type { AnyActorRef, InspectionEvent, Observer } from 'xstate';
import { machineStructureFields, parentOf } from '../engine/actor-links.ts';
import { normalizeSecretKey, redacted, redactText, secretKeySet } from './secrets.ts';

export { defaultSecretKeys, redact, redacted, secretArguments } from './secrets.ts';

export type InspectObserver = Observer<InspectionEvent> | ((event: InspectionEvent) => void);

/**
 * What an inspection observer gets in place of an actor: its ids, its snapshot (redacted and masked, read when
 * asked), its parent (the same again) and its machine's definition (redacted and masked, without functions). Nothing
 * on it reaches the running actor, its system, its children or its logic.
 */
export interface InspectedActorRef {
  readonly id: string;
  readonly sessionId: string;
  /** The parent actor, as the Stately inspector reads it (`_parent.sessionId`). */
  readonly _parent: InspectedActorRef | undefined;
  /** The machine's definition, as the Stately inspector reads it (`logic.config`), for drawing the statechart. */
  readonly logic: { readonly config: unknown } | undefined;
  getSnapshot(): unknown;
}

/**
 * A transition a microstep took, as an observer gets it (in `_transitions`): the event type, the ids of its source
 * and target states, and its place among the source's transitions for that event type (as `pathCoverage()` of
 * troupe/testing names transitions), never the state nodes themselves.
 */
export interface InspectedTransition {
  readonly eventType: string;
  readonly source: { readonly id: string };
  readonly target: readonly { readonly id: string }[] | undefined;
  readonly reenter: boolean;
  /** The transition's index in its source's list for `eventType` (`always` for eventless ones). */
  readonly index: number;
}

interface TransitionLike {
  eventType: string;
  reenter: boolean;
  source: { id: string; always?: readonly unknown[]; transitions: ReadonlyMap<string, readonly unknown[]> };
  target?: readonly { id: string }[] | undefined;
}

function transitionOf(transition: TransitionLike): InspectedTransition {
  const { eventType, source } = transition;
  const list = eventType === '' ? (source.always ?? []) : (source.transitions.get(eventType) ?? []);
  return Object.freeze({
    eventType,
    source: Object.freeze({ id: source.id }),
    target: transition.target?.map((node) => Object.freeze({ id: node.id })),
    reenter: transition.reenter,
    index: list.indexOf(transition),
  });
}

/** Deeper than this, a value is replaced whole: a secret must not slip through below a depth limit. */
const maxDepth = 200;

interface ActorLike {
  id?: unknown;
  sessionId?: unknown;
  logic?: unknown;
  getSnapshot(): unknown;
}

function isActorRef(value: unknown): value is ActorLike {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { getSnapshot?: unknown }).getSnapshot === 'function' &&
    typeof (value as { sessionId?: unknown }).sessionId === 'string'
  );
}

/**
 * Wraps an inspection observer so that secrets and masked personal data never reach it. Each frame it gets is a new
 * object of plain data: snapshots, events and action parameters copied with secret fields replaced by
 * "[redacted]" (the default secret names plus `secretKeys`, compared without case, `-` or `_`) and, with `maskText`
 * (personal-data masking), every string and every key masked by it. Actors (`actorRef`, `sourceRef`, refs inside
 * snapshots and events) are handed on as InspectedActorRef views; class instances other than errors, maps, sets and
 * dates are shown by their class name only; functions are left out.
 *
 * The observer is the user's code: if it throws, the run goes on. The first error is reported with console.error
 * (as the event bus does for its listeners); the rest are dropped, since an observer sees every event.
 */
export function redactingInspector(
  target: InspectObserver,
  secretKeys: Iterable<string>,
  maskText?: (text: string) => string,
): (event: InspectionEvent) => void {
  const keys = secretKeySet(secretKeys);
  const deliver = typeof target === 'function' ? target : (event: InspectionEvent) => target.next?.(event);
  const views = new WeakMap<object, InspectedActorRef>();
  const definitions = new WeakMap<object, { readonly config: unknown }>();
  const text = (value: string): string => (maskText ? maskText(value) : value);

  const copy = (value: unknown, depth: number): unknown => {
    if (typeof value === 'string') return text(value);
    if (typeof value === 'function' || typeof value === 'symbol') return undefined;
    if (value === null || typeof value !== 'object') return value;
    if (depth > maxDepth) return redacted;
    if (Array.isArray(value)) return value.map((item) => copy(item, depth + 1));
    if (isActorRef(value)) return viewOf(value);
    if (value instanceof Date) return new Date(value.getTime());
    if (value instanceof Set) return [...value].map((item) => copy(item, depth + 1));
    if (value instanceof Map) return [...value].map((entry) => copy(entry, depth + 1));
    if (value instanceof Error) {
      const error = copyFields(value, depth) as Record<string, unknown>;
      return { name: text(value.name), message: text(value.message), ...error };
    }
    const prototype: unknown = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null)
      return `[${(value as { constructor?: { name?: unknown } }).constructor?.name ?? 'object'}]`;
    return copyFields(value, depth);
  };

  const copyFields = (value: object, depth: number, skip?: ReadonlySet<string>): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) {
      if (skip?.has(key)) continue;
      const name = normalizeSecretKey(key);
      const safe = keys.has(name)
        ? redacted
        : typeof inner === 'string' && (name === 'args' || name === 'arguments')
          ? text(redactText(inner, keys))
          : copy(inner, depth + 1);
      if (safe !== undefined)
        Object.defineProperty(out, text(key), {
          value: safe,
          enumerable: true,
          writable: true,
          configurable: true,
        });
    }
    return out;
  };

  /**
   * A snapshot as data. A machine's keeps `matches` and `hasTag`, answered by the real snapshot (they read only its
   * state value and tags), and leaves out `can`, which would run the machine's guards on its real context.
   */
  const snapshotOf = (snapshot: unknown): unknown => {
    if (typeof snapshot !== 'object' || snapshot === null || !('machine' in snapshot))
      return copy(snapshot, 0);
    const machine = snapshot as {
      tags?: unknown;
      matches?: (value: never) => boolean;
      hasTag?: (tag: string) => boolean;
    };
    const data = copyFields(snapshot, 0, machineStructureFields);
    data.historyValue = {};
    // Both functions are made in locals first: V8 allocates a function literal stored straight into a property in
    // the old generation, where it would keep the inspected snapshot alive until a full collection.
    const { matches, hasTag } = machine;
    if (typeof matches === 'function') {
      const matchesValue = (value: never) => matches.call(snapshot, value) === true;
      data.matches = matchesValue;
    }
    if (typeof hasTag === 'function') {
      const hasTagged = (tag: string) => hasTag.call(snapshot, tag) === true;
      data.hasTag = hasTagged;
    }
    return data;
  };

  const definitionOf = (logic: unknown): { readonly config: unknown } | undefined => {
    if (typeof logic !== 'object' || logic === null) return undefined;
    const config = (logic as { config?: unknown }).config;
    if (typeof config !== 'object' || config === null) return undefined;
    let definition = definitions.get(logic);
    if (!definition) {
      definition = Object.freeze({ config: copy(config, 0) });
      definitions.set(logic, definition);
    }
    return definition;
  };

  // The Stately inspector draws the actor tree from each ref's parent; the view carries the parent's view.
  const parentView = (actor: ActorLike): InspectedActorRef | undefined => {
    const parent = parentOf(actor as unknown as AnyActorRef);
    return isActorRef(parent) ? viewOf(parent as unknown as ActorLike) : undefined;
  };

  const viewOf = (actor: ActorLike): InspectedActorRef => {
    let view = views.get(actor);
    if (!view) {
      const sessionId = String(actor.sessionId);
      view = Object.freeze({
        id: text(typeof actor.id === 'string' ? actor.id : sessionId),
        sessionId,
        _parent: parentView(actor),
        logic: definitionOf(actor.logic),
        getSnapshot: () => snapshotOf(actor.getSnapshot()),
      });
      views.set(actor, view);
    }
    return view;
  };

  const frameOf = (event: InspectionEvent): Record<string, unknown> => {
    const frame: Record<string, unknown> = { type: event.type, rootId: event.rootId };
    if (isActorRef(event.actorRef)) frame.actorRef = viewOf(event.actorRef);
    if ('sourceRef' in event)
      frame.sourceRef = isActorRef(event.sourceRef) ? viewOf(event.sourceRef) : undefined;
    if ('event' in event) frame.event = copy(event.event, 0);
    if ('snapshot' in event) frame.snapshot = snapshotOf(event.snapshot);
    if ('action' in event) frame.action = copy(event.action, 0);
    if ('_transitions' in event) frame._transitions = event._transitions.map(transitionOf);
    return frame;
  };

  let reported = false;
  return (event) => {
    try {
      deliver(frameOf(event) as unknown as InspectionEvent);
    } catch (error) {
      // An observer's bug must not fail the run, reject run() or crash the process.
      if (reported) return;
      reported = true;
      queueMicrotask(() => console.error('troupe: the inspection observer threw', error));
    }
  };
}
