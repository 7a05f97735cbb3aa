import type { AuditRecord } from './audit-record.ts';
import type { AuditSink } from './audit-sink.ts';

/** An audit sink in memory: for tests and short-lived processes. `records` is every record appended, in order. */
export interface MemoryAuditSink extends AuditSink {
  readonly records: readonly AuditRecord[];
}

export function memoryAuditSink(): MemoryAuditSink {
  const records: AuditRecord[] = [];
  return {
    records,
    head() {
      const last = records.at(-1);
      return last ? { seq: last.seq, hash: last.hash } : undefined;
    },
    append(batch) {
      records.push(...batch);
    },
  };
}
