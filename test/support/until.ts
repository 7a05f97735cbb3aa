import { expect } from 'vitest';

/** Waits (real time, a couple of ms per check, two seconds at most) until `predicate` holds, then asserts it. */
export async function until(predicate: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !predicate(); i++) await new Promise((resolve) => setTimeout(resolve, 2));
  expect(predicate()).toBe(true);
}
