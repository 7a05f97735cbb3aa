import type { AuditHead, AuditRecord } from './audit-record.ts';

/**
 * Where an audit log's records go. `append` gets batches in order and must keep them in that order; a returned
 * promise holds the next batch back until it settles. `head` tells a new log where an existing chain stands, so it
 * continues it after a restart.
 */
export interface AuditSink {
  head(): AuditHead | undefined;
  append(records: readonly AuditRecord[]): void | Promise<void>;
  /** Releases what the sink holds open (a file handle); called by the log's close(). */
  close?(): void | Promise<void>;
}
