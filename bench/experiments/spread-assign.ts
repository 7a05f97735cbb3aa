/**
 * Preload for an experiment, never for real use: makes `Object.assign({}, a, b)` a spread, which is what XState's
 * context copy would cost with a context of at most 19 top-level keys (see context-copy.ts). Usage:
 *   node --import ./bench/experiments/spread-assign.ts --expose-gc bench/worker.ts troupe W2
 */
const assign = Object.assign;
Object.assign = function spreadAssign(target: object, ...sources: object[]) {
  if (
    sources.length === 2 &&
    Object.getPrototypeOf(target) === Object.prototype &&
    Object.keys(target).length === 0
  ) {
    return { ...sources[0], ...sources[1] };
  }
  return assign(target, ...sources);
} as typeof Object.assign;
