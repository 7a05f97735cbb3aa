import type { JsonValue } from '../core/json.ts';
import { setOwn } from '../core/records.ts';
import { type DetectorSettings, findPii, type PiiKind, type PiiMatch } from './pii-detectors.ts';

/** How many values of each kind were masked (never the values). */
export type PiiCounts = Partial<Record<PiiKind, number>>;

const placeholderNames: Record<PiiKind, string> = {
  email: 'EMAIL',
  phone: 'PHONE',
  card: 'CARD',
  iban: 'IBAN',
  secret: 'SECRET',
};

const placeholderPattern = /<(EMAIL|PHONE|CARD|IBAN|SECRET)_(\d{1,6})>/g;

/**
 * Masks personal data and secrets in text with placeholders (`<EMAIL_1>`, `<CARD_2>`...). One masker serves a
 * run or a session: the same value always gets the same placeholder, so masked events, masked model requests and
 * the placeholders a model writes back all agree. The value behind each placeholder is kept in this object only
 * (in memory, for `reveal`): never in events, traces or the store.
 */
export class PiiMasker {
  readonly settings: DetectorSettings;
  readonly #byValue = new Map<string, string>();
  readonly #byPlaceholder = new Map<string, string>();
  readonly #next: Record<PiiKind, number> = { email: 0, phone: 0, card: 0, iban: 0, secret: 0 };

  constructor(settings: DetectorSettings) {
    this.settings = settings;
  }

  /** The placeholder standing for `value` (made on first sight). */
  placeholder(kind: PiiKind, value: string): string {
    const key = `${kind}\u0000${value}`;
    let placeholder = this.#byValue.get(key);
    if (placeholder === undefined) {
      placeholder = `<${placeholderNames[kind]}_${++this.#next[kind]}>`;
      this.#byValue.set(key, placeholder);
      this.#byPlaceholder.set(placeholder, value);
    }
    return placeholder;
  }

  /** Values of the enabled kinds in `text`. */
  find(text: string): PiiMatch[] {
    return findPii(text, this.settings);
  }

  /** `text` with every value found replaced by its placeholder, and what was replaced. */
  mask(text: string, counts?: PiiCounts): string {
    const matches = this.find(text);
    return matches.length === 0 ? text : this.replace(text, matches, text.length, counts);
  }

  /** `text.slice(0, end)` with the `matches` that end by then replaced; counts are added to `counts`. */
  replace(text: string, matches: readonly PiiMatch[], end: number, counts?: PiiCounts): string {
    let out = '';
    let at = 0;
    for (const match of matches) {
      if (match.end > end) break;
      out += text.slice(at, match.start) + this.placeholder(match.kind, text.slice(match.start, match.end));
      at = match.end;
      if (counts) counts[match.kind] = (counts[match.kind] ?? 0) + 1;
    }
    return out + text.slice(at, end);
  }

  /** Every string inside a JSON value masked (keys kept); the same object back when nothing was found. */
  maskJson<T extends JsonValue | undefined>(value: T, counts?: PiiCounts, depth = 0): T {
    if (typeof value === 'string') return this.mask(value, counts) as T;
    if (value === null || typeof value !== 'object' || depth > 100) return value;
    if (Array.isArray(value)) {
      let changed = false;
      const items = value.map((item) => {
        const masked = this.maskJson(item, counts, depth + 1);
        if (masked !== item) changed = true;
        return masked;
      });
      return (changed ? items : value) as T;
    }
    let copy: Record<string, JsonValue> | undefined;
    for (const [key, inner] of Object.entries(value)) {
      const masked = this.maskJson(inner, counts, depth + 1);
      if (masked !== inner && copy === undefined) copy = { ...value };
      if (copy) setOwn(copy, key, masked);
    }
    return (copy ?? value) as T;
  }

  /**
   * `text` with every placeholder this masker made replaced by its real value (unknown placeholders stay):
   * what a tool gets when the model passes it a placeholder.
   */
  reveal(text: string): string {
    if (!text.includes('<')) return text;
    return text.replace(
      placeholderPattern,
      (placeholder) => this.#byPlaceholder.get(placeholder) ?? placeholder,
    );
  }

  /** `reveal` on every string of a JSON value. */
  revealJson<T extends JsonValue>(value: T): T {
    if (typeof value === 'string') return this.reveal(value) as T;
    if (value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) return value.map((item) => this.revealJson(item)) as T;
    const copy: Record<string, JsonValue> = {};
    for (const [key, inner] of Object.entries(value)) setOwn(copy, key, this.revealJson(inner));
    return copy as T;
  }
}

/** Adds `more` into `counts`. */
export function addCounts(counts: PiiCounts, more: PiiCounts): void {
  for (const [kind, count] of Object.entries(more) as [PiiKind, number][])
    counts[kind] = (counts[kind] ?? 0) + count;
}

export function hasCounts(counts: PiiCounts): boolean {
  for (const _ in counts) return true;
  return false;
}
