import type * as Sqlite from 'node:sqlite';
import { StoreCorruptError } from '../store-errors.ts';

/**
 * Every record a SQLite store writes (a session row, a nested-run checkpoint, a journal entry, an event, an approval)
 * carries a checksum (`sum`) over its table, its key and every column it is read back from. Reading a record
 * recomputes it: a byte changed on disk, a record moved to another key or a column edited by hand is a
 * StoreCorruptError naming the session and the record, never data the runtime would resume from.
 *
 * CRC-32 finds every change of up to 32 consecutive bits (any one damaged byte) and all but one in four billion of
 * the others; it guards against damage, not against someone who means to forge a record.
 */
export type RecordColumns = Record<string, Sqlite.SQLOutputValue | Sqlite.SQLInputValue | undefined>;

/** The tables whose records carry a checksum, and the columns each checksum covers, in order. */
export const checksummedColumns = {
  sessions: ['id', 'status', 'entry', 'agent', 'turns', 'updated_at', 'doc'],
  runs: ['session_id', 'route', 'doc'],
  journal: ['session_id', 'key', 'doc'],
  events: ['session_id', 'seq', 'time', 'agent', 'route', 'depth', 'type', 'origin', 'data'],
  approvals: ['session_id', 'call_id', 'status', 'requested_at', 'decided_at', 'doc'],
  heads: ['session_id', 'last_seq', 'runs', 'journal', 'approvals', 'messages', 'messages_sum'],
} as const;

export type ChecksummedTable = keyof typeof checksummedColumns;

/** The checksum of a record of `table`, from its columns (as bound when written, or as read back). */
export function recordChecksum(
  table: ChecksummedTable,
  record: RecordColumns,
  columns: readonly string[] = checksummedColumns[table],
): number {
  // Each column is fed as a tagged, length-prefixed piece: no two different records give the same input, and the
  // JSON text of a document is hashed as it is (escaping it again would cost more than the hash). The pieces are
  // hashed as one string (CRC-32 of the whole equals CRC-32 continued piece by piece): one call into zlib per record.
  // node:zlib loads on the first checksum, not when Troupe is imported.
  const { crc32 } = process.getBuiltinModule('node:zlib');
  let input: string = table;
  for (const name of columns) {
    const value = record[name];
    if (typeof value === 'string') input += `|s${value.length}:${value}`;
    else if (typeof value === 'number' || typeof value === 'bigint') input += `|n${String(value)}`;
    else if (value === undefined || value === null) input += '|z';
    // A blob where text belongs: damage, which the checksum must not match.
    else input += `|b${String(value)}`;
  }
  return crc32(input);
}

/** Refuses a record whose stored checksum is not the one its columns give. */
export function verifyRecord(
  sessionId: string | undefined,
  what: string,
  table: ChecksummedTable,
  record: RecordColumns,
): void {
  if (record.sum !== recordChecksum(table, record))
    throw new StoreCorruptError(
      sessionId,
      `${what} does not match its checksum (it was changed after it was written)`,
    );
}
