import { describe, expect, it } from 'vitest';
import { toolCallSignature, toolCallSignatures } from '../../src/policies/tool-call-signature.ts';

// A turn's signatures are kept for the next ask with the same calls: whatever is asked next must still get its own.

describe('toolCallSignatures', () => {
  const a = { name: 'search', args: { q: 'a', page: 1 } };
  const b = { name: 'search', args: { q: 'b', page: 1 } };

  it('gives each call its signature, in call order', () => {
    expect(toolCallSignatures([a, b])).toEqual([toolCallSignature(a), toolCallSignature(b)]);
  });

  it('answers the same array again from what it kept, and another array (same length, other calls) anew', () => {
    const turn = [a];
    const first = toolCallSignatures(turn);
    expect(toolCallSignatures(turn)).toBe(first);
    const other = toolCallSignatures([b]);
    expect(other).toEqual([toolCallSignature(b)]);
    expect(other).not.toEqual(first);
  });

  it('ignores key order, as a single signature does', () => {
    const reordered = { name: 'search', args: { page: 1, q: 'a' } };
    expect(toolCallSignatures([reordered])).toEqual(toolCallSignatures([a]));
  });
});
