/** One line of a comment in a TypeScript source: its 1-based line number in the file and its text. */
export interface CommentLine {
  line: number;
  text: string;
}

/** Words after which a `/` starts a regular expression rather than a division. */
const KEYWORDS_BEFORE_EXPRESSION = new Set([
  'return',
  'typeof',
  'instanceof',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'case',
  'do',
  'else',
  'yield',
  'await',
]);

const isIdentifierStart = (char: string): boolean => /[A-Za-z_$\u0080-\uffff]/.test(char);
const isIdentifierPart = (char: string): boolean => /[\w$\u0080-\uffff]/.test(char);

/**
 * The comments of a TypeScript (or .d.ts) source, line by line. A small lexer, enough for this repository's code:
 * it skips string literals, template literals (with `${}` nested to any depth) and regular expression literals, so
 * a `//` or `/*` inside them is not taken for a comment. A `/` is a regular expression where an expression may
 * start (after an operator, an opening bracket, a keyword such as `return`, or at the start), else a division.
 */
export function commentLines(source: string): CommentLine[] {
  const lines: CommentLine[] = [];
  const lineStarts = [0];
  for (let i = 0; i < source.length; i++) if (source[i] === '\n') lineStarts.push(i + 1);
  const lineOf = (offset: number): number => {
    let low = 0;
    let high = lineStarts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if ((lineStarts[middle] ?? 0) <= offset) low = middle;
      else high = middle - 1;
    }
    return low + 1;
  };
  const addComment = (start: number, end: number): void => {
    const first = lineOf(start);
    source
      .slice(start, end)
      .split('\n')
      .forEach((text, index) => {
        lines.push({ line: first + index, text });
      });
  };

  // Brace depth at which each open template's `${` started: its `}` resumes the template.
  const templates: number[] = [];
  let depth = 0;
  let expressionMayStart = true;
  let i = 0;

  const skipQuoted = (quote: string): void => {
    i++;
    while (i < source.length && source[i] !== quote && source[i] !== '\n') i += source[i] === '\\' ? 2 : 1;
    i++;
  };
  // Reads template text from i (just past "`" or a closing "}") to its end or to the next "${".
  const readTemplate = (): void => {
    while (i < source.length) {
      const char = source[i];
      if (char === '\\') i += 2;
      else if (char === '`') {
        i++;
        expressionMayStart = false;
        return;
      } else if (char === '$' && source[i + 1] === '{') {
        i += 2;
        templates.push(depth);
        depth++;
        expressionMayStart = true;
        return;
      } else i++;
    }
  };
  const skipRegularExpression = (): void => {
    i++;
    let inClass = false;
    while (i < source.length && source[i] !== '\n') {
      const char = source[i];
      if (char === '\\') i++;
      else if (char === '[') inClass = true;
      else if (char === ']') inClass = false;
      else if (char === '/' && !inClass) break;
      i++;
    }
    i++;
    while (i < source.length && isIdentifierPart(source[i] ?? '')) i++;
    expressionMayStart = false;
  };

  while (i < source.length) {
    const char = source[i] ?? '';
    const next = source[i + 1];
    if (char === '/' && next === '/') {
      const end = source.indexOf('\n', i);
      const stop = end === -1 ? source.length : end;
      addComment(i, stop);
      i = stop;
    } else if (char === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2);
      const stop = end === -1 ? source.length : end + 2;
      addComment(i, stop);
      i = stop;
    } else if (char === '/') {
      if (expressionMayStart) skipRegularExpression();
      else {
        i++;
        expressionMayStart = true;
      }
    } else if (char === "'" || char === '"') {
      skipQuoted(char);
      expressionMayStart = false;
    } else if (char === '`') {
      i++;
      readTemplate();
    } else if (char === '{') {
      depth++;
      i++;
      expressionMayStart = true;
    } else if (char === '}') {
      depth--;
      i++;
      if (templates.length > 0 && templates[templates.length - 1] === depth) {
        templates.pop();
        readTemplate();
      } else expressionMayStart = true;
    } else if (isIdentifierStart(char)) {
      const start = i;
      while (i < source.length && isIdentifierPart(source[i] ?? '')) i++;
      expressionMayStart = KEYWORDS_BEFORE_EXPRESSION.has(source.slice(start, i));
    } else if (/\d/.test(char)) {
      while (i < source.length && /[\w.]/.test(source[i] ?? '')) i++;
      expressionMayStart = false;
    } else if (/\s/.test(char)) i++;
    else {
      i++;
      expressionMayStart = char !== ')' && char !== ']';
    }
  }
  return lines;
}
