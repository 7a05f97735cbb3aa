import type * as Sqlite from 'node:sqlite';

/** A table or view of a database, as the sqlQuery tool describes it to the model. */
export interface SqlTableSchema {
  name: string;
  kind: 'table' | 'view';
  columns: { name: string; type: string; primaryKey: boolean; notNull: boolean }[];
}

/** The tables and views of a SQLite file (not SQLite's own), read through a read-only connection. */
export function readSqlSchema(sqlite: typeof Sqlite, database: string): SqlTableSchema[] {
  const db = new sqlite.DatabaseSync(database, { readOnly: true, allowExtension: false });
  try {
    const tables = db
      .prepare(
        "SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
      )
      .all() as { name: string; type: 'table' | 'view' }[];
    const columnsOf = db.prepare('SELECT name, type, pk, "notnull" AS not_null FROM pragma_table_info(?)');
    return tables.map(({ name, type }) => ({
      name,
      kind: type,
      columns: (columnsOf.all(name) as { name: string; type: string; pk: number; not_null: number }[]).map(
        (column) => ({
          name: column.name,
          type: column.type,
          primaryKey: column.pk > 0,
          notNull: column.not_null !== 0,
        }),
      ),
    }));
  } finally {
    db.close();
  }
}

/**
 * One line per table, `orders(id INTEGER PRIMARY KEY, customer TEXT NOT NULL, total REAL)`, cut at `maxChars` with
 * a count of what was left out (the model can read the rest from `sqlite_schema`).
 */
export function describeSqlSchema(tables: readonly SqlTableSchema[], maxChars: number): string {
  const lines: string[] = [];
  let used = 0;
  for (const [index, table] of tables.entries()) {
    const columns = table.columns
      .map((column) =>
        [
          quoteName(column.name),
          column.type,
          column.primaryKey ? 'PRIMARY KEY' : '',
          column.notNull ? 'NOT NULL' : '',
        ]
          .filter((part) => part !== '')
          .join(' '),
      )
      .join(', ');
    const line = `${table.kind === 'view' ? 'view ' : ''}${quoteName(table.name)}(${columns})`;
    if (used + line.length > maxChars) {
      lines.push(
        `... and ${tables.length - index} more (SELECT name, sql FROM sqlite_schema lists them all)`,
      );
      break;
    }
    lines.push(line);
    used += line.length + 1;
  }
  return lines.length === 0 ? '(no tables)' : lines.join('\n');
}

function quoteName(name: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : `"${name.replaceAll('"', '""')}"`;
}
