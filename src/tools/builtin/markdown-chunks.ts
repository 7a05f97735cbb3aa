/** A piece of a document small enough to show the model, and where it sits. */
export interface TextChunk {
  /** Offset of the chunk's first character in the document. */
  start: number;
  /** Offset just past its last character (`text.slice(start, end)` is the chunk). */
  end: number;
  /** The headings above the chunk, outermost first: `['Install', 'Linux']`. Empty before the first heading. */
  headings: string[];
}

interface Section {
  start: number;
  end: number;
  headings: string[];
}

const atxHeading = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const fence = /^ {0,3}(`{3,}|~{3,})/;
const setextUnderline = /^ {0,3}(=+|-+)[ \t]*$/;

/**
 * Cuts a Markdown (or plain text) document into chunks of at most about `maxChars` characters that never cross a
 * heading, each knowing its heading path. A section too long for one chunk is cut between paragraphs, and a
 * paragraph too long for one chunk between sentences or words. Lines inside fenced code blocks are never headings.
 */
export function chunkMarkdown(text: string, maxChars: number): TextChunk[] {
  const chunks: TextChunk[] = [];
  for (const section of sectionsOf(text)) {
    for (const [start, end] of splitSection(text, section.start, section.end, maxChars)) {
      if (text.slice(start, end).trim() === '') continue;
      chunks.push({ start, end, headings: section.headings });
    }
  }
  return chunks;
}

function sectionsOf(text: string): Section[] {
  const sections: Section[] = [];
  let headings: string[] = [];
  let sectionStart = 0;
  let inFence: string | undefined;
  /** The line before, when it was ordinary text outside code (a setext heading's title). */
  let previousText: { start: number; text: string } | undefined;
  const startSection = (at: number, next: string[]): void => {
    if (at > sectionStart) sections.push({ start: sectionStart, end: at, headings });
    sectionStart = at;
    headings = next;
  };
  const withHeading = (level: number, title: string): string[] => [...headings.slice(0, level - 1), title];
  let lineStart = 0;
  while (lineStart < text.length) {
    const newline = text.indexOf('\n', lineStart);
    const lineEnd = newline === -1 ? text.length : newline + 1;
    const line = text.slice(lineStart, lineEnd).replace(/\r?\n$/, '');
    const fenceMatch = fence.exec(line);
    let textLine: { start: number; text: string } | undefined;
    if (inFence !== undefined) {
      if (fenceMatch?.[1]?.startsWith(inFence)) inFence = undefined;
    } else if (fenceMatch !== null) {
      inFence = fenceMatch[1];
    } else {
      const atx = atxHeading.exec(line);
      const setext = setextUnderline.exec(line);
      if (atx !== null) {
        startSection(lineStart, withHeading(atx[1]?.length ?? 1, cleanHeading(atx[2] ?? '')));
      } else if (setext !== null && previousText !== undefined && !isListOrQuote(previousText.text)) {
        // "Title\n=====": the section starts at the title line, the line before the underline.
        const level = setext[1]?.startsWith('=') ? 1 : 2;
        startSection(previousText.start, withHeading(level, cleanHeading(previousText.text)));
      } else if (line.trim() !== '') {
        textLine = { start: lineStart, text: line };
      }
    }
    previousText = textLine;
    lineStart = lineEnd;
  }
  if (text.length > sectionStart) sections.push({ start: sectionStart, end: text.length, headings });
  return sections;
}

function isListOrQuote(line: string): boolean {
  return /^\s*(?:[-*+>]|\d+[.)])\s/.test(line);
}

/** A heading's text without emphasis and link markup: `**Install** [docs](x)` reads `Install docs`. */
function cleanHeading(raw: string): string {
  return raw
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[*_`]+/g, '')
    .trim();
}

/** [start, end) ranges of at most about maxChars, cut at paragraph, then sentence, then word boundaries. */
function splitSection(text: string, start: number, end: number, maxChars: number): [number, number][] {
  if (end - start <= maxChars) return [[start, end]];
  const ranges: [number, number][] = [];
  let from = start;
  while (end - from > maxChars) {
    const window = text.slice(from, from + maxChars);
    const cut =
      lastBoundary(window, /\n[ \t]*\n/g, maxChars / 3) ??
      lastBoundary(window, /[.!?][)"'\]]*\s+/g, maxChars / 3) ??
      lastBoundary(window, /\s+/g, maxChars / 3) ??
      maxChars;
    ranges.push([from, from + cut]);
    from += cut;
  }
  ranges.push([from, end]);
  return ranges;
}

/** Offset just past the last match of `boundary` in `window` that leaves at least `minimum` characters before it. */
function lastBoundary(window: string, boundary: RegExp, minimum: number): number | undefined {
  let found: number | undefined;
  for (const match of window.matchAll(boundary)) {
    const after = match.index + match[0].length;
    if (match.index >= minimum && after < window.length) found = after;
  }
  return found;
}
