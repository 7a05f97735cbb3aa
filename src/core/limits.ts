import { ConfigError } from './errors.ts';
import { checkOptionObject } from './options.ts';

/** Loop limits of an agent. Every field is optional; see `defaultLimits`. */
export interface AgentLimits {
  /** Model calls in the tool-use phase before the run stops with `max_steps`. Default 10. */
  maxSteps?: number | undefined;
  /** When the step limit is reached, make one last call with tools off for an answer (the stop reason stays `max_steps`). Default false. */
  finalAnswerOnMaxSteps?: boolean | undefined;
  /**
   * When a tool-call limit is reached (`maxDuplicateToolCalls`, `maxToolCallsPerTool`, or their `stopWhen`
   * conditions), answer the turn's calls as refused and make one last call with tools off for an answer; the stop
   * reason stays `duplicate_tool_call` or `tool_call_limit`. `false` ends the run at once, without an answer.
   * Default true.
   */
  finalAnswerOnToolLimits?: boolean | undefined;
  /** How many times the same tool with the same canonical arguments may run; one more ends the run. Default 2. */
  maxDuplicateToolCalls?: number | undefined;
  /** Total calls per tool in a run; `null` means unlimited. Default 5. */
  maxToolCallsPerTool?: number | null | undefined;
  /** Extra attempts at a structured final output that failed to decode. Default 2. */
  maxDecodeRetries?: number | undefined;
  /** Tool calls of one turn run in parallel up to this many at once. Default 8. */
  toolConcurrency?: number | undefined;
  /** Per-attempt tool timeout in milliseconds; the tool's signal is aborted when it expires. Default: none. */
  toolTimeoutMs?: number | undefined;
  /** Extra attempts for a tool that throws or times out. Default 2. */
  maxToolRetries?: number | undefined;
  /** Wall-clock limit for the whole run in milliseconds; ends it with `timed_out`. Default: none. */
  timeoutMs?: number | undefined;
}

/** Limits with every default filled in. Plain data: it lives in machine context. */
export interface ResolvedLimits {
  maxSteps: number;
  finalAnswerOnMaxSteps: boolean;
  finalAnswerOnToolLimits: boolean;
  maxDuplicateToolCalls: number;
  maxToolCallsPerTool: number | null;
  /** Caps of single tools, by name (from `stopWhen: toolCallCountIs(n, { tool })`); a tool not named has none. */
  maxToolCallsByTool?: Readonly<Record<string, number>>;
  maxDecodeRetries: number;
  toolConcurrency: number;
  toolTimeoutMs: number | null;
  maxToolRetries: number;
  timeoutMs: number | null;
}

export const defaultLimits: ResolvedLimits = Object.freeze({
  maxSteps: 10,
  finalAnswerOnMaxSteps: false,
  finalAnswerOnToolLimits: true,
  maxDuplicateToolCalls: 2,
  maxToolCallsPerTool: 5,
  maxDecodeRetries: 2,
  toolConcurrency: 8,
  toolTimeoutMs: null,
  maxToolRetries: 2,
  timeoutMs: null,
});

/** The keys `limits` may hold: anything else is a typo, refused with the closest of these. */
const limitKeys: readonly (keyof AgentLimits)[] = Object.keys(defaultLimits) as (keyof AgentLimits)[];

/**
 * Fills defaults and rejects nonsense (a step limit of 0, a negative retry count, a misspelled key such as
 * `maxStep`) with a clear ConfigError.
 */
export function resolveLimits(limits: AgentLimits | undefined, where: string): ResolvedLimits {
  if (limits !== undefined) checkOptionObject(limits, limitKeys, `${where}: limits`);
  const given: AgentLimits = limits ?? {};
  const integer = (key: keyof AgentLimits, min: number, value: unknown, fallback: number): number => {
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
      throw new ConfigError(`${where}: limits.${key} must be an integer >= ${min}, got ${String(value)}.`);
    }
    return value;
  };
  const optionalMs = (key: keyof AgentLimits, value: unknown): number | null => {
    if (value === undefined || value === null) return null;
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
      throw new ConfigError(
        `${where}: limits.${key} must be a positive number of milliseconds, got ${String(value)}.`,
      );
    }
    return value;
  };
  for (const key of ['finalAnswerOnMaxSteps', 'finalAnswerOnToolLimits'] as const) {
    if (given[key] !== undefined && typeof given[key] !== 'boolean')
      throw new ConfigError(`${where}: limits.${key} must be a boolean.`);
  }
  return {
    maxSteps: integer('maxSteps', 1, given.maxSteps, defaultLimits.maxSteps),
    finalAnswerOnMaxSteps: given.finalAnswerOnMaxSteps ?? defaultLimits.finalAnswerOnMaxSteps,
    finalAnswerOnToolLimits: given.finalAnswerOnToolLimits ?? defaultLimits.finalAnswerOnToolLimits,
    maxDuplicateToolCalls: integer(
      'maxDuplicateToolCalls',
      1,
      given.maxDuplicateToolCalls,
      defaultLimits.maxDuplicateToolCalls,
    ),
    maxToolCallsPerTool:
      given.maxToolCallsPerTool === null
        ? null
        : integer(
            'maxToolCallsPerTool',
            1,
            given.maxToolCallsPerTool,
            defaultLimits.maxToolCallsPerTool ?? 5,
          ),
    maxDecodeRetries: integer('maxDecodeRetries', 0, given.maxDecodeRetries, defaultLimits.maxDecodeRetries),
    toolConcurrency: integer('toolConcurrency', 1, given.toolConcurrency, defaultLimits.toolConcurrency),
    toolTimeoutMs: optionalMs('toolTimeoutMs', given.toolTimeoutMs),
    maxToolRetries: integer('maxToolRetries', 0, given.maxToolRetries, defaultLimits.maxToolRetries),
    timeoutMs: optionalMs('timeoutMs', given.timeoutMs),
  };
}
