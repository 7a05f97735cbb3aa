import { ConfigError } from '../core/errors.ts';
import { type Guardrail, type GuardrailOptions, guardrail } from './guardrail.ts';
import { tokenLimitVerdict } from './token-limit-verdict.ts';
import { textOf } from './verdict.ts';

/** The encodings `tokenLimit` counts with: o200k_base (GPT-4o and later), cl100k_base (GPT-4, GPT-3.5). */
export type TokenEncoding = 'o200k_base' | 'cl100k_base';

export interface TokenLimitOptions extends Omit<GuardrailOptions, 'name' | 'check'> {
  /** Most tokens allowed. Default 4096. */
  max?: number | undefined;
  /** Default 'o200k_base'. */
  encoding?: TokenEncoding | undefined;
  /** Default 'token-limit'. */
  name?: string | undefined;
}

/** What the guardrail needs of an encoding module of gpt-tokenizer. */
interface Encoding {
  isWithinTokenLimit(text: string, limit: number): false | number;
}

// Literal specifiers, so bundlers and type checkers see each import.
const importers: Record<TokenEncoding, () => Promise<Encoding>> = {
  o200k_base: () => import('gpt-tokenizer/encoding/o200k_base'),
  cl100k_base: () => import('gpt-tokenizer/encoding/cl100k_base'),
};

const loaded = new Map<TokenEncoding, Encoding>();
const loading = new Map<TokenEncoding, Promise<Encoding>>();

/** The encoding, imported on first use (its tables are large) and kept; a failed import is tried again next time. */
function loadEncoding(encoding: TokenEncoding): Promise<Encoding> {
  let pending = loading.get(encoding);
  if (pending === undefined) {
    pending = importers[encoding]().then(
      (module) => {
        loaded.set(encoding, module);
        return module;
      },
      (error: unknown) => {
        loading.delete(encoding);
        throw new ConfigError(
          'tokenLimit() needs the "gpt-tokenizer" package, an optional peer dependency of troupe: run `npm install gpt-tokenizer`.',
          { cause: error },
        );
      },
    );
    loading.set(encoding, pending);
  }
  return pending;
}

/**
 * A guardrail that blocks text over `max` tokens (default 4096), counted with the model's real tokenizer
 * (gpt-tokenizer, pure JavaScript: its tables ship in the package, nothing is downloaded). Structured values are
 * counted as JSON. The encoding is loaded on the first check; after that a check answers synchronously, and stops
 * counting as soon as the limit is passed.
 */
export function tokenLimit(options: TokenLimitOptions = {}): Guardrail {
  const { max = 4096, encoding = 'o200k_base', name = 'token-limit', ...rest } = options;
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 0)
    throw new ConfigError(`tokenLimit(): max must be an integer >= 0, got ${String(max)}.`);
  if (!Object.hasOwn(importers, encoding))
    throw new ConfigError(`tokenLimit(): encoding must be 'o200k_base' or 'cl100k_base'.`);
  assertTokenizerInstalled();
  return guardrail({
    ...rest,
    name,
    check: (value) => {
      const text = textOf(value);
      const ready = loaded.get(encoding);
      if (ready) return tokenLimitVerdict(ready.isWithinTokenLimit(text, max), max);
      return loadEncoding(encoding).then((module) =>
        tokenLimitVerdict(module.isWithinTokenLimit(text, max), max),
      );
    },
  });
}

/** A missing tokenizer fails where the guardrail is made, with the command that fixes it. */
function assertTokenizerInstalled(): void {
  if (typeof import.meta.resolve !== 'function') return;
  try {
    import.meta.resolve('gpt-tokenizer');
  } catch (error) {
    throw new ConfigError(
      'tokenLimit() needs the "gpt-tokenizer" package, an optional peer dependency of troupe: run `npm install gpt-tokenizer`.',
      { cause: error },
    );
  }
}
