/**
 * Plain-data records keyed by names that come from outside (tool names a model asks for, agent names, argument
 * signatures). Machine context must stay plain JSON, so these are objects rather than Maps; these helpers read and
 * write only own properties, so a model calling a tool named `constructor` or `__proto__` finds nothing on
 * Object.prototype, and a count stored under `__proto__` is an ordinary property that survives a JSON round trip.
 */

/** The names Object.prototype defines (`constructor`, `toString`, `__proto__`, ...): never valid as a tool or agent name. */
const prototypeNames: ReadonlySet<string> = new Set(Object.getOwnPropertyNames(Object.prototype));

/** Whether `name` is a member of Object.prototype, and so would be found on every plain object. */
export function isPrototypeName(name: string): boolean {
  return prototypeNames.has(name);
}

/** The record's own value under `key`, or undefined: the prototype chain is never read. */
export function ownValue<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/** A count kept in a plain record; 0 when the record has no own entry for `key`. */
export function countOf(counts: Readonly<Record<string, number>>, key: string): number {
  return Object.hasOwn(counts, key) ? (counts[key] as number) : 0;
}

/**
 * Sets an own property, whatever the key. Plain assignment is used for every key but `__proto__`, whose assignment
 * would change the object's prototype instead of storing a value.
 */
export function setOwn<T>(record: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__')
    Object.defineProperty(record, key, { value, writable: true, enumerable: true, configurable: true });
  else record[key] = value;
}

/**
 * Adds `by` to the count under `key` in a record the caller owns (a copy it is building). Written out, not through
 * `countOf` and `setOwn`: the agent counts every call this way, and while V8 runs the step unoptimized a call costs more
 * than the count.
 */
export function addCount(counts: Record<string, number>, key: string, by = 1): void {
  const count = (Object.hasOwn(counts, key) ? (counts[key] as number) : 0) + by;
  if (key === '__proto__')
    Object.defineProperty(counts, key, {
      value: count,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  else counts[key] = count;
}
