import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maxJsonDepth, plainJsonProblem } from '../../src/core/json.ts';

/** The straightforward definition the allocation-free walk must agree with, problem for problem. */
function reference(value: unknown, ancestors: unknown[] = []): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : `the number ${value} is not JSON`;
    case 'object': {
      if (value === null) return undefined;
      if (ancestors.includes(value)) return 'the value contains a cycle';
      if (ancestors.length >= maxJsonDepth) return `the value nests deeper than ${maxJsonDepth} levels`;
      const proto = Object.getPrototypeOf(value);
      const isArray = Array.isArray(value);
      if (!isArray && proto !== Object.prototype && proto !== null)
        return `a ${proto?.constructor?.name ?? 'class'} instance is not JSON`;
      ancestors.push(value);
      for (const child of isArray ? value : Object.values(value)) {
        const problem = reference(child, ancestors);
        if (problem !== undefined) return problem;
      }
      ancestors.pop();
      return undefined;
    }
    default:
      return `a ${typeof value} is not JSON`;
  }
}

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { inner: value };
  return value;
}

describe('plainJsonProblem', () => {
  it('names the same problem as the reference definition on arbitrary values', () => {
    fc.assert(
      fc.property(
        fc.anything({ withBigInt: true, withNullPrototype: true, withMap: true, withDate: true }),
        (value) => {
          expect(plainJsonProblem(value)).toBe(reference(value));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('finds cycles, shared members, depth, holes and values that are not JSON, as the reference does', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = { back: cyclic };
    const shared = { x: 1 };
    const sparse: unknown[] = [1];
    sparse[2] = 3;
    const cases: unknown[] = [
      cyclic,
      [cyclic],
      { a: shared, b: shared, c: [shared, shared] },
      nested(maxJsonDepth),
      nested(maxJsonDepth + 1),
      sparse,
      { n: Number.NaN, f: () => 1 },
      { f: () => 1, n: Number.NaN },
      [1, 2, Number.POSITIVE_INFINITY],
      { s: Symbol('s') },
      { d: new Date(0) },
      Object.assign(Object.create(null), { a: [1, { b: 2n }] }),
      { 2: 'two', 1: Number.NaN, z: undefined },
    ];
    for (const value of cases) expect(plainJsonProblem(value)).toBe(reference(value));
    expect(plainJsonProblem(cyclic)).toBe('the value contains a cycle');
    expect(plainJsonProblem({ a: shared, b: shared })).toBeUndefined();
  });
});
