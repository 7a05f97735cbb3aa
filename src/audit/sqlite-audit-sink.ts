import type { SqliteSessionStore } from '../persistence/sqlite-store.ts';
import type { AuditHead } from './audit-record.ts';
import type { AuditSink } from './audit-sink.ts';

/**
 * An audit sink in a SQLite session store's own file (its `audit_log` table): each batch is one transaction, on
 * disk when it returns, and a store reopened later continues the chain. Read the records back with
 * `store.readAudit()` and check them with verifyAuditLog. The store stays the caller's: closing the log does not
 * close it.
 */
export function sqliteAuditSink(store: SqliteSessionStore): AuditSink {
  return {
    head() {
      const last = store.lastAudit() as Partial<AuditHead> | undefined;
      return last && typeof last.seq === 'number' && typeof last.hash === 'string'
        ? { seq: last.seq, hash: last.hash }
        : undefined;
    },
    append(records) {
      store.appendAudit(records);
    },
  };
}
