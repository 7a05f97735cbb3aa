import { canonicalJson, type JsonValue } from '../core/json.ts';

/** The kinds of security-relevant things the audit log records. */
export type AuditRecordType =
  | 'guardrail'
  | 'permission'
  | 'approval_requested'
  | 'approval_decided'
  | 'budget_denied'
  | 'redaction'
  | 'breaker'
  | 'config_error';

/**
 * One audit record. Records form a hash chain: `hash` is the SHA-256 of the record's canonical JSON (keys sorted,
 * `hash` left out, `prevHash` included), and `prevHash` is the previous record's hash, so editing, deleting,
 * inserting or reordering records breaks the chain (see verifyAuditLog).
 */
export interface AuditRecord {
  /** Position in the log, from 1, without gaps. */
  readonly seq: number;
  /** Milliseconds since the epoch. */
  readonly time: number;
  readonly type: AuditRecordType;
  /** The session (or run) concerned, or null for something outside any session (a bad spawn() call). */
  readonly sessionId: string | null;
  readonly agent: string | null;
  readonly route: string | null;
  /** What happened: the event's payload (secrets already redacted), never the run context. */
  readonly data: JsonValue;
  readonly prevHash: string;
  readonly hash: string;
}

/** Where a log's chain stands: its last record's seq and hash. */
export interface AuditHead {
  seq: number;
  hash: string;
}

/** The `prevHash` of the first record of a log. */
export const genesisHash = '0'.repeat(64);

/** The hash a record must carry: SHA-256 (hex) of its canonical JSON without `hash`. */
export function hashOfRecord(record: Omit<AuditRecord, 'hash'> & { hash?: unknown }): string {
  const { hash: _hash, ...content } = record;
  // node:crypto loads on the first hash, not when Troupe is imported.
  return process
    .getBuiltinModule('node:crypto')
    .createHash('sha256')
    .update(canonicalJson(content))
    .digest('hex');
}
