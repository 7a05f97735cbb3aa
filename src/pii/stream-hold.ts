/**
 * Where streamed text may be cut without splitting a value that masking must see whole. Text is released up to the
 * last boundary (white space, quotes, brackets, commas); the word being written is held back, and so are the
 * number groups before it ("4111 1111 1111 ", "+1 (415) 555-", "DE89 3704 "), whose next group may still come,
 * and a "Bearer " whose token may follow.
 */

/** The longest piece held back: a longer unbroken word is released (a secret that long is masked as a whole). */
export const maxHeldChars = 4096;

/** The longest run of grouped pieces held back (a 19-digit card or 34-character IBAN with spaces, a phone). */
const maxGroupedChars = 64;

function isBoundary(code: number): boolean {
  // \t \n \r space " ' ` , ; < > [ ] { } |
  return (
    code === 32 ||
    code === 9 ||
    code === 10 ||
    code === 13 ||
    code === 34 ||
    code === 39 ||
    code === 96 ||
    code === 44 ||
    code === 59 ||
    code === 60 ||
    code === 62 ||
    code === 91 ||
    code === 93 ||
    code === 123 ||
    code === 125 ||
    code === 124
  );
}

/** A piece of a grouped number, phone or IBAN: "4111", "(415)", "+1", "555-", "DE89", "NWBK". */
const groupPiece = /^(?:[+(]?\d[\d().-]{0,5}|[A-Z]{2}\d{2}|[A-Z0-9]{4})$/;

/** The index from which `text` must be held back; `text.length` when all of it can go. */
export function holdFrom(text: string): number {
  let start = text.length;
  while (start > 0 && !isBoundary(text.charCodeAt(start - 1))) start--;
  // Number groups separated by single spaces, going back from the word being written.
  let from = start;
  while (from > 0 && text.charCodeAt(from - 1) === 32) {
    let piece = from - 1;
    while (piece > 0 && !isBoundary(text.charCodeAt(piece - 1))) piece--;
    if (text.length - piece > maxGroupedChars) break;
    const word = text.slice(piece, from - 1);
    if (!groupPiece.test(word) && !/^[Bb]earer$/.test(word)) break;
    from = piece;
    if (/^[Bb]earer$/.test(word)) break;
  }
  return Math.max(from, text.length - maxHeldChars);
}
