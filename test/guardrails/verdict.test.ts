import { describe, expect, it } from 'vitest';
import { failedVerdict, textOf, verdictOf } from '../../src/guardrails/verdict.ts';

describe('verdictOf: what a guardrail check returned, read as a verdict', () => {
  it('takes each decision, with or without a message', () => {
    expect(verdictOf({ decision: 'allow' })).toEqual({ decision: 'allow' });
    expect(verdictOf({ decision: 'warn', message: 'careful' })).toEqual({
      decision: 'warn',
      message: 'careful',
    });
    expect(verdictOf({ decision: 'block', message: '' })).toEqual({ decision: 'block', message: '' });
  });

  it('keeps only the decision and the message', () => {
    const verdict = verdictOf({ decision: 'allow', extra: 1 });
    expect(verdict).toEqual({ decision: 'allow' });
    expect(verdict && Object.keys(verdict)).toEqual(['decision']);
  });

  it('is null for anything that is not a verdict', () => {
    for (const value of [
      null,
      undefined,
      'block',
      3,
      true,
      {},
      { decision: 'deny' },
      { decision: '' },
      { decision: 1 },
      { decision: ['block'] },
      { decision: 'block', message: 1 },
      { decision: 'warn', message: null },
    ]) {
      expect(verdictOf(value), JSON.stringify(value) ?? 'undefined').toBeNull();
    }
  });

  it('takes only the three decisions, not any name a plain object answers to', () => {
    expect(verdictOf({ decision: 'toString' })).toBeNull();
  });
});

describe('failedVerdict: a check that threw, timed out or returned no verdict', () => {
  it('blocks or warns as configured, with the message', () => {
    expect(failedVerdict('block', 'timed out')).toEqual({ decision: 'block', message: 'timed out' });
    expect(failedVerdict('warn', 'threw')).toEqual({ decision: 'warn', message: 'threw' });
  });
});

describe('textOf: the text a guardrail reads', () => {
  it('is the text itself, nothing for no value, and JSON for anything else', () => {
    expect(textOf('plain')).toBe('plain');
    expect(textOf('')).toBe('');
    expect(textOf(undefined)).toBe('');
    expect(textOf({ a: [1, 'x'] })).toBe('{"a":[1,"x"]}');
    expect(textOf(null)).toBe('null');
    expect(textOf(42)).toBe('42');
  });

  it('falls back to String for values JSON cannot write', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(textOf(cyclic)).toBe('[object Object]');
    expect(textOf(10n)).toBe('10');
    expect(textOf(() => 1)).toBe('() => 1');
    expect(textOf(Symbol('s'))).toBe('Symbol(s)');
  });
});
