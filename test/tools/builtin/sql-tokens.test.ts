import { DatabaseSync, constants as sqlite } from 'node:sqlite';
import fc from 'fast-check';
import { ToolInputError } from 'troupe';
import { describe, expect, it } from 'vitest';
import { checkReadOnlyStatement } from '../../../src/tools/builtin/sql-statement-check.ts';
import { sqlTokens } from '../../../src/tools/builtin/sql-tokens.ts';

/**
 * Runs `sql` (every statement in it, as `exec` does) on a scratch database with a table `t`, and returns what
 * SQLite was asked to do besides reading: the authorizer records and denies it.
 */
function whatSqliteWouldDo(sql: string): string[] {
  const db = new DatabaseSync(':memory:');
  db.exec('CREATE TABLE t (x)');
  const done: string[] = [];
  db.setAuthorizer((action) => {
    if (
      action === sqlite.SQLITE_SELECT ||
      action === sqlite.SQLITE_READ ||
      action === sqlite.SQLITE_FUNCTION ||
      action === sqlite.SQLITE_RECURSIVE
    )
      return sqlite.SQLITE_OK;
    done.push(String(action));
    return sqlite.SQLITE_DENY;
  });
  try {
    db.exec(sql);
  } catch {
    // A syntax error or a denied action: what was asked is in `done`.
  } finally {
    db.close();
  }
  return done;
}

const tokenTexts = (sql: string) =>
  sqlTokens(sql).map((token) => [token.kind, sql.slice(token.start, token.end)]);

describe("the sqlQuery tool's first wall reads SQL as SQLite does", () => {
  it('parameters are one token each, with their (...) and :: forms', () => {
    expect(tokenTexts("$a(x'), 1")).toEqual([
      ['parameter', "$a(x')"],
      ['other', ','],
      ['space', ' '],
      ['number', '1'],
    ]);
    expect(tokenTexts(':a::b::c ?12 @n #m ?')).toEqual([
      ['parameter', ':a::b::c'],
      ['space', ' '],
      ['parameter', '?12'],
      ['space', ' '],
      ['parameter', '@n'],
      ['space', ' '],
      ['parameter', '#m'],
      ['space', ' '],
      ['parameter', '?'],
    ]);
    // A space ends the (...) part before its ")": SQLite refuses the token.
    expect(tokenTexts('@a(b c)')[0]).toEqual(['illegal', '@a(b']);
  });

  it('blobs, strings and the three identifier quotes', () => {
    expect(tokenTexts(`x'0A' 'it''s' "a""b" \`c\` [d"e]`).filter(([kind]) => kind !== 'space')).toEqual([
      ['blob', "x'0A'"],
      ['string', "'it''s'"],
      ['quoted-identifier', '"a""b"'],
      ['quoted-identifier', '`c`'],
      ['quoted-identifier', '[d"e]'],
    ]);
    expect(tokenTexts("x'0'")).toEqual([['illegal', "x'0'"]]);
    expect(tokenTexts('xylophone')).toEqual([['word', 'xylophone']]);
  });

  it('numbers, digit separators, white space and byte-order marks', () => {
    expect(tokenTexts('1_.5')).toEqual([['number', '1_.5']]);
    expect(tokenTexts('0x1F 1e+5x')).toEqual([
      ['number', '0x1F'],
      ['space', ' '],
      ['number', '1e+5x'],
    ]);
    // A vertical tab is white space only after another space; a byte-order mark only where a token starts.
    expect(tokenTexts(' \v1')).toEqual([
      ['space', ' \v'],
      ['number', '1'],
    ]);
    expect(tokenTexts('\v')).toEqual([['illegal', '\v']]);
    expect(tokenTexts('\ufeffa\ufeff')).toEqual([
      ['space', '\ufeff'],
      ['word', 'a\ufeff'],
    ]);
  });

  it.each([
    "SELECT $a(x'), 1 ; DROP TABLE t; SELECT '",
    "SELECT @a(x'), 1 ; DROP TABLE t; SELECT '",
    "SELECT :a(x'), 1 ; DROP TABLE t; SELECT '",
    "SELECT #a(x'), 1 ; DROP TABLE t; SELECT '",
    "SELECT $a::b(x'), 1 ; DROP TABLE t; SELECT '",
    'SELECT $a("), 1 ; DROP TABLE t; SELECT "',
    'SELECT $a(`), 1 ; DROP TABLE t; SELECT `',
    'SELECT $a([), 1 ; DROP TABLE t; SELECT ]',
  ])('%s: SQLite runs the DROP, and the wall refuses it', (attack) => {
    expect(whatSqliteWouldDo(attack)).not.toEqual([]);
    expect(() => checkReadOnlyStatement(attack, 20_000)).toThrow(ToolInputError);
  });

  it('reads that use every token kind pass', () => {
    for (const read of [
      `SELECT x'0A', 'it''s; DROP', "x", \`x\`, [x], 1_000, .5e3, -1 FROM t;`,
      "WITH c(n) AS (SELECT 1) SELECT n || 'x', n -> '$.a', n ->> '$.a' FROM c",
    ]) {
      expect(() => checkReadOnlyStatement(read, 20_000)).not.toThrow();
      expect(whatSqliteWouldDo(read)).toEqual([]);
    }
  });

  it('any text the wall lets through makes SQLite do nothing but read', () => {
    // The pieces that decide where tokens end: parameters with a (...) part holding a quote, and quotes.
    const parameter = fc
      .tuple(
        fc.constantFrom('$a', '@b', ':c', '#d', '$e::f', '?1'),
        fc.constantFrom('(', ''),
        fc.constantFrom("x'", "'", '"', '`', '[', ']', ''),
        fc.constantFrom(')', '', ' )'),
      )
      .map((parts) => parts.join(''));
    const quote = fc.constantFrom("'", '"', '`', '[', ']', "x'", "X'0A'", "''");
    const filler = fc.constantFrom(
      ' ',
      '\n',
      '\v',
      '\ufeff',
      '--',
      '/*',
      '*/',
      'x',
      '(',
      ')',
      '1',
      '1_',
      '.5',
      'e',
      ',',
      '||',
      ' FROM t',
      '::',
      '\\',
    );
    const piece = fc.oneof(parameter, quote, filler);
    const pieces = fc.array(piece, { maxLength: 5 });
    // Either a second statement that must stay inside a string or identifier, or any mix of the pieces.
    const text = fc.oneof(
      fc
        .tuple(pieces, fc.constantFrom('; DROP TABLE t', ';\nDELETE FROM t'), pieces)
        .map(([before, write, after]) => `SELECT ${before.join('')}${write}${after.join('')}`),
      fc
        .array(fc.oneof(piece, fc.constant(';'), fc.constant(' DROP TABLE t')), { maxLength: 10 })
        .map((parts) => `SELECT ${parts.join('')}`),
    );
    let accepted = 0;
    fc.assert(
      fc.property(text, (sql) => {
        let statement: string;
        try {
          statement = checkReadOnlyStatement(sql, 20_000);
        } catch (error) {
          expect(error).toBeInstanceOf(ToolInputError);
          return;
        }
        accepted++;
        expect(whatSqliteWouldDo(statement)).toEqual([]);
      }),
      { numRuns: 20_000, seed: 19 },
    );
    // The generator reaches both sides of the wall.
    expect(accepted).toBeGreaterThan(100);
  });
});
