import type { ActorRefLike, InspectionEvent, Observer } from 'xstate';
import type { Agent } from '../agent/define-agent.ts';
import type { Tool } from '../tools/tool.ts';

export type InspectObserver = Observer<InspectionEvent> | ((event: InspectionEvent) => void);

/** Argument and field names always treated as secrets, whatever the tools declare. */
export const defaultSecretKeys: readonly string[] = [
  'apiKey',
  'api_key',
  'authorization',
  'Authorization',
  'password',
  'secret',
  'accessToken',
  'access_token',
];

export const redacted = '[redacted]';

/**
 * A copy of `value` with every property named in `keys` replaced by "[redacted]", at any depth. Plain objects and
 * arrays are copied; anything else (actor refs, class instances) is kept as is: actor refs serialize to their id.
 */
export function redact(value: unknown, keys: ReadonlySet<string>, depth = 0): unknown {
  if (depth > 64 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => redact(item, keys, depth + 1));
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    copy[key] = keys.has(key) ? redacted : redact(inner, keys, depth + 1);
  }
  return copy;
}

/** A tool call's arguments as events, approvals and traces show them: declared and well-known secrets redacted. */
export function redactArguments<T>(args: T, secret: readonly string[]): T {
  return redact(
    args,
    secret.length === 0 ? defaultSecretSet : new Set([...defaultSecretKeys, ...secret]),
  ) as T;
}

const defaultSecretSet: ReadonlySet<string> = new Set(defaultSecretKeys);

/**
 * Wraps an inspection observer so that secrets never reach it (REQUIREMENTS O3): snapshots, events and action
 * parameters are redacted, and the actor ref handed on reads its snapshot through the same filter (the Stately
 * inspector calls `actorRef.getSnapshot()` when an actor registers).
 */
export function redactingInspector(
  target: InspectObserver,
  secretKeys: Iterable<string>,
): (event: InspectionEvent) => void {
  const keys = new Set([...defaultSecretKeys, ...secretKeys]);
  const deliver = typeof target === 'function' ? target : (event: InspectionEvent) => target.next?.(event);
  const wrappedRefs = new WeakMap<ActorRefLike, ActorRefLike>();
  const wrapRef = (ref: ActorRefLike): ActorRefLike => {
    let wrapped = wrappedRefs.get(ref);
    if (!wrapped) {
      wrapped = new Proxy(ref, {
        get(actor, property, receiver) {
          if (property === 'getSnapshot') return () => redact(actor.getSnapshot(), keys);
          const value: unknown = Reflect.get(actor, property, receiver);
          return typeof value === 'function' ? value.bind(actor) : value;
        },
      });
      wrappedRefs.set(ref, wrapped);
    }
    return wrapped;
  };
  return (event) => {
    const copy = { ...event, actorRef: wrapRef(event.actorRef) } as Record<string, unknown>;
    if ('snapshot' in event) copy.snapshot = redact(event.snapshot, keys);
    if ('event' in event) copy.event = redact(event.event, keys);
    if ('action' in event) copy.action = redact(event.action, keys);
    deliver(copy as unknown as InspectionEvent);
  };
}

/** The argument names an agent's tools declare secret, including those of agents it uses as tools. */
export function secretArguments(agent: Agent<unknown>, seen = new Set<Agent<unknown>>()): string[] {
  if (seen.has(agent)) return [];
  seen.add(agent);
  return agent.tools.names.flatMap((name) => {
    const found = agent.tools.find(name) as (Tool & { delegate?: Agent<unknown> }) | undefined;
    if (!found) return [];
    return [...found.secret, ...(found.delegate ? secretArguments(found.delegate, seen) : [])];
  });
}
