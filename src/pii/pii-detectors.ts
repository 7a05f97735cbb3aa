import { cardDetector } from './card-detector.ts';
import type { Detector, DetectorSettings, PiiKind, PiiMatch } from './detector.ts';
import { emailDetector } from './email-detector.ts';
import { ibanDetector } from './iban-detector.ts';
import { normalize, originalIndex, originalSpan } from './normalized-text.ts';
import { phoneDetector } from './phone-detector.ts';
import { secretDetector } from './secret-detector.ts';

export { type DetectorSettings, type PiiKind, type PiiMatch, piiKinds } from './detector.ts';

/**
 * The detectors in the order they run: phone numbers last, since only digit runs no other value claimed are
 * handed to libphonenumber.
 */
const detectors: readonly Detector[] = [
  secretDetector,
  emailDetector,
  ibanDetector,
  cardDetector,
  phoneDetector,
];

/** Priority when two matches overlap: secrets first (a token may hold digit runs), then the stricter checks. */
const priority: Record<PiiKind, number> = { secret: 0, email: 1, iban: 2, card: 3, phone: 4 };

/** Seven digits close together: below that, no card, IBAN or phone number can be in a text. */
const sevenDigits = /\d(?:\D{0,3}\d){6}/;
const ibanHint = /[A-Za-z]{2}\d{2}/;

/**
 * Every value of the enabled kinds in `text`, in order, without overlaps. Values are looked for in the text's
 * normalized view (fullwidth digits, look-alike letters and invisible characters folded away) and reported as
 * spans of `text` itself.
 */
export function findPii(text: string, settings: DetectorSettings): PiiMatch[] {
  const view = normalize(text);
  if (view === undefined) return findIn(text, settings);
  const found = findIn(view.text, settings);
  for (const match of found) {
    const span = originalSpan(view, match.start, match.end);
    match.start = span.start;
    match.end = span.end;
  }
  return found;
}

function findIn(text: string, settings: DetectorSettings): PiiMatch[] {
  if (text.length < 6) return [];
  const { kinds } = settings;
  const found: PiiMatch[] = [];
  if (kinds.has('secret')) secretDetector.find(text, settings, found);
  if (kinds.has('email') && text.includes('@')) emailDetector.find(text, settings, found);
  const digits = sevenDigits.test(text);
  if (kinds.has('iban') && digits && ibanHint.test(text)) ibanDetector.find(text, settings, found);
  if (kinds.has('card') && digits) cardDetector.find(text, settings, found);
  if (kinds.has('phone') && digits) phoneDetector.find(text, settings, found);
  if (found.length <= 1) return found;
  found.sort((a, b) => priority[a.kind] - priority[b.kind] || a.start - b.start);
  const kept: PiiMatch[] = [];
  for (const match of found) {
    if (!kept.some((other) => match.start < other.end && other.start < match.end)) kept.push(match);
  }
  return kept.sort((a, b) => a.start - b.start);
}

/**
 * The values in a streamed text so far, and where the text must be held back from: the earliest place at which its
 * end could be the beginning of a value of an enabled kind that more text would complete (each detector says, and
 * bounds how far back that can be); `text.length` when nothing can be under way.
 */
export interface StreamScan {
  matches: PiiMatch[];
  pendingFrom: number;
}

/**
 * `findPii` and the hold-back of one text, on one normalized view: what a stream of deltas asks of each delta.
 */
export function scanStream(text: string, settings: DetectorSettings): StreamScan {
  const view = normalize(text);
  const read = view === undefined ? text : view.text;
  const matches = findIn(read, settings);
  let from = pendingIn(read, settings);
  if (view !== undefined) {
    for (const match of matches) {
      const span = originalSpan(view, match.start, match.end);
      match.start = span.start;
      match.end = span.end;
    }
    from = originalIndex(view, from);
  }
  return { matches, pendingFrom: keepSurrogatePair(text, from) };
}

/** Never split a surrogate pair: its halves mean nothing apart. */
function keepSurrogatePair(text: string, from: number): number {
  const last = text.charCodeAt(text.length - 1);
  return from === text.length && last >= 0xd800 && last <= 0xdbff ? from - 1 : from;
}

function pendingIn(text: string, settings: DetectorSettings): number {
  let from = text.length;
  for (const detector of detectors) {
    if (!settings.kinds.has(detector.kind)) continue;
    const pending = Math.max(detector.pendingFrom(text, settings), text.length - detector.maxPending);
    if (pending < from) from = pending;
  }
  return from;
}
