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
  const input = new ChecksumInput(table);
  for (const name of columns) input.add(record[name]);
  return input.sum();
}

/**
 * The checksum of a record of `table` from the values of its checksummed columns in their order, read from `values`
 * at `start`: the same as `recordChecksum`, without a record object (a commit's rows are bound as such lists).
 */
export function checksumOfValues(table: ChecksummedTable, values: readonly unknown[], start = 0): number {
  const input = new ChecksumInput(table);
  const end = start + checksummedColumns[table].length;
  for (let index = start; index < end; index++) input.add(values[index]);
  return input.sum();
}

/** A text longer than this is hashed on its own, continuing the checksum, instead of copied into the input. */
const longText = 256;

/** zlib's CRC-32, loaded on the first checksum (node:zlib is not loaded when Troupe is imported). */
let zlibCrc32: ((data: string, value?: number) => number) | undefined;

/**
 * A record's checksum input. Each column is fed as a tagged, length-prefixed piece: no two different records give
 * the same input, and the JSON text of a document is hashed as it is (escaping it again would cost more than the
 * hash). Short pieces are joined into one string and hashed in one call into zlib; a long text is hashed where it
 * is, continuing the checksum (CRC-32 of the whole equals CRC-32 continued piece by piece), so it is never copied.
 */
class ChecksumInput {
  #text: string;
  #sum = 0;

  constructor(table: string) {
    this.#text = table;
  }

  add(value: unknown): void {
    if (typeof value === 'string') {
      this.#text += `|s${value.length}:`;
      if (value.length <= longText) this.#text += value;
      else {
        this.#sum = crc32(this.#text, this.#sum);
        this.#sum = crc32(value, this.#sum);
        this.#text = '';
      }
    } else if (typeof value === 'number' || typeof value === 'bigint') this.#text += `|n${String(value)}`;
    else if (value === undefined || value === null) this.#text += '|z';
    // A blob where text belongs: damage, which the checksum must not match.
    else this.#text += `|b${String(value)}`;
  }

  sum(): number {
    return this.#text.length === 0 ? this.#sum : crc32(this.#text, this.#sum);
  }
}

function crc32(data: string, value: number): number {
  zlibCrc32 ??= process.getBuiltinModule('node:zlib').crc32;
  return zlibCrc32(data, value);
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
