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
