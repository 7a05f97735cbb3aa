import type { JsonValue } from '../core/json.ts';
import { setOwn } from '../core/records.ts';
import {
  type DetectorSettings,
  findPii,
  type PiiKind,
  type PiiMatch,
  type StreamScan,
  scanStream,
} from './pii-detectors.ts';

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
  /**
   * Short strings of event data found to hold nothing (field names, state names, ids): they come back in every
   * event, and a set lookup costs a fraction of a scan.
   */
  readonly #clean = new Set<string>();

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

  /** Values in a streamed text so far, and where it must be held back from. */
  scan(text: string): StreamScan {
    return scanStream(text, this.settings);
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

  /** Every string and every object key inside a JSON value masked; the same object back when nothing was found. */
  maskJson<T extends JsonValue | undefined>(value: T, counts?: PiiCounts): T {
    return this.maskDeep(value, counts) as T;
  }

  /**
   * Every string and every own enumerable key inside `value` (arrays and objects, to any depth) masked: copies
   * where something changed, the same objects where nothing did. Deeper than 100 levels a value is replaced by
   * a placeholder string rather than let through unread.
   */
  maskDeep(value: unknown, counts?: PiiCounts, depth = 0): unknown {
    if (typeof value === 'string') return this.#maskShort(value, counts);
    if (value === null || typeof value !== 'object') return value;
    if (depth > 100) return '[too deep]';
    if (Array.isArray(value)) {
      let items: unknown[] | undefined;
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        const masked = this.maskDeep(item, counts, depth + 1);
        if (masked !== item && items === undefined) items = value.slice();
        if (items) items[i] = masked;
      }
      return items ?? value;
    }
    let copy: Record<string, unknown> | undefined;
    const source = value as Record<string, unknown>;
    const keys = Object.keys(source);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as string;
      const inner = source[key];
      const maskedKey = this.#maskShort(key, counts);
      const masked = this.maskDeep(inner, counts, depth + 1);
      if ((masked !== inner || maskedKey !== key) && copy === undefined) {
        copy = {};
        for (let j = 0; j < i; j++) setOwn(copy, keys[j] as string, source[keys[j] as string]);
      }
      if (copy) setOwn(copy, maskedKey, masked);
    }
    return copy ?? value;
  }

  /** `mask`, remembering short strings that hold nothing. */
  #maskShort(text: string, counts: PiiCounts | undefined): string {
    if (text.length < 6 && isPlain(text)) return text;
    if (text.length > 64) return this.mask(text, counts);
    if (this.#clean.has(text)) return text;
    const masked = this.mask(text, counts);
    if (masked === text) {
      if (this.#clean.size >= 4_096) this.#clean.clear();
      this.#clean.add(text);
    }
    return masked;
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

  /** `reveal` on every string and every object key of a JSON value. */
  revealJson<T extends JsonValue>(value: T): T {
    if (typeof value === 'string') return this.reveal(value) as T;
    if (value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) return value.map((item) => this.revealJson(item)) as T;
    const copy: Record<string, JsonValue> = {};
    for (const [key, inner] of Object.entries(value)) setOwn(copy, this.reveal(key), this.revealJson(inner));
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

/** Short ASCII text: no value fits in fewer than six characters of it (beyond ASCII, folding may widen text). */
function isPlain(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) >= 0x80) return false;
  return true;
}
