import { ConfigError } from './errors.ts';
import type { Usage } from './usage.ts';

/** USD per million tokens of one model. `cachedInput` and `reasoning` default to `input` and `output`. */
export interface ModelPrice {
  input: number;
  output: number;
  /** Prompt tokens served from the provider's cache. */
  cachedInput?: number | undefined;
  /** Hidden reasoning tokens (all providers bill them as output today). */
  reasoning?: number | undefined;
}

/** Model name (or name prefix, see `findPrice`) to price. */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

/**
 * List prices in USD per million tokens, standard tier, short context, as published by the providers when this
 * was written (November 2026). They change: override or extend them with `createResourceManager({ prices })`.
 * Anthropic's cache-write surcharge and Gemini's long-context tier are not modelled (both cost more, so a budget
 * computed from these prices can be exceeded by those calls: set a margin or your own prices if you use them).
 */
export const defaultPrices: PriceTable = Object.freeze({
  // OpenAI
  'gpt-5.5': { input: 5, cachedInput: 0.5, output: 30 },
  'gpt-5.4': { input: 2.5, cachedInput: 0.25, output: 15 },
  'gpt-5.4-mini': { input: 0.75, cachedInput: 0.075, output: 4.5 },
  'gpt-5.4-nano': { input: 0.2, cachedInput: 0.02, output: 1.25 },
  'gpt-5': { input: 1.25, cachedInput: 0.125, output: 10 },
  'gpt-5.1': { input: 1.25, cachedInput: 0.125, output: 10 },
  'gpt-5-mini': { input: 0.25, cachedInput: 0.025, output: 2 },
  'gpt-5-nano': { input: 0.05, cachedInput: 0.005, output: 0.4 },
  'gpt-4.1': { input: 2, cachedInput: 0.5, output: 8 },
  'gpt-4.1-mini': { input: 0.4, cachedInput: 0.1, output: 1.6 },
  'gpt-4.1-nano': { input: 0.1, cachedInput: 0.025, output: 0.4 },
  'gpt-4o': { input: 2.5, cachedInput: 1.25, output: 10 },
  'gpt-4o-mini': { input: 0.15, cachedInput: 0.075, output: 0.6 },
  o3: { input: 2, cachedInput: 0.5, output: 8 },
  'o3-mini': { input: 1.1, cachedInput: 0.55, output: 4.4 },
  'o4-mini': { input: 1.1, cachedInput: 0.275, output: 4.4 },
  // Anthropic (cachedInput = cache read)
  'claude-opus-4': { input: 15, cachedInput: 1.5, output: 75 },
  'claude-opus-4-1': { input: 15, cachedInput: 1.5, output: 75 },
  'claude-opus-4-5': { input: 5, cachedInput: 0.5, output: 25 },
  'claude-opus-4-6': { input: 5, cachedInput: 0.5, output: 25 },
  'claude-sonnet-4': { input: 3, cachedInput: 0.3, output: 15 },
  'claude-sonnet-4-5': { input: 3, cachedInput: 0.3, output: 15 },
  'claude-sonnet-4-6': { input: 3, cachedInput: 0.3, output: 15 },
  'claude-haiku-4-5': { input: 1, cachedInput: 0.1, output: 5 },
  'claude-3-5-haiku': { input: 0.8, cachedInput: 0.08, output: 4 },
  // Google (prompts up to 200k tokens)
  'gemini-2.5-pro': { input: 1.25, cachedInput: 0.125, output: 10 },
  'gemini-2.5-flash': { input: 0.3, cachedInput: 0.03, output: 2.5 },
  'gemini-2.5-flash-lite': { input: 0.1, cachedInput: 0.01, output: 0.4 },
  'gemini-2.0-flash': { input: 0.1, cachedInput: 0.025, output: 0.4 },
});

/**
 * The price of a model: an exact entry, else the longest entry the name starts with followed by `-` (so dated
 * snapshots like `gpt-4o-2024-08-06` or `claude-opus-4-1-20250805` find their family, and `gpt-4o-mini-…` finds
 * `gpt-4o-mini`, not `gpt-4o`). A `provider/model` name is also tried without its prefix. Undefined when unknown.
 */
export function findPrice(table: PriceTable, model: string): ModelPrice | undefined {
  const exact = table[model];
  if (exact) return exact;
  let best: string | undefined;
  for (const name of Object.keys(table)) {
    if (model.startsWith(`${name}-`) && (best === undefined || name.length > best.length)) best = name;
  }
  if (best !== undefined) return table[best];
  const slash = model.lastIndexOf('/');
  return slash >= 0 ? findPrice(table, model.slice(slash + 1)) : undefined;
}

/** The cost in USD of `usage` at `price`. Cached input and reasoning tokens are parts of input and output. */
export function cost(usage: Usage, price: ModelPrice): number {
  const cached = Math.min(usage.cached, usage.input);
  const reasoning = Math.min(usage.reasoning, usage.output);
  const perToken =
    (usage.input - cached) * price.input +
    cached * (price.cachedInput ?? price.input) +
    (usage.output - reasoning) * price.output +
    reasoning * (price.reasoning ?? price.output);
  return perToken / 1_000_000;
}

/** Checks a user's price table: every price a finite number >= 0. Throws a ConfigError naming the bad entry. */
export function validatePrices(table: Record<string, ModelPrice>, where: string): PriceTable {
  for (const [model, price] of Object.entries(table)) {
    const fields: (keyof ModelPrice)[] = ['input', 'output', 'cachedInput', 'reasoning'];
    for (const field of fields) {
      const value = price?.[field];
      const optional = field === 'cachedInput' || field === 'reasoning';
      if (optional && value === undefined) continue;
      if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
        throw new ConfigError(
          `${where}: prices["${model}"].${field} must be a number >= 0 (USD per million tokens).`,
        );
      }
    }
  }
  return Object.freeze({ ...table });
}
