import { describe, expect, it } from 'vitest';
import { randomUuid } from '../../src/core/random-id.ts';

const uuidV4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('randomUuid()', () => {
  it('is a random version 4 UUID, a new one each call', () => {
    const ids = new Set(Array.from({ length: 100 }, () => randomUuid()));
    expect(ids.size).toBe(100);
    for (const id of ids) expect(id).toMatch(uuidV4);
  });

  it('stays random and well-formed across many ids (past every draw of random bytes)', () => {
    const ids = Array.from({ length: 1000 }, () => randomUuid());
    expect(new Set(ids).size).toBe(1000);
    for (const id of ids) expect(id).toMatch(uuidV4);
    // Every hex digit of the id varies (but the version's), and the variant takes all four of its values.
    for (let place = 0; place < 36; place++) {
      if ([8, 13, 14, 18, 23].includes(place)) continue;
      const seen = new Set(ids.map((id) => id[place]));
      expect(seen.size, `characters at ${place}`).toBeGreaterThanOrEqual(place === 19 ? 4 : 14);
    }
  });
});
