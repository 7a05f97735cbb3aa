import { ConfigError } from './errors.ts';

/** An options object without its fields set to `undefined`. */
export type DefinedFields<T> = { [K in keyof T]?: Exclude<T[K], undefined> };

/**
 * The fields of an options object that were given: a field set to `undefined` counts as not given, so spreading the
 * result over defaults keeps the default (a plain spread would put `undefined` over it). Own fields only, copied as
 * data (a `__proto__` key stays a key).
 */
export function definedFields<T extends object>(options: T | undefined): DefinedFields<T> {
  if (options === undefined) return {};
  return Object.fromEntries(
    Object.entries(options).filter(([, value]) => value !== undefined),
  ) as DefinedFields<T>;
}

/** A plain object: `{}` or `Object.create(null)`, not an array, a class instance or a primitive. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/**
 * Throws a ConfigError unless `value` is a plain object whose keys are all in `known`. A misspelled key (`maxStep`)
 * would otherwise be ignored without a word, and the setting it was meant for would silently keep its default; the
 * error names the closest valid key.
 */
export function checkOptionObject(
  value: unknown,
  known: readonly string[],
  where: string,
): asserts value is Record<string, unknown> {
  if (!isPlainObject(value))
    throw new ConfigError(`${where} must be an object, got ${describeValue(value)}.`);
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue;
    const closest = closestKey(key, known);
    throw new ConfigError(
      `${where} has no option "${key}"${closest === undefined ? '' : ` (did you mean "${closest}"?)`}; valid options: ${known.join(', ')}.`,
    );
  }
}

/**
 * The valid key closest to a misspelled one: the fewest single-character edits, case ignored, at most a third of the
 * longer name's length (so `maxStep` finds `maxSteps`, and `colour` finds nothing among unrelated names).
 */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  const wanted = key.toLowerCase();
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    const distance = editDistance(wanted, candidate.toLowerCase());
    if (
      distance < bestDistance &&
      distance <= Math.max(1, Math.floor(Math.max(key.length, candidate.length) / 3))
    ) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** Levenshtein distance, with one row of memory. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      row.push(Math.min((previous[j] as number) + 1, (row[j - 1] as number) + 1, substitution));
    }
    previous = row;
  }
  return previous[b.length] as number;
}

/** A short description of a wrong value for an error message: its type, or the value itself when it is short. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'string':
      return value.length <= 40 ? JSON.stringify(value) : 'a long string';
    case 'number':
    case 'boolean':
    case 'bigint':
      return String(value);
    case 'undefined':
      return 'undefined';
    case 'function':
      return 'a function';
    case 'symbol':
      return 'a symbol';
    default: {
      const name = (Object.getPrototypeOf(value) as { constructor?: { name?: unknown } } | null)?.constructor
        ?.name;
      return typeof name === 'string' && name !== 'Object' && name !== '' ? `a ${name}` : 'an object';
    }
  }
}
