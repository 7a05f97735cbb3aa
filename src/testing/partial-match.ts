/**
 * Whether `actual` has everything `expected` has: objects match when every key of `expected` matches (extra keys
 * of `actual` are fine), arrays when they have the same length and match element by element, anything else when
 * it is the same value (`Object.is`).
 */
export function partiallyMatches(actual: unknown, expected: unknown): boolean {
  if (Array.isArray(expected)) {
    return (
      Array.isArray(actual) &&
      actual.length === expected.length &&
      expected.every((item, index) => partiallyMatches(actual[index], item))
    );
  }
  if (typeof expected === 'object' && expected !== null) {
    if (typeof actual !== 'object' || actual === null || Array.isArray(actual)) return false;
    return Object.entries(expected).every(
      ([key, value]) =>
        Object.hasOwn(actual, key) && partiallyMatches((actual as Record<string, unknown>)[key], value),
    );
  }
  return Object.is(actual, expected);
}
