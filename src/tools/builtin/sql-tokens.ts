/**
 * SQLite's tokenizer, as its `sqlite3GetToken` splits SQL text: the same token boundaries for every input, so a check
 * made on these tokens sees the statement SQLite will run, not a look-alike. Only what decides a boundary is
 * modelled; the token kinds are those a read-only check needs.
 */

export type SqlTokenKind =
  /**
   * Spaces, tabs, newlines, form feeds, carriage returns (a vertical tab only after one of those), and a
   * byte-order mark.
   */
  | 'space'
  /** `-- ...` to the end of the line, or `/* ... *\/` (an unterminated one runs to the end). */
  | 'comment'
  /** A bare word: a keyword or an unquoted identifier. */
  | 'word'
  /** `"..."`, `` `...` `` or `[...]`. */
  | 'quoted-identifier'
  /** `'...'`. */
  | 'string'
  /** `x'...'`, an even number of hex digits. */
  | 'blob'
  /** A number, including what SQLite glues to it (`1abc` is one, illegal, token in SQLite). */
  | 'number'
  /** A parameter: `?`, `?NNN`, `:name`, `@name`, `#name`, `$name`, with `::` parts and a `(...)` suffix. */
  | 'parameter'
  | 'semicolon'
  /** Operators and punctuation. */
  | 'other'
  /** What SQLite itself would refuse to tokenize (an unterminated quote, a stray character, a bad blob). */
  | 'illegal';

export interface SqlToken {
  kind: SqlTokenKind;
  /** Offset of the token's first character. */
  start: number;
  /** Offset just past its last character. */
  end: number;
}

/** sqlite3Isspace: space, \t, \n, \v, \f, \r. */
function isSpace(code: number): boolean {
  return code === 0x20 || (code >= 0x09 && code <= 0x0d);
}

/** A space that can start a whitespace token (SQLite's CC_SPACE class has no vertical tab). */
function startsSpace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d;
}

function isDigit(code: number): boolean {
  return code >= 0x30 && code <= 0x39;
}

function isHexDigit(code: number): boolean {
  return isDigit(code) || (code >= 0x41 && code <= 0x46) || (code >= 0x61 && code <= 0x66);
}

function isAlpha(code: number): boolean {
  return (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a);
}

/**
 * IdChar: letters, digits, `_`, `$`, and every byte of a multi-byte UTF-8 character. A JavaScript character past
 * U+007F is such a byte sequence, so it counts whole.
 */
function isIdChar(code: number): boolean {
  return isAlpha(code) || isDigit(code) || code === 0x5f || code === 0x24 || code >= 0x80;
}

/** Splits `sql` into tokens covering it entirely, the way SQLite does. `sql` must hold no NUL character. */
export function sqlTokens(sql: string): SqlToken[] {
  const tokens: SqlToken[] = [];
  let at = 0;
  while (at < sql.length) {
    const { kind, length } = nextToken(sql, at);
    tokens.push({ kind, start: at, end: at + length });
    at += length;
  }
  return tokens;
}

