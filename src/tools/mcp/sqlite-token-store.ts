import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError } from '../../core/errors.ts';
import { loadNodeSqlite } from '../../persistence/node-sqlite.ts';
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
 * only (mode 0600); several processes may share it (WAL, a 5 s busy timeout).
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
  const db = new sqlite.DatabaseSync(path);
  db.exec('PRAGMA busy_timeout = 5000');
  if (path !== ':memory:') db.exec('PRAGMA journal_mode = WAL');
  db.exec(
    'CREATE TABLE IF NOT EXISTS mcp_credentials (server TEXT NOT NULL, user TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (server, user))',
  );
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
