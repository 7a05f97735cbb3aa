import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import type * as Sqlite from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { ConfigError, ToolInputError } from '../../core/errors.ts';
import { checkOptionObject } from '../../core/options.ts';
import { zod } from '../../core/zod.ts';
import { loadNodeSqlite } from '../../persistence/node-sqlite.ts';
import { type Tool, tool } from '../tool.ts';
import { SqlQueryRunner } from './sql-query-runner.ts';
import type { QueryCell } from './sql-readonly-query.ts';
import { describeSqlSchema, readSqlSchema, type SqlTableSchema } from './sql-schema.ts';
import { checkReadOnlyStatement } from './sql-statement-check.ts';

export interface SqlQueryOptions {
  /** Path of the SQLite database file. It is opened read-only; it must exist. */
  database: string;
  /** Most rows returned to the model; the answer says when there were more. Default 100. */
  maxRows?: number | undefined;
  /** A query still running after this long is stopped (its process killed) and reported as an error. Default 5000. */
  timeoutMs?: number | undefined;
  /** The tool's name. Default `sql_query`. */
  name?: string | undefined;
  /** Most characters of the schema put in the tool's description. Default 6000. */
  maxSchemaChars?: number | undefined;
  /** Longest text kept in one cell of the answer. Default 2000. */
  maxCellChars?: number | undefined;
  /** Longest accepted query, in characters. Default 20,000. */
  maxQueryLength?: number | undefined;
}

/** What the model gets back for a query. */
export interface SqlQueryResult {
  columns: string[];
  /** One array of cells per row, in `columns` order. Integers beyond 2^53 and blobs come as strings. */
  rows: QueryCell[][];
  rowCount: number;
  /** Present when the query had more than `maxRows` rows: only the first ones are here. */
  truncated?: string;
}

/**
 * A SqlQuery tool also carries the schema it describes to the model, and owns the process its queries run in:
 * `close()` (or `await using`) ends it. Never closing it is harmless: an idle process does not keep Node running,
 * ends with its parent, and is ended when the tool is garbage-collected.
 */
