import { ConfigError } from '../core/errors.ts';
import type { ResolvedLimits } from '../core/limits.ts';
import { describeValue, isPlainObject } from '../core/options.ts';

/**
 * When a run stops, as plain data: an agent's `stopWhen` takes one condition or a list of them, and the run stops
 * when any of them is met, with the stop reason of its kind. Build them with `stepCountIs`, `toolCallCountIs` and
 * `duplicateToolCallCountIs`; being data, they can be stored, logged and compared, and the agent's statechart
 * evaluates them in its guards.
 */
export type StopCondition =
  | { readonly kind: 'stepCount'; readonly count: number }
  | { readonly kind: 'toolCallCount'; readonly count: number; readonly tool?: string }
  | { readonly kind: 'duplicateToolCallCount'; readonly count: number };

/** An agent's `stopWhen`: one condition, or several of which the first met stops the run. */
export type StopWhen = StopCondition | readonly StopCondition[];

/**
 * The run stops after `count` model calls in the tool-use phase, with `max_steps` (as `limits.maxSteps`; with
 * `limits.finalAnswerOnMaxSteps` the model is asked once more, without tools, for an answer).
 */
export function stepCountIs(count: number): StopCondition {
  return { kind: 'stepCount', count: checkedCount(count, 'stepCountIs()') };
}

/**
 * At most `count` calls of each tool run (of `tool` only, when given); a model asking for one more ends the run with
 * `tool_call_limit` (as `limits.maxToolCallsPerTool`; with `limits.finalAnswerOnToolLimits`, the default, the call is
 * answered as refused and the model is asked once more, without tools, for an answer).
 */
export function toolCallCountIs(count: number, options: { tool?: string } = {}): StopCondition {
  const where = 'toolCallCountIs()';
  const checked = checkedCount(count, where);
  if (!isPlainObject(options))
    throw new ConfigError(`${where}: options must be an object such as { tool: 'search' }.`);
  if (options.tool === undefined) return { kind: 'toolCallCount', count: checked };
  if (typeof options.tool !== 'string' || options.tool === '')
    throw new ConfigError(`${where}: tool must be a tool's name, got ${describeValue(options.tool)}.`);
  return { kind: 'toolCallCount', count: checked, tool: options.tool };
}

/**
 * The same tool with the same canonical arguments runs at most `count` times; one more ends the run with
 * `duplicate_tool_call` (as `limits.maxDuplicateToolCalls`, after the last answer `limits.finalAnswerOnToolLimits`
 * asks for).
 */
export function duplicateToolCallCountIs(count: number): StopCondition {
  return { kind: 'duplicateToolCallCount', count: checkedCount(count, 'duplicateToolCallCountIs()') };
}

/**
 * The agent's limits with its stop conditions applied: each condition tightens the limit of its kind (a condition met
 * sooner stops the run sooner), so the statechart's guards evaluate the simple form and `stopWhen` alike.
 */
export function applyStopWhen(limits: ResolvedLimits, stopWhen: unknown, where: string): ResolvedLimits {
  if (stopWhen === undefined) return limits;
  const conditions: readonly unknown[] = Array.isArray(stopWhen) ? stopWhen : [stopWhen];
  let maxSteps = limits.maxSteps;
  let maxDuplicateToolCalls = limits.maxDuplicateToolCalls;
  let maxToolCallsPerTool = limits.maxToolCallsPerTool;
  const byTool = new Map<string, number>(Object.entries(limits.maxToolCallsByTool ?? {}));
  conditions.forEach((given, index) => {
    const condition = checkedCondition(
      given,
      `${where}: stopWhen${Array.isArray(stopWhen) ? `[${index}]` : ''}`,
    );
    switch (condition.kind) {
      case 'stepCount':
        maxSteps = Math.min(maxSteps, condition.count);
        return;
      case 'duplicateToolCallCount':
        maxDuplicateToolCalls = Math.min(maxDuplicateToolCalls, condition.count);
        return;
      case 'toolCallCount':
        if (condition.tool === undefined)
          maxToolCallsPerTool = Math.min(maxToolCallsPerTool ?? condition.count, condition.count);
        else
          byTool.set(
            condition.tool,
            Math.min(byTool.get(condition.tool) ?? condition.count, condition.count),
          );
        return;
    }
  });
  return {
    ...limits,
    maxSteps,
    maxDuplicateToolCalls,
    maxToolCallsPerTool,
    ...(byTool.size > 0 ? { maxToolCallsByTool: Object.freeze(Object.fromEntries(byTool)) } : {}),
  };
}

function checkedCount(count: unknown, where: string): number {
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1)
    throw new ConfigError(`${where}: the count must be an integer >= 1, got ${describeValue(count)}.`);
  return count;
}

/** A condition given as data (stored, or written by hand) is checked as strictly as one the functions built. */
function checkedCondition(value: unknown, where: string): StopCondition {
  if (!isPlainObject(value))
    throw new ConfigError(
      `${where} must be a stop condition such as stepCountIs(10) or toolCallCountIs(3, { tool: 'search' }), got ${describeValue(value)}.`,
    );
  const kind = value.kind;
  if (kind === 'stepCount') return stepCountIs(value.count as number);
  if (kind === 'duplicateToolCallCount') return duplicateToolCallCountIs(value.count as number);
  if (kind === 'toolCallCount') {
    const tool = Object.hasOwn(value, 'tool') ? value.tool : undefined;
    return toolCallCountIs(value.count as number, tool === undefined ? {} : { tool: tool as string });
  }
  throw new ConfigError(
    `${where}: unknown stop condition kind ${describeValue(kind)}; build one with stepCountIs, toolCallCountIs or duplicateToolCallCountIs.`,
  );
}
