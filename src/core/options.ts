/** An options object without its fields set to `undefined`. */
export type DefinedFields<T> = { [K in keyof T]?: Exclude<T[K], undefined> };

/**
 * The fields of an options object that were given: a field set to `undefined` counts as not given, so spreading the
 * result over defaults keeps the default (a plain spread would put `undefined` over it).
 */
export function definedFields<T extends object>(options: T | undefined): DefinedFields<T> {
  const given: Record<string, unknown> = {};
  if (options === undefined) return given as DefinedFields<T>;
  for (const key of Object.keys(options)) {
    const value = (options as Record<string, unknown>)[key];
    if (value !== undefined) given[key] = value;
  }
  return given as DefinedFields<T>;
}
