import type * as Sqlite from 'node:sqlite';
import { loadNodeSqlite } from '../../persistence/node-sqlite.ts';

/**
 * Runs one query on a SQLite file behind the walls that SQLite itself enforces: the file is opened read-only, with
 * extension loading off, ATTACH limited to no databases and the defensive flag on; an authorizer lets the statement
 * read tables and call functions and denies everything else (writes, PRAGMA, ATTACH, transactions, schema changes,
 * `load_extension`); and the compiled program is checked the way `sqlite3_stmt_readonly` does (no write transaction,
 * no table opened for writing). One value (a string or blob) is bounded by SQLITE_LIMIT_LENGTH. It is synchronous
 * and can run forever, or take all the memory it may, on a runaway query: the sqlQuery tool runs it in a child
 * process it can kill and whose memory it bounds.
 */

export interface ReadOnlyQueryRequest {
  database: string;
  sql: string;
  maxRows: number;
  /** Longest text kept in one cell; longer text is cut and says so. */
  maxCellChars: number;
  /** Largest string or blob the query may make or read (SQLITE_LIMIT_LENGTH), in bytes. */
  maxValueBytes: number;
}

/** A JSON-safe cell: integers beyond 2^53 and blobs become strings. */
export type QueryCell = string | number | null;

export type ReadOnlyQueryOutcome =
  | { ok: true; columns: string[]; rows: QueryCell[][]; truncated: boolean }
  | { ok: false; message: string };

/** Functions a read-only query has no business calling, whatever the build of SQLite offers. */
const deniedFunctions: ReadonlySet<string> = new Set([
  'load_extension',
  'fts3_tokenizer',
  'readfile',
  'writefile',
  'edit',
]);

/** Opcodes of a program that writes: what `sqlite3_stmt_readonly` looks for, plus schema and vacuum work. */
const writingOpcodes: ReadonlySet<string> = new Set([
  'OpenWrite',
  'VUpdate',
  'Vacuum',
  'IncrVacuum',
  'ParseSchema',
  'CreateBtree',
  'Destroy',
  'Clear',
  'DropTable',
  'DropIndex',
  'DropTrigger',
  'JournalMode',
]);

function sqliteModule(): typeof Sqlite {
  const module = loadNodeSqlite();
  if (module === undefined)
    throw new Error(`node:sqlite is not available in Node.js ${process.versions.node}.`);
  return module;
}

export function runReadOnlyQuery(request: ReadOnlyQueryRequest): ReadOnlyQueryOutcome {
  const sqlite = sqliteModule();
  let db: Sqlite.DatabaseSync;
  try {
    db = new sqlite.DatabaseSync(request.database, {
      readOnly: true,
      allowExtension: false,
      defensive: true,
      limits: { attach: 0, length: request.maxValueBytes },
    });
  } catch (error) {
    return { ok: false, message: `The database could not be opened: ${messageOf(error)}` };
  }
  try {
    const denied: string[] = [];
    const { constants } = sqlite;
    db.setAuthorizer((action, first, second) => {
      if (
        action === constants.SQLITE_SELECT ||
        action === constants.SQLITE_READ ||
        action === constants.SQLITE_RECURSIVE
      )
        return constants.SQLITE_OK;
      if (action === constants.SQLITE_FUNCTION && !deniedFunctions.has((second ?? '').toLowerCase()))
        return constants.SQLITE_OK;
      denied.push(describeAction(constants, action, first, second));
      return constants.SQLITE_DENY;
    });
    let statement: Sqlite.StatementSync;
    try {
      statement = db.prepare(request.sql);
    } catch (error) {
      if (denied.length > 0)
        return { ok: false, message: `Only reading is allowed; refused: ${denied.join(', ')}.` };
      return {
        ok: false,
        message: memoryMessage(error, request) ?? `SQLite rejected the query: ${messageOf(error)}`,
      };
    }
    const writes = db
      .prepare(`EXPLAIN ${request.sql}`)
      .all()
      .filter(
        (step) => writingOpcodes.has(String(step.opcode)) || (step.opcode === 'Transaction' && step.p2 !== 0),
      );
    if (writes.length > 0)
      return {
        ok: false,
        message: `Only reading is allowed; the query would write (${[...new Set(writes.map((step) => String(step.opcode)))].join(', ')}).`,
      };
    statement.setReadBigInts(true);
    statement.setReturnArrays(true);
    const columns = statement.columns().map((column) => column.name);
    const rows: QueryCell[][] = [];
    let truncated = false;
    for (const row of statement.iterate() as Iterable<unknown>) {
      if (rows.length >= request.maxRows) {
        truncated = true;
        break;
      }
      rows.push((row as Sqlite.SQLOutputValue[]).map((value) => toCell(value, request.maxCellChars)));
    }
    return { ok: true, columns, rows, truncated };
  } catch (error) {
    return { ok: false, message: memoryMessage(error, request) ?? `The query failed: ${messageOf(error)}` };
  } finally {
    db.close();
  }
}

function toCell(value: Sqlite.SQLOutputValue, maxChars: number): QueryCell {
  if (value === null || typeof value === 'number') return value;
  if (typeof value === 'bigint')
    return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
      ? Number(value)
      : value.toString();
  if (typeof value === 'string')
    return value.length > maxChars
      ? `${value.slice(0, maxChars)}… [cut: ${value.length} characters in all]`
      : value;
  const bytes = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  const shown = Math.min(bytes.length, Math.floor(maxChars / 2));
  return `x'${bytes.subarray(0, shown).toString('hex').toUpperCase()}'${shown < bytes.length ? `… [blob of ${bytes.length} bytes]` : ''}`;
}

function describeAction(
  constants: typeof Sqlite.constants,
  action: number,
  first: string | null,
  second: string | null,
): string {
  const name = Object.entries(constants).find(
    ([key, code]) => code === action && !key.startsWith('SQLITE_CHANGESET'),
  )?.[0];
  const what = (name ?? `action ${action}`).replace(/^SQLITE_/, '');
  const detail = [first, second].filter((part) => part !== null && part !== '').join(' ');
  return detail === '' ? what : `${what} (${detail})`;
}

/** What to tell the model when SQLite ran out of the memory a query may use. */
function memoryMessage(error: unknown, request: ReadOnlyQueryRequest): string | undefined {
  const message = messageOf(error);
  if (/string or blob too big/i.test(message))
    return `The query would make a value larger than ${request.maxValueBytes} bytes, the most a query may (SQLite: ${message}). Select shorter values: substr(), length() or aggregates.`;
  if (/out of memory/i.test(message))
    return `The query needs more memory than a query may use (SQLite: ${message}). Make it lighter: filter earlier, add LIMIT, sort or group fewer rows.`;
  return undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
