import { ToolInputError } from '../../core/errors.ts';
import { type SqlToken, sqlTokens } from './sql-tokens.ts';

/**
 * The first wall of the sqlQuery tool, before SQLite sees anything: a query must be one SELECT (or WITH ... SELECT)
 * statement, with no comments, no parameters, no second statement and none of the words that only writing or
 * reconfiguring statements use. It splits the text with SQLite's own token rules (sqlTokens), so what it checks is
 * what SQLite will run: quoted strings, blobs and identifiers are skipped (`WHERE note = 'drop; -- me'` is fine),
 * and a parameter such as `$a(x')` is one token, as SQLite reads it, not the start of a string. Returns the
 * statement without a trailing `;`.
 */
export function checkReadOnlyStatement(sql: string, maxLength: number): string {
  if (sql.length > maxLength)
    throw new ToolInputError(
      `The query is ${sql.length} characters long; at most ${maxLength} are accepted.`,
    );
  if (sql.includes('\u0000')) throw refusal('it contains a NUL character');
  const tokens = sqlTokens(sql);
  // A single trailing semicolon (and white space) is allowed and dropped.
  let count = tokens.length;
  while (count > 0 && tokens[count - 1]?.kind === 'space') count--;
  let end = sql.length;
  if (tokens[count - 1]?.kind === 'semicolon') {
    count--;
    end = (tokens[count] as SqlToken).start;
  }
  const words: string[] = [];
  let first: SqlToken | undefined;
  for (const token of tokens.slice(0, count)) {
    const text = sql.slice(token.start, token.end);
    switch (token.kind) {
      case 'space':
        continue;
      case 'comment':
        throw refusal(`comments (${text.startsWith('--') ? '--' : '/* */'}) are not allowed`);
      case 'semicolon':
        throw refusal('only one statement is allowed (found ";" before the end)');
      case 'parameter':
        throw refusal(`parameters such as ${short(text)} are not allowed (the tool binds none)`);
      case 'illegal':
        throw refusal(
          `SQLite cannot read ${short(text)} (an unterminated quote or a character SQL does not use)`,
        );
      case 'word':
        words.push(text.toUpperCase());
        break;
      default:
        break;
    }
    first ??= token;
  }
  const start = first === undefined ? undefined : sql.slice(first.start, first.end).toUpperCase();
  if (first?.kind !== 'word' || (start !== 'SELECT' && start !== 'WITH'))
    throw refusal(
      first === undefined
        ? 'it is empty'
        : `it starts with ${short(start ?? '')}; only SELECT and WITH ... SELECT are allowed`,
    );
  const forbidden = words.filter((word) => forbiddenWords.has(word));
  if (forbidden.length > 0)
    throw refusal(`${[...new Set(forbidden)].join(', ')} cannot appear in a read-only query`);
  return sql.slice(0, end);
}

function short(text: string): string {
  return JSON.stringify(text.length > 24 ? `${text.slice(0, 24)}…` : text);
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

function refusal(reason: string): ToolInputError {
  return new ToolInputError(`Query refused: ${reason}. Send one read-only SELECT statement.`);
}
