import type { ActorRefLike, InspectionEvent, Observer } from 'xstate';
import { redact, secretKeySet } from './secrets.ts';

export { defaultSecretKeys, redact, redacted, secretArguments } from './secrets.ts';

export type InspectObserver = Observer<InspectionEvent> | ((event: InspectionEvent) => void);

/** The parts of an inspection event that carry data (the rest are ids, refs and transition definitions). */
const payloadKeys: ReadonlySet<string> = new Set(['snapshot', 'event', 'action']);

/** Properties of an actor ref that hand out its snapshot, directly or through another ref. */
const snapshotReaders: ReadonlySet<PropertyKey> = new Set(['getSnapshot', 'getPersistedSnapshot']);

/**
 * Wraps an inspection observer so that secrets never reach it: snapshots, events and action
 * parameters are redacted, and every actor ref handed on (`actorRef`, `sourceRef`, refs inside snapshots, a ref's
 * `_parent`) reads its snapshot through the same filter (the Stately inspector calls `actorRef.getSnapshot()` when
 * an actor registers). Secret names are the defaults plus `secretKeys`, compared without case, `-` or `_`.
 * With `maskText` (personal-data masking), every string they carry is masked by it too.
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
  const wrappedRefs = new WeakMap<object, object>();
  const wrapRef = (ref: object): object => {
    let wrapped = wrappedRefs.get(ref);
    if (!wrapped) {
      wrapped = new Proxy(ref, {
        get(actor, property, receiver) {
          const value: unknown = Reflect.get(actor, property, receiver);
          if (snapshotReaders.has(property) && typeof value === 'function')
            return (...args: unknown[]) => redact(value.apply(actor, args), keys, wrapRef, maskText);
          if (property === '_parent' && typeof value === 'object' && value !== null) return wrapRef(value);
          return typeof value === 'function' ? value.bind(actor) : value;
        },
      });
      wrappedRefs.set(ref, wrapped);
    }
    return wrapped;
  };
  let reported = false;
  return (event) => {
    try {
      const copy: Record<string, unknown> = { ...event };
      for (const [key, value] of Object.entries(event)) {
        if (isActorRef(value)) copy[key] = wrapRef(value);
        else if (payloadKeys.has(key)) copy[key] = redact(value, keys, wrapRef, maskText);
      }
      deliver(copy as unknown as InspectionEvent);
    } catch (error) {
      // An observer's bug must not fail the run, reject run() or crash the process.
      if (reported) return;
      reported = true;
      queueMicrotask(() => console.error('troupe: the inspection observer threw', error));
    }
  };
}

function isActorRef(value: unknown): value is ActorRefLike {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { getSnapshot?: unknown }).getSnapshot === 'function'
  );
}
