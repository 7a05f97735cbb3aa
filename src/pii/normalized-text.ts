/**
 * The view of a text that detectors read: compatibility forms folded (NFKC: fullwidth `４１１１` is `4111`, `＠` is
 * `@`), invisible characters dropped (zero-width spaces and joiners, soft hyphens, direction marks, variation
 * selectors), letters that look like Latin ones folded to them (Cyrillic `а`, Greek `Ο`), dashes to `-`, and decimal
 * digits of other scripts to ASCII digits. Each character of the view remembers the span of the original text it
 * came from, so a value found in the view is masked in the original, invisible characters inside it included.
 */
export interface NormalizedText {
  /** The folded text. */
  readonly text: string;
  /** Where, in the original, the character at view index `i` starts. */
  readonly starts: Int32Array;
  /** Where, in the original, the character at view index `i` ends. */
  readonly ends: Int32Array;
  /** The original text's length. */
  readonly length: number;
}

/** Only text with a character beyond ASCII can differ from its view. */
const beyondAscii = /[\u0080-\uffff]/;

/** Format controls: zero-width spaces and joiners, soft hyphens, direction marks, the byte order mark. */
const formatControl = /^\p{Cf}$/u;

/** Characters that show nothing: format controls, the combining grapheme joiner, variation selectors, fillers. */
function isInvisible(code: number, char: string): boolean {
  return (
    formatControl.test(char) ||
    code === 0x34f ||
    code === 0x115f ||
    code === 0x1160 ||
    code === 0x17b4 ||
    code === 0x17b5 ||
    (code >= 0x180b && code <= 0x180f) ||
    code === 0x3164 ||
    code === 0xffa0 ||
    (code >= 0xfe00 && code <= 0xfe0f) ||
    (code >= 0xe0100 && code <= 0xe01ef)
  );
}

/**
 * Letters that render like Latin letters (from Unicode's confusables list: the Cyrillic, Greek and Armenian letters
 * used to spoof Latin text), and dashes, minus signs and ideographic full stops that stand for `-` and `.`: each
 * character of the first string stands for the character at the same place in the second.
 */
const lookAlikePairs: readonly (readonly [string, string])[] = [
  ['АВСЕНІЈКМОРЅТХУҮԀԚԜӀасеһіјорѕхуԁԛԝӏѵɡ', 'ABCEHIJKMOPSTXYYDQWIacehijopsxydqwlvg'], // Cyrillic
  ['ΑΒΕΖΗΙΚΜΝΟΡΤΥΧϹϳονακρυϲι', 'ABEZHIKMNOPTYXCjovakpuci'], // Greek
  ['օսՍհոցıȷ', 'ouUhngij'], // Armenian, Latin variants
  ['\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d\u3002\uff61', '----------..'],
];

const lookAlikes: ReadonlyMap<string, string> = new Map(
  lookAlikePairs.flatMap(([from, to]) =>
    [...from].map((char, i): [string, string] => [char, to[i] as string]),
  ),
);

/** The digit zero of every script whose decimal digits NFKC leaves as they are (Arabic-Indic, Devanagari...). */
const digitZeros = [
  0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xa66, 0xae6, 0xb66, 0xbe6, 0xc66, 0xce6, 0xd66, 0xde6, 0xe50, 0xed0,
  0xf20, 0x1040, 0x1090, 0x17e0, 0x1810, 0x1946, 0x19d0, 0x1a80, 0x1a90, 0x1b50, 0x1bb0, 0x1c40, 0x1c50,
  0xa620, 0xa8d0, 0xa900, 0xa9d0, 0xa9f0, 0xaa50, 0xabf0,
];

/** Each non-ASCII character folded once (its view: '' when invisible). */
const folded = new Map<number, string>();

function fold(codePoint: number): string {
  let view = folded.get(codePoint);
  if (view !== undefined) return view;
  const char = String.fromCodePoint(codePoint);
  if (isInvisible(codePoint, char)) view = '';
  else {
    view = '';
    for (const part of char.normalize('NFKC')) view += lookAlikes.get(part) ?? digitOf(part) ?? part;
  }
  if (folded.size < 65_536) folded.set(codePoint, view);
  return view;
}

function digitOf(char: string): string | undefined {
  const code = char.codePointAt(0) as number;
  if (code < 0x660) return undefined;
  for (const zero of digitZeros)
    if (code >= zero && code < zero + 10) return String.fromCharCode(48 + code - zero);
  return undefined;
}

/** The view of `text`; undefined when it is `text` itself (plain ASCII: the common case costs one scan). */
export function normalize(text: string): NormalizedText | undefined {
  if (!beyondAscii.test(text)) return undefined;
  let view = '';
  const starts: number[] = [];
  const ends: number[] = [];
  for (let i = 0; i < text.length; ) {
    const code = text.codePointAt(i) as number;
    const size = code > 0xffff ? 2 : 1;
    const part = code < 0x80 ? (text[i] as string) : fold(code);
    for (let k = 0; k < part.length; k++) {
      starts.push(i);
      ends.push(i + size);
    }
    view += part;
    i += size;
  }
  return { text: view, starts: Int32Array.from(starts), ends: Int32Array.from(ends), length: text.length };
}

/** The original span of the view's span [start, end). */
export function originalSpan(
  view: NormalizedText,
  start: number,
  end: number,
): { start: number; end: number } {
  return {
    start: start < view.text.length ? (view.starts[start] as number) : view.length,
    end: end > 0 ? (view.ends[end - 1] as number) : 0,
  };
}

/** The original index of the view's index `at` (the end of the original when `at` is the view's end). */
export function originalIndex(view: NormalizedText, at: number): number {
  return at < view.text.length ? (view.starts[at] as number) : view.length;
}
