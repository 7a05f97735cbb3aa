import { setOwn } from '../core/records.ts';
import { normalizeSecretKey, redacted, secretKeySet } from '../run/secrets.ts';

/**
 * What a cassette never holds. Values of fields named like secrets (`apiKey`, `authorization`, `password`,
 * `secret`, `accessToken`, ... compared without case, `-` or `_`, plus the names you add), and, inside any string,
 * text shaped like a credential: OpenAI and Anthropic keys (`sk-...`), Google API keys (`AIza...`), GitHub tokens
 * (`ghp_...`, `github_pat_...`), Slack tokens (`xox...-`), AWS access key ids (`AKIA...`), JSON web tokens
 * (`eyJ....eyJ....`) and bearer tokens (`Bearer ...`). Each is replaced by "[redacted]".
 */
export const cassetteSecretPatterns: readonly RegExp[] = [
  /\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}/g,
  /\bAIza[0-9A-Za-z_-]{35}/g,
  /\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}/g,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g,
  /\bAKIA[0-9A-Z]{16}\b/g,
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
  /\bBearer\s+[A-Za-z0-9._~+/=-]{8,}/gi,
];

/** Extra secrets to strip, besides the built-in names and patterns. */
export interface SecretStripOptions {
  /** More field names whose values are secrets. */
  secretKeys?: readonly string[] | undefined;
  /** More patterns of secret text; each match inside any string is replaced (give them the `g` flag). */
  secretPatterns?: readonly RegExp[] | undefined;
}

/**
 * A copy of a JSON value with secrets replaced by "[redacted]" (see `cassetteSecretPatterns`). With `byName`
 * false only secret-shaped text is replaced: a JSON Schema names fields (a `password` property) without values.
 */
export function stripSecrets(value: unknown, options: SecretStripOptions = {}, byName = true): unknown {
  const keys = byName ? secretKeySet(options.secretKeys ?? []) : new Set<string>();
  const patterns = [
    ...cassetteSecretPatterns,
    ...(options.secretPatterns ?? []).map((pattern) =>
      pattern.global ? pattern : new RegExp(pattern.source, `${pattern.flags}g`),
    ),
  ];
  const strip = (current: unknown): unknown => {
    if (typeof current === 'string') {
      let text = current;
      for (const pattern of patterns) text = text.replace(pattern, redacted);
      return text;
    }
    if (Array.isArray(current)) return current.map(strip);
    if (typeof current === 'object' && current !== null) {
      const copy: Record<string, unknown> = {};
      for (const [key, child] of Object.entries(current)) {
        if (child === undefined) continue;
        setOwn(copy, key, keys.has(normalizeSecretKey(key)) ? redacted : strip(child));
      }
      return copy;
    }
    return current;
  };
  return strip(value);
}
