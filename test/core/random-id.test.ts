import { describe, expect, it } from 'vitest';
import { randomUuid } from '../../src/core/random-id.ts';

describe('randomUuid()', () => {
  it('is a random version 4 UUID, a new one each call', () => {
    const ids = new Set(Array.from({ length: 100 }, () => randomUuid()));
    expect(ids.size).toBe(100);
    for (const id of ids)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
