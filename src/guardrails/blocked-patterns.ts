import { ConfigError } from '../core/errors.ts';
import { patternVerdict, statelessPatterns } from './blocked-patterns-verdict.ts';
import { type Guardrail, type GuardrailOptions, guardrail } from './guardrail.ts';
import { textOf } from './verdict.ts';

export interface BlockedPatternsOptions extends Omit<GuardrailOptions, 'name' | 'check'> {
  /** Default 'blocked-patterns'. */
  name?: string | undefined;
}

/**
 * A guardrail that blocks text matching any of `patterns` (structured values are matched as JSON). The block's
 * message names the pattern, never the text it matched. Synchronous: it adds no wait to a run.
 */
export function blockedPatterns(
  patterns: readonly RegExp[],
  options: BlockedPatternsOptions = {},
): Guardrail {
  if (!Array.isArray(patterns) || patterns.length === 0 || !patterns.every((p) => p instanceof RegExp))
    throw new ConfigError('blockedPatterns(): give a non-empty array of regular expressions.');
  const { name = 'blocked-patterns', ...rest } = options;
  const compiled = statelessPatterns(patterns);
  return guardrail({ ...rest, name, check: (value) => patternVerdict(textOf(value), compiled) });
}
