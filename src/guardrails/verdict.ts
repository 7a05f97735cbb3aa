import type { GuardrailDecisionKind } from '../core/events.ts';

/** What a guardrail's check returns: go on, go on with a warning, or block (the run ends guardrail_blocked). */
export interface GuardrailVerdict {
  decision: GuardrailDecisionKind;
  /** Why; shown on the guardrail event and, for a block, in the run's error. */
  message?: string | undefined;
}

const decisions: ReadonlySet<string> = new Set(['allow', 'warn', 'block']);

/**
 * A check's return value as a verdict, or null when it is not one (a check that returned something else is treated
 * like a check that failed). Pure.
 */
export function verdictOf(value: unknown): GuardrailVerdict | null {
  if (typeof value !== 'object' || value === null) return null;
  const decision = (value as { decision?: unknown }).decision;
  if (typeof decision !== 'string' || !decisions.has(decision)) return null;
  const message = (value as { message?: unknown }).message;
  if (message !== undefined && typeof message !== 'string') return null;
  return message === undefined
    ? { decision: decision as GuardrailDecisionKind }
    : { decision: decision as GuardrailDecisionKind, message };
}

/** The verdict that stands for a check that threw, timed out or returned no verdict. */
export function failedVerdict(onError: 'block' | 'warn', message: string): GuardrailVerdict {
  return { decision: onError, message };
}

/** The text a guardrail reads for a value that is not text (structured output, tool arguments): JSON. */
export function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
