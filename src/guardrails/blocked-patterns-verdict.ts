import type { GuardrailVerdict } from './verdict.ts';

/**
 * Patterns copied without the `g` and `y` flags: those make `test` stateful (it resumes at `lastIndex`), so one
 * match would make the next check of the same text miss. Pure.
 */
export function statelessPatterns(patterns: readonly RegExp[]): RegExp[] {
  return patterns.map((pattern) =>
    pattern.global || pattern.sticky
      ? new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, ''))
      : pattern,
  );
}

/** Blocks text that matches any of the patterns, naming the pattern (never the matched text). Pure. */
export function patternVerdict(text: string, patterns: readonly RegExp[]): GuardrailVerdict {
  for (const pattern of patterns) {
    if (pattern.test(text)) return { decision: 'block', message: `matched the blocked pattern ${pattern}` };
  }
  return allow;
}

const allow: GuardrailVerdict = Object.freeze({ decision: 'allow' as const });
