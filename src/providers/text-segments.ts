/**
 * How an answer that arrives in several text blocks (Anthropic text blocks around server tool calls, OpenAI
 * Responses message items) becomes one `text`: text blocks that follow each other run together (a cited passage
 * is its own block in the middle of a sentence), and text after anything else (a search, a thought, another
 * message) starts a new paragraph. The streamed deltas follow the same rule, so they always add up to the text.
 */
export const paragraphBreak = '\n\n';

/**
 * The text of a turn's blocks in order: a string for a text block, `undefined` for any other block.
 * Empty text blocks count for nothing.
 */
export function joinTextSegments(segments: Iterable<string | undefined>): string {
  let out = '';
  let broken = false;
  for (const segment of segments) {
    if (segment === undefined) {
      broken = true;
      continue;
    }
    if (segment === '') continue;
    if (broken && out !== '') out += paragraphBreak;
    out += segment;
    broken = false;
  }
  return out;
}

/** The streaming side of `joinTextSegments`: tells which separator goes out before a piece of text. */
export class TextSegmenter {
  private hasText = false;
  private broken = false;

  /** A block that is not text began. */
  breakHere(): void {
    this.broken = true;
  }

  /** The separator to send before this piece of text ('' for none); an empty piece needs none. */
  separatorBefore(piece: string): string {
    if (piece === '') return '';
    const separator = this.broken && this.hasText ? paragraphBreak : '';
    this.hasText = true;
    this.broken = false;
    return separator;
  }
}
