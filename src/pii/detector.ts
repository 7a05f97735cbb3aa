/** The kinds of personal data and secrets masking finds. */
export type PiiKind = 'email' | 'phone' | 'card' | 'iban' | 'secret';

export const piiKinds: readonly PiiKind[] = ['email', 'phone', 'card', 'iban', 'secret'];

/** One value found in a text: `text.slice(start, end)`. */
export interface PiiMatch {
  kind: PiiKind;
  start: number;
  end: number;
}

/** What a detector needs to know. */
export interface DetectorSettings {
  kinds: ReadonlySet<PiiKind>;
  /** ISO country code for phone numbers written without a `+` prefix; without it only international ones match. */
  defaultCountry?: string | undefined;
}

/**
 * Finds the values of one kind. Detectors read the normalized view of a text (see normalized-text.ts) and know
 * how values of their kind begin, so streamed text is held back exactly as far as a value still being written
 * could reach.
 */
export interface Detector {
  readonly kind: PiiKind;
  /** The longest beginning of a value that can be waiting for more text, in characters of the normalized view. */
  readonly maxPending: number;
  /** Adds the values in `text` to `found`. */
  find(text: string, settings: DetectorSettings, found: PiiMatch[]): void;
  /**
   * Where the end of `text` could be the beginning of a value that more text would complete or change: the
   * earliest such index (at most `maxPending` back), or `text.length` when no value can be under way.
   */
  pendingFrom(text: string, settings: DetectorSettings): number;
}

export function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

export function isAsciiLetter(code: number): boolean {
  return (code >= 97 && code <= 122) || (code >= 65 && code <= 90);
}

export function isAsciiAlnum(code: number): boolean {
  return isDigit(code) || isAsciiLetter(code);
}

/** `\w` of a regular expression: ASCII letters, digits and `_`. */
export function isWordChar(code: number): boolean {
  return isAsciiAlnum(code) || code === 95;
}