function nextToken(sql: string, start: number): { kind: SqlTokenKind; length: number } {
  const code = (offset: number): number => (start + offset < sql.length ? sql.charCodeAt(start + offset) : 0);
  const c = code(0);
  let i = 1;
  if (startsSpace(c)) {
    while (isSpace(code(i))) i++;
    return { kind: 'space', length: i };
  }
  // A byte-order mark starting a token is white space (inside a word it is part of the word).
  if (c === 0xfeff) return { kind: 'space', length: 1 };
  switch (c) {
    case 0x2d: // -
      if (code(1) === 0x2d) {
        i = 2;
        while (code(i) !== 0 && code(i) !== 0x0a) i++;
        return { kind: 'comment', length: i };
      }
      return { kind: 'other', length: 1 };
    case 0x2f: // /
      // `/*` at the very end is a slash, then a star.
      if (code(1) === 0x2a && code(2) !== 0) {
        i = 3;
        while (code(i) !== 0 && !(code(i - 1) === 0x2a && code(i) === 0x2f)) i++;
        return { kind: 'comment', length: code(i) === 0 ? i : i + 1 };
      }
      return { kind: 'other', length: 1 };
    case 0x3b: // ;
      return { kind: 'semicolon', length: 1 };
    case 0x27: // '
    case 0x22: // "
    case 0x60: {
      // `
      for (;;) {
        const next = code(i);
        if (next === 0) return { kind: 'illegal', length: i };
        if (next === c) {
          if (code(i + 1) === c) i += 2;
          else break;
        } else i++;
      }
      return { kind: c === 0x27 ? 'string' : 'quoted-identifier', length: i + 1 };
    }
    case 0x5b: {
      // [ ... ] has no escape: it ends at the first ].
      while (code(i) !== 0 && code(i) !== 0x5d) i++;
      return code(i) === 0 ? { kind: 'illegal', length: i } : { kind: 'quoted-identifier', length: i + 1 };
    }
    case 0x3f: // ?
      while (isDigit(code(i))) i++;
      return { kind: 'parameter', length: i };
    case 0x24: // $
    case 0x40: // @
    case 0x3a: // :
    case 0x23: {
      // #
      let named = 0;
      for (;;) {
        const next = code(i);
        if (next === 0) break;
        if (isIdChar(next)) {
          named++;
          i++;
        } else if (next === 0x28 && named > 0) {
          // The Tcl form `$name(...)`: everything up to a space or the closing parenthesis belongs to it.
          i++;
          while (code(i) !== 0 && !isSpace(code(i)) && code(i) !== 0x29) i++;
          if (code(i) === 0x29) return { kind: 'parameter', length: i + 1 };
          return { kind: 'illegal', length: i };
        } else if (next === 0x3a && code(i + 1) === 0x3a) i += 2;
        else break;
      }
      return { kind: named === 0 ? 'illegal' : 'parameter', length: i };
    }
    case 0x78: // x
    case 0x58: // X
      if (code(1) === 0x27) {
        i = 2;
        while (isHexDigit(code(i))) i++;
        if (code(i) !== 0x27 || i % 2 !== 0) {
          while (code(i) !== 0 && code(i) !== 0x27) i++;
          return { kind: 'illegal', length: code(i) === 0 ? i : i + 1 };
        }
        return { kind: 'blob', length: i + 1 };
      }
      while (isIdChar(code(i))) i++;
      return { kind: 'word', length: i };
    default:
      break;
  }
  if (isDigit(c) || (c === 0x2e && isDigit(code(1)))) return { kind: 'number', length: numberLength(code) };
  if (isAlpha(c) || c === 0x5f || c >= 0x80) {
    while (isIdChar(code(i))) i++;
    return { kind: 'word', length: i };
  }
  // Operators: the longest SQLite reads as one token, so `||`, `<=`, `->>` and the like stay together.
  const two = sql.slice(start, start + 2);
  if (sql.slice(start, start + 3) === '->>') return { kind: 'other', length: 3 };
  if (['||', '<=', '>=', '<>', '<<', '>>', '==', '!=', '->'].includes(two))
    return { kind: 'other', length: 2 };
  if ('()+*%,&~|<>=.'.includes(String.fromCharCode(c))) return { kind: 'other', length: 1 };
  // `!` alone, `\`, control characters and the rest are not SQL.
  return { kind: 'illegal', length: 1 };
}

/**
 * A number's length, glued identifier characters included. SQLite reads `_` as a digit separator anywhere in a run
 * of digits (3.46+: `1_.5` is one token), and a number followed by identifier characters is one illegal token.
 */
function numberLength(code: (offset: number) => number): number {
  let i = 0;
  const digits = (isDigitAt: (value: number) => boolean) => {
    while (isDigitAt(code(i)) || code(i) === 0x5f) i++;
  };
  if (code(0) === 0x30 && (code(1) === 0x78 || code(1) === 0x58) && isHexDigit(code(2))) {
    i = 2;
    digits(isHexDigit);
  } else {
    digits(isDigit);
    if (code(i) === 0x2e) {
      i++;
      digits(isDigit);
    }
    if (
      (code(i) === 0x65 || code(i) === 0x45) &&
      (isDigit(code(i + 1)) || ((code(i + 1) === 0x2b || code(i + 1) === 0x2d) && isDigit(code(i + 2))))
    ) {
      i += 2;
      digits(isDigit);
    }
  }
  while (isIdChar(code(i))) i++;
  return i;
}
