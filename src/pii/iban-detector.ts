import { type Detector, isAsciiAlnum, isAsciiLetter, isDigit, type PiiMatch } from './detector.ts';
import { ibanLibrary } from './pii-libraries.ts';

/**
 * Two letters, two check digits and up to 30 letters or digits, in either case, grouped by single spaces in any
 * way (`DE89 3704 0044 …`, `de89 37040 04405 …`); checked by ibantools afterwards.
 */
const ibanPattern = /(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?: ?[A-Za-z0-9]){11,30}(?![A-Za-z0-9])/g;

const maxChars = 34;

/**
 * The pattern may take a following word that happens to be letters and digits ("DE89 ... 00 AB12"): a candidate
 * that fails is shortened group by group before giving up, and the search goes on right after what was found (or
 * after the candidate's start), so an IBAN right after another one is found too.
 */
function find(text: string, _settings: unknown, found: PiiMatch[]): void {
  const iban = ibanLibrary();
  const pattern = new RegExp(ibanPattern);
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    const start = match.index;
    let candidate = match[0];
    let end = start;
    for (;;) {
      const compact = candidate.replace(/ /g, '').toUpperCase();
      if (compact.length >= 15 && iban.isValidIBAN(compact)) {
        end = start + candidate.length;
        found.push({ kind: 'iban', start, end });
        break;
      }
      const space = candidate.lastIndexOf(' ');
      if (space < 0) break;
      candidate = candidate.slice(0, space);
    }
    pattern.lastIndex = end > start ? end : start + 1;
  }
}

/** Whether an IBAN's head (two letters, two digits) can start at `at`, as far as the text goes. */
function headFits(text: string, at: number): boolean {
  for (let k = 0; k < 4; k++) {
    if (at + k >= text.length) return true;
    const code = text.charCodeAt(at + k);
    if (k < 2 ? !isAsciiLetter(code) : !isDigit(code)) return false;
  }
  return true;
}

/** A digit close to the end: without one, no IBAN whose head is complete can be under way. */
const digitNearEnd = /\d/;

/** Groups of letters and digits at the end, up to 34 characters back: the earliest that fits an IBAN's head. */
function pendingFrom(text: string): number {
  const length = text.length;
  if (!digitNearEnd.test(length > maxChars * 2 ? text.slice(-maxChars * 2) : text)) {
    // Only a head still being written (one or two letters) at the very end.
    let start = length;
    while (start > 0 && length - start < 3 && isAsciiLetter(text.charCodeAt(start - 1))) start--;
    const alone = start === 0 || !isAsciiAlnum(text.charCodeAt(start - 1));
    return start < length && length - start <= 2 && alone ? start : length;
  }
  let at = length;
  if (text.charCodeAt(at - 1) === 32 && isAsciiAlnum(text.charCodeAt(at - 2))) at--;
  let from = length;
  let chars = 0;
  while (at > 0) {
    const code = text.charCodeAt(at - 1);
    if (isAsciiAlnum(code)) {
      if (++chars > maxChars) break;
      at--;
      if ((at === 0 || !isAsciiAlnum(text.charCodeAt(at - 1))) && headFits(text, at)) from = at;
    } else if (code === 32 && isAsciiAlnum(text.charCodeAt(at - 2))) at--;
    else break;
  }
  return from;
}

export const ibanDetector: Detector = {
  kind: 'iban',
  // 34 characters, 33 single spaces between them and the one that may follow.
  maxPending: maxChars * 2,
  find,
  pendingFrom,
};
