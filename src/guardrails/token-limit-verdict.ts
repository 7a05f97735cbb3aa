import type { GuardrailVerdict } from './verdict.ts';

/** Blocks a text whose token count is over `max` (`tokens` is false when the counter stopped past it). Pure. */
export function tokenLimitVerdict(tokens: number | false, max: number): GuardrailVerdict {
  if (tokens !== false && tokens <= max) return allow;
  return { decision: 'block', message: `the text is over the limit of ${max} tokens` };
}

const allow: GuardrailVerdict = Object.freeze({ decision: 'allow' as const });
