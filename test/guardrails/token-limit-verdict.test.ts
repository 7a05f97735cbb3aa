import { describe, expect, it } from 'vitest';
import { tokenLimitVerdict } from '../../src/guardrails/token-limit-verdict.ts';

describe('tokenLimitVerdict', () => {
  const over = { decision: 'block', message: 'the text is over the limit of 10 tokens' };

  it('allows a text at or under the limit', () => {
    expect(tokenLimitVerdict(0, 10)).toEqual({ decision: 'allow' });
    expect(tokenLimitVerdict(10, 10)).toEqual({ decision: 'allow' });
  });

  it('blocks a text over the limit, or one the counter stopped counting past it', () => {
    expect(tokenLimitVerdict(11, 10)).toEqual(over);
    expect(tokenLimitVerdict(false, 10)).toEqual(over);
  });
});
