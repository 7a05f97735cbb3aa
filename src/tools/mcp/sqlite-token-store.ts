import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import type * as Sqlite from 'node:sqlite';
import { ConfigError } from '../../core/errors.ts';
import { loadNodeSqlite } from '../../persistence/node-sqlite.ts';
import { isSqliteBusy, retryWhileBusy } from '../../persistence/sqlite-busy.ts';
import { StoreIoError } from '../../persistence/store-errors.ts';
import type { McpCredentialKey, McpStoredCredentials, McpTokenStore } from './token-store.ts';

/** A token store in a SQLite file: users stay signed in to their MCP servers across restarts. */
export interface SqliteTokenStore extends McpTokenStore {
  readonly path: string;
  /** Ends the connection to the file. */
  close(): void;
}

/**
 * Keeps MCP OAuth tokens in a SQLite file of their own, on Node's built-in `node:sqlite`: not in the session store,
 * whose events and checkpoints are read by the inspector and exports. The file is created readable by its owner
 * only (mode 0600); several processes may share it (WAL, a 5 s busy timeout). A file that cannot be opened (in use
 * past the busy timeout, unreadable) throws a `StoreIoError`.
 */
export function sqliteTokenStore(path: string): SqliteTokenStore {
  if (typeof path !== 'string' || path === '')
    throw new ConfigError('sqliteTokenStore: the path must be a non-empty string (a file, or ":memory:").');
  const sqlite = loadNodeSqlite();
  if (sqlite === undefined)
    throw new ConfigError('sqliteTokenStore needs node:sqlite, built into Node.js 22.13 and newer.');
  if (path !== ':memory:') {
    mkdirSync(dirname(path), { recursive: true });
    // Created with owner-only permissions before SQLite opens it: tokens are secrets.
    closeSync(openSync(path, 'a', 0o600));
    chmodSync(path, 0o600);
  }
  const busyTimeoutMs = 5_000;
  let db: Sqlite.DatabaseSync;
  try {
    // Several processes may open a new file at once: SQLite refuses some of those steps at once, not waiting.
    db = retryWhileBusy(busyTimeoutMs, () => {
      const opened = new sqlite.DatabaseSync(path);
      try {
        opened.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
        if (path !== ':memory:') opened.exec('PRAGMA journal_mode = WAL');
        opened.exec(
          'CREATE TABLE IF NOT EXISTS mcp_credentials (server TEXT NOT NULL, user TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (server, user))',
        );
        return opened;
      } catch (error) {
        opened.close();
        throw error;
      }
    });
  } catch (error) {
    throw new StoreIoError(
      path,
      `could not be opened: ${error instanceof Error ? error.message : String(error)}`,
      {
        busy: isSqliteBusy(error),
        cause: error,
      },
    );
  }
  const select = db.prepare('SELECT value FROM mcp_credentials WHERE server = ? AND user = ?');
  const upsert = db.prepare(
    'INSERT INTO mcp_credentials (server, user, value) VALUES (?, ?, ?) ON CONFLICT (server, user) DO UPDATE SET value = excluded.value',
  );
  const remove = db.prepare('DELETE FROM mcp_credentials WHERE server = ? AND user = ?');
  return {
    path,
    load: (key: McpCredentialKey) => {
      const row = select.get(key.server, key.user) as { value: string } | undefined;
      return row === undefined ? undefined : (JSON.parse(row.value) as McpStoredCredentials);
    },
    save: (key: McpCredentialKey, credentials: McpStoredCredentials) => {
      upsert.run(key.server, key.user, JSON.stringify(credentials));
    },
    delete: (key: McpCredentialKey) => {
      remove.run(key.server, key.user);
    },
    close: () => db.close(),
  };
}
