/** Token usage of one model call or of a whole run. Every field is a count of tokens; missing data is 0. */
export interface Usage {
  /** Prompt tokens, cached ones included. */
  input: number;
  /** Completion tokens, reasoning ones included. */
  output: number;
  /** Prompt tokens served from the provider's cache. */
  cached: number;
  /** Completion tokens spent on hidden reasoning. */
  reasoning: number;
}

export const emptyUsage: Usage = Object.freeze({ input: 0, output: 0, cached: 0, reasoning: 0 });

/** Accepts partial usage (as a scripted turn or a provider may report it) and fills the gaps with 0. */
export function normalizeUsage(usage: { [K in keyof Usage]?: number | undefined } | undefined): Usage {
  if (!usage) return emptyUsage;
  return {
    input: finiteOrZero(usage.input),
    output: finiteOrZero(usage.output),
    cached: finiteOrZero(usage.cached),
    reasoning: finiteOrZero(usage.reasoning),
  };
}

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cached: a.cached + b.cached,
    reasoning: a.reasoning + b.reasoning,
  };
}

export function totalTokens(usage: Usage): number {
  return usage.input + usage.output;
}

function finiteOrZero(value: number | undefined): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

/**
 * What work done for a run outside its own model calls spent: agents it used as tools (their whole runs, nested
 * ones included) and model calls an MCP server asked it to make (sampling).
 */
export interface NestedSpend {
  usage: Usage;
  /** Model calls made. */
  modelCalls: number;
}

export function addSpend(a: NestedSpend | undefined, b: NestedSpend): NestedSpend {
  if (!a) return { usage: b.usage, modelCalls: b.modelCalls };
  return { usage: addUsage(a.usage, b.usage), modelCalls: a.modelCalls + b.modelCalls };
}
