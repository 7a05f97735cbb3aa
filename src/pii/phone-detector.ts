import { type Detector, type DetectorSettings, isDigit, isWordChar, type PiiMatch } from './detector.ts';
import { phoneLibrary } from './pii-libraries.ts';

/** A character that glues a number to an identifier (`INV-2024-000123`, `#4155552671`, `id_2125550199`). */
const identifierGlue = /[\w#/-]/;

/**
 * Where a phone number may be: digits with the separators phone numbers use, 7 or more of them. Only these runs
 * are handed to libphonenumber (about 50 µs a call), and only when no other value claimed them (a card number).
 */
const phoneCandidate = /(?<![\w#/+.-])[+(]?\d[\d ().-]{5,30}\d/g;

/** The longest candidate: a `+` or `(`, a digit, 30 more characters and a last digit. */
const maxCandidate = 33;

/** Phone candidates already judged (the same number tends to come back): text to the spans found in it. */
const phoneVerdicts = new Map<string, readonly { start: number; end: number }[]>();
const maxVerdicts = 2_048;

function find(text: string, settings: DetectorSettings, found: PiiMatch[]): void {
  const claimed = found.length;
  for (const candidate of text.matchAll(phoneCandidate)) {
    const at = candidate.index;
    const run = candidate[0];
    if (countDigits(run) < 7) continue;
    let overlaps = false;
    for (let i = 0; i < claimed; i++) {
      const other = found[i] as PiiMatch;
      if (at < other.end && other.start < at + run.length) overlaps = true;
    }
    if (overlaps) continue;
    for (const span of phonesIn(run, settings.defaultCountry)) {
      const start = at + span.start;
      const end = at + span.end;
      const before = text[start - 1];
      const after = text[end];
      if ((before && identifierGlue.test(before)) || (after && identifierGlue.test(after))) continue;
      found.push({ kind: 'phone', start, end });
    }
  }
}

function phonesIn(
  run: string,
  defaultCountry: string | undefined,
): readonly { start: number; end: number }[] {
  const key = `${defaultCountry ?? ''}\u0000${run}`;
  let spans = phoneVerdicts.get(key);
  if (spans === undefined) {
    const options = defaultCountry ? { defaultCountry } : {};
    spans = phoneLibrary()
      .findPhoneNumbersInText(run, options)
      .map((match) => ({ start: match.startsAt, end: match.endsAt }));
    if (phoneVerdicts.size >= maxVerdicts) phoneVerdicts.clear();
    phoneVerdicts.set(key, spans);
  }
  return spans;
}

function countDigits(text: string): number {
  let digits = 0;
  for (let i = 0; i < text.length; i++) if (isDigit(text.charCodeAt(i))) digits++;
  return digits;
}

/** ` ( ) . -` and digits: what a phone number is written with after its first character. */
function isPhoneChar(code: number): boolean {
  return isDigit(code) || code === 32 || code === 40 || code === 41 || code === 46 || code === 45;
}

/**
 * The earliest place in the phone characters at the end (up to a candidate's length back) where a candidate may
 * begin: a `+`, or without a default country only a `+` (only international numbers are found then), a `(` or a
 * digit, not glued to what precedes it.
 */
function pendingFrom(text: string, settings: DetectorSettings): number {
  const international = settings.defaultCountry === undefined;
  let from = text.length;
  for (let at = text.length - 1; at >= 0 && text.length - at <= maxCandidate; at--) {
    const code = text.charCodeAt(at);
    const opens = code === 43 || (!international && (code === 40 || isDigit(code)));
    if (opens && canStart(text, at)) from = at;
    if (code === 43 || !isPhoneChar(code)) break;
  }
  return from;
}

function canStart(text: string, at: number): boolean {
  if (at === 0) return true;
  const before = text.charCodeAt(at - 1);
  // \w # / + . -
  return !(
    isWordChar(before) ||
    before === 35 ||
    before === 47 ||
    before === 43 ||
    before === 46 ||
    before === 45
  );
}

export const phoneDetector: Detector = {
  kind: 'phone',
  maxPending: maxCandidate,
  find,
  pendingFrom,
};
