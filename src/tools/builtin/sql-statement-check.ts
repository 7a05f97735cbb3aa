import { ToolInputError } from '../../core/errors.ts';

/**
 * The first wall of the sqlQuery tool, before SQLite sees anything: a query must be one SELECT (or WITH ... SELECT)
 * statement, with no comments, no second statement and none of the words that only writing or reconfiguring
 * statements use. It reads the text the way SQLite's tokenizer does, so quoted strings and identifiers are skipped
 * (`WHERE note = 'drop; -- me'` is fine). Returns the statement without a trailing `;`.
 */
export function checkReadOnlyStatement(sql: string, maxLength: number): string {
  if (sql.length > maxLength)
    throw new ToolInputError(
      `The query is ${sql.length} characters long; at most ${maxLength} are accepted.`,
    );
  if (sql.includes('\u0000')) throw refusal('it contains a NUL character');
  const words: string[] = [];
  let end = sql.length;
  // A single trailing semicolon (and whitespace) is allowed and dropped.
  const trailing = /;\s*$/.exec(sql);
  if (trailing !== null) end = trailing.index;
  let at = 0;
  while (at < end) {
    const char = sql[at] as string;
    if (char === "'" || char === '"' || char === '`') {
      at = skipQuoted(sql, at, end, char);
      continue;
    }
    if (char === '[') {
      const close = sql.indexOf(']', at + 1);
      if (close === -1 || close >= end) throw refusal('a "[" identifier is never closed');
      at = close + 1;
      continue;
    }
    if (char === '-' && sql[at + 1] === '-') throw refusal('comments (--) are not allowed');
    if (char === '/' && sql[at + 1] === '*') throw refusal('comments (/* */) are not allowed');
    if (char === ';') throw refusal('only one statement is allowed (found ";" before the end)');
    if (/[A-Za-z_]/.test(char)) {
      const word = /[A-Za-z0-9_$]+/y;
      word.lastIndex = at;
      const match = word.exec(sql);
      const text = (match?.[0] ?? char).toUpperCase();
      words.push(text);
      at += match?.[0].length ?? 1;
      continue;
    }
    at++;
  }
  const first = words[0];
  if (first !== 'SELECT' && first !== 'WITH')
    throw refusal(
      first === undefined
        ? 'it is empty'
        : `it starts with ${first}; only SELECT and WITH ... SELECT are allowed`,
    );
  const forbidden = words.filter((word) => forbiddenWords.has(word));
  if (forbidden.length > 0)
    throw refusal(`${[...new Set(forbidden)].join(', ')} cannot appear in a read-only query`);
  return sql.slice(0, end);
}

/**
 * Words that only appear in statements that write, change the schema or the connection, or load code. A column or
 * table with such a name can still be used quoted ("update"). REPLACE is not here: it is also a string function.
 */
const forbiddenWords: ReadonlySet<string> = new Set([
  'INSERT',
  'UPDATE',
  'DELETE',
  'UPSERT',
  'CREATE',
  'DROP',
  'ALTER',
  'ATTACH',
  'DETACH',
  'PRAGMA',
  'VACUUM',
  'REINDEX',
  'ANALYZE',
  'BEGIN',
  'COMMIT',
  'ROLLBACK',
  'SAVEPOINT',
  'RELEASE',
  'LOAD_EXTENSION',
]);

function skipQuoted(sql: string, start: number, end: number, quote: string): number {
  let at = start + 1;
  while (at < end) {
    if (sql[at] === quote) {
      if (sql[at + 1] === quote) {
        at += 2;
        continue;
      }
      return at + 1;
    }
    at++;
  }
  throw refusal(`a ${quote} quote is never closed`);
}

function refusal(reason: string): ToolInputError {
  return new ToolInputError(`Query refused: ${reason}. Send one read-only SELECT statement.`);
}