export interface SqlQueryTool extends Tool<{ query: string }, SqlQueryResult> {
  readonly schema: readonly SqlTableSchema[];
  /** The id of the process queries run in, while there is one (it starts with the first query). */
  readonly processId: number | undefined;
  /** Ends the query process; calls still waiting or running fail, and later calls are refused. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

const sqlQueryOptionKeys: readonly string[] = [
  'database',
  'maxRows',
  'timeoutMs',
  'name',
  'maxSchemaChars',
  'maxCellChars',
  'maxQueryLength',
];

/** Memory the query process may take past its start-up size: a sort or a recursive CTE cannot take the machine's. */
const memoryLimitBytes = 256 * 1024 * 1024;
/** Largest string or blob a query may make or read: past it, the query fails with a message that says so. */
const maxValueBytes = 16 * 1024 * 1024;

/**
 * A tool that answers one read-only SQL query on a SQLite file (node:sqlite; Node.js 24.10 or newer, whose
 * node:sqlite has the authorizer this tool relies on). The schema (tables, columns, types) is read when the tool is made and put in
 * its description, so the model can write its first query without exploring.
 *
 * Four walls keep the database unchanged: the query must be a single SELECT or WITH ... SELECT with no comments and
 * no writing or configuring keyword; the file is opened read-only (extensions off, ATTACH limited to none);
 * SQLite's authorizer allows only reads and function calls (not `load_extension`); and the compiled program is
 * checked for writes the way `sqlite3_stmt_readonly` does. Queries run one at a time in a long-lived child process
 * (started on the first query) that is killed after `timeoutMs` (or when the call is aborted), so a runaway
 * recursive CTE ends; the next query starts a fresh process. The process's memory is bounded too: 256 MiB past its
 * start-up size for whatever a query does (a cap on its address space on Linux, where an allocation past it fails
 * and the query reports "out of memory"; a watchdog that kills the process elsewhere), and 16 MiB for any one
 * string or blob. A refused, failing, timed-out or memory-bound query comes back to the model as an error result
 * saying why.
 */
export function sqlQuery(options: SqlQueryOptions): SqlQueryTool {
  checkOptionObject(options as unknown, sqlQueryOptionKeys, 'sqlQuery(): options');
  if (typeof options.database !== 'string' || options.database === '')
    throw new ConfigError('sqlQuery(): database must be the path of a SQLite file.');
  const database = resolve(options.database);
  try {
    if (!statSync(database).isFile()) throw new Error('not a file');
  } catch (error) {
    throw new ConfigError(
      `sqlQuery(): the database ${JSON.stringify(options.database)} is not an existing file.`,
      {
        cause: error,
      },
    );
  }
  const maxRows = positiveInteger(options.maxRows, 100, 'maxRows');
  const timeoutMs = positiveInteger(options.timeoutMs, 5000, 'timeoutMs');
  const maxCellChars = positiveInteger(options.maxCellChars, 2000, 'maxCellChars');
  const maxQueryLength = positiveInteger(options.maxQueryLength, 20_000, 'maxQueryLength');
  const maxSchemaChars = positiveInteger(options.maxSchemaChars, 6000, 'maxSchemaChars');
  let schema: SqlTableSchema[];
  try {
    schema = readSqlSchema(sqliteModule(), database);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(
      `sqlQuery(): ${JSON.stringify(options.database)} could not be read as a SQLite database: ${(error as Error).message}`,
      { cause: error },
    );
  }
  const runner = new SqlQueryRunner(childEntry, timeoutMs, memoryLimitBytes);
  const z = zod();
  const input = z.object({
    query: z.string().describe('One SQLite SELECT (or WITH ... SELECT) statement, without comments.'),
  });
  const created = tool<typeof input, SqlQueryResult>({
    name: options.name ?? 'sql_query',
    description: `Runs one read-only SQLite query (SELECT or WITH ... SELECT; no comments, parameters, writes or PRAGMA) and returns the columns and at most ${maxRows} rows as JSON. Add LIMIT, WHERE or aggregates to stay under the cap. Tables:\n${describeSqlSchema(schema, maxSchemaChars)}`,
    input,
    maxRetries: 0,
    execute: async ({ query }, context) => {
      const sql = checkReadOnlyStatement(query, maxQueryLength);
      const outcome = await runner.run(
        { database, sql, maxRows, maxCellChars, maxValueBytes },
        context?.signal,
      );
      if (!outcome.ok) throw new ToolInputError(outcome.message);
      const result: SqlQueryResult = {
        columns: outcome.columns,
        rows: outcome.rows,
        rowCount: outcome.rows.length,
      };
      if (outcome.truncated)
        result.truncated = `The query returned more than ${maxRows} rows; only the first ${maxRows} are shown. Narrow it (WHERE, LIMIT, GROUP BY) to see the rest.`;
      return result;
    },
  });
  const close = (): Promise<void> => runner.close();
  const sqlTool: SqlQueryTool = Object.defineProperty(
    Object.assign(created, { schema: Object.freeze(schema), close, [Symbol.asyncDispose]: close }),
    'processId',
    { get: () => runner.processId, enumerable: true },
  ) as SqlQueryTool;
  // A tool dropped without close() takes its idle process with it.
  abandonedRunners.register(sqlTool, runner);
  return sqlTool;
}

const abandonedRunners = new FinalizationRegistry<SqlQueryRunner>((runner) => {
  runner.closeWhenIdle();
});

/** The child process entry, beside this module (TypeScript from the sources, JavaScript once built). */
const childEntry = fileURLToPath(
  new URL(
    import.meta.url.endsWith('.ts') ? './sql-query-process.ts' : './sql-query-process.js',
    import.meta.url,
  ),
);

function sqliteModule(): typeof Sqlite {
  const module = loadNodeSqlite();
  // The authorizer (24.10) is one of the walls; array rows (24.4) and the defensive flag come with it.
  if (module === undefined || typeof module.DatabaseSync.prototype.setAuthorizer !== 'function')
    throw new ConfigError(
      `sqlQuery() needs Node.js 24.10 or newer (node:sqlite with its authorizer); this is Node.js ${process.versions.node}.`,
    );
  return module;
}

function positiveInteger(value: unknown, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0)
    throw new ConfigError(`sqlQuery(): ${name} must be a positive integer.`);
  return value;
}
