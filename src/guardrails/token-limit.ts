import { ConfigError } from '../core/errors.ts';
import { assertPeerInstalled, loadedPeer, loadPeer, type OptionalPeer } from '../core/optional-peer.ts';
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
const encodings: Record<TokenEncoding, OptionalPeer<Encoding> & { import: () => Promise<Encoding> }> = {
  o200k_base: {
    package: 'gpt-tokenizer',
    specifier: 'gpt-tokenizer/encoding/o200k_base',
    import: () => import('gpt-tokenizer/encoding/o200k_base'),
  },
  cl100k_base: {
    package: 'gpt-tokenizer',
    specifier: 'gpt-tokenizer/encoding/cl100k_base',
    import: () => import('gpt-tokenizer/encoding/cl100k_base'),
  },
};

const feature = 'tokenLimit()';

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
  if (!Object.hasOwn(encodings, encoding))
    throw new ConfigError(`tokenLimit(): encoding must be 'o200k_base' or 'cl100k_base'.`);
  // A missing tokenizer fails where the guardrail is made; its tables are large, so they load on the first check.
  const peer = encodings[encoding];
  assertPeerInstalled(peer, feature);
  return guardrail({
    ...rest,
    name,
    check: (value) => {
      const text = textOf(value);
      const ready = loadedPeer(peer);
      if (ready) return tokenLimitVerdict(ready.isWithinTokenLimit(text, max), max);
      return loadPeer(peer, feature).then((module) =>
        tokenLimitVerdict(module.isWithinTokenLimit(text, max), max),
      );
    },
  });
}
