import { describe, expect, it } from 'vitest';
import { patternVerdict, statelessPatterns } from '../../src/guardrails/blocked-patterns-verdict.ts';

describe('patternVerdict', () => {
  it('blocks text matching any pattern, naming the first one that matched and not the text', () => {
    const verdict = patternVerdict('my key is sk-123', [/password/i, /sk-\d+/, /key/]);
    expect(verdict).toEqual({ decision: 'block', message: 'matched the blocked pattern /sk-\\d+/' });
  });

  it('allows text that matches none, and any text when there are no patterns', () => {
    expect(patternVerdict('hello', [/password/i, /sk-\d+/])).toEqual({ decision: 'allow' });
    expect(patternVerdict('anything', [])).toEqual({ decision: 'allow' });
  });
});

describe('statelessPatterns', () => {
  it('drops the g and y flags so that checking the same text twice blocks twice', () => {
    const [global, sticky, both] = statelessPatterns([/secret/gi, /secret/y, /secret/gimsy]);
    expect(global?.flags).toBe('i');
    expect(sticky?.flags).toBe('');
    expect(both?.flags).toBe('ims');
    expect(global?.source).toBe('secret');
    const patterns = statelessPatterns([/secret/g]);
    expect(patternVerdict('a secret', patterns).decision).toBe('block');
    expect(patternVerdict('a secret', patterns).decision).toBe('block');
  });

  it('keeps patterns without those flags as they are', () => {
    const plain = /secret/i;
    expect(statelessPatterns([plain])[0]).toBe(plain);
  });
});
