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
  events: ['session_id', 'first_seq', 'seq', 'doc'],
  approvals: ['session_id', 'call_id', 'status', 'requested_at', 'decided_at', 'doc'],
  heads: ['session_id', 'last_seq', 'runs', 'journal', 'approvals', 'messages', 'messages_sum'],
} as const;

/** The columns an event row's checksum covered in layouts 5 to 7 (one row per event). */
export const eventRowColumns = [
  'session_id',
  'seq',
  'time',
  'agent',
  'route',
  'depth',
  'type',
  'origin',
  'data',
];

export type ChecksummedTable = keyof typeof checksummedColumns;

/** The checksum of a record of `table`, from its columns (as bound when written, or as read back). */
export function recordChecksum(
  table: ChecksummedTable,
  record: RecordColumns,
  columns: readonly string[] = checksummedColumns[table],
): number {
  beginChecksum(table);
  for (const name of columns) addToChecksum(record[name]);
  return endChecksum();
}

/**
 * The checksum of a record of `table` from the values of its checksummed columns in their order, read from `values`
 * at `start`: the same as `recordChecksum`, without a record object (a commit's rows are bound as such lists).
 */
export function checksumOfValues(table: ChecksummedTable, values: readonly unknown[], start = 0): number {
  beginChecksum(table);
  const end = start + checksummedColumns[table].length;
  for (let index = start; index < end; index++) addToChecksum(values[index]);
  return endChecksum();
}

/**
 * A record's checksum column by column, without a record or a list of its values: `beginChecksum(table)`, then
 * `addToChecksum` for each of its checksummed columns in their order, then `endChecksum()` gives what
 * `recordChecksum` gives. One checksum at a time (nothing else may be checksummed in between).
 */
export function beginChecksum(table: ChecksummedTable): void {
  crc[0] = -1;
  addText(table);
}

/** Adds the next column's value to the checksum begun by `beginChecksum`. */
export function addToChecksum(value: unknown): void {
  if (typeof value === 'string') {
    addText('|s');
    addInteger(value.length);
    addText(':');
    addText(value);
  } else if (typeof value === 'number' && Number.isSafeInteger(value) && !Object.is(value, -0)) {
    addText('|n');
    addInteger(value);
  } else if (typeof value === 'number' || typeof value === 'bigint') {
    addText('|n');
    addText(String(value));
  } else if (value === undefined || value === null) addText('|z');
  else {
    // A blob where text belongs: damage, which the checksum must not match.
    addText('|b');
    addText(String(value));
  }
}

/** The checksum begun by `beginChecksum`. */
export function endChecksum(): number {
  return ~(crc[0] as number) >>> 0;
}

/*
 * Each column is fed as a tagged, length-prefixed piece: no two different records give the same input, and the JSON
 * text of a document is hashed as it is (escaping it again would cost more than the hash). The checksum is CRC-32
 * (zlib's) of the pieces' UTF-8 bytes one after the other. Short pieces are hashed here as they are read, so that a
 * checksum builds no input string (garbage at once); a long text goes to zlib, which continues the CRC.
 */

/**
 * The CRC being computed, inverted as the loop keeps it (a 32-bit integer passed between functions as a number would
 * be allocated on the heap whenever it does not fit a small integer). Checksums are computed synchronously, one at a
 * time.
 */
const crc = new Int32Array(1);

/** A text longer than this is hashed by zlib (faster per byte than the loop here, once the call is paid for). */
const longText = 128;

/** The decimal digits of a number being added, last first. */
const digits = new Uint8Array(16);

/** Adds `String(value)` of a safe integer, digit by digit (no string made). */
function addInteger(value: number): void {
  let rest = value;
  if (rest < 0) {
    addByte(0x2d);
    rest = -rest;
  }
  let count = 0;
  do {
    const next = Math.floor(rest / 10);
    digits[count++] = rest - next * 10;
    rest = next;
  } while (rest > 0);
  while (count > 0) addByte(0x30 + (digits[--count] as number));
}

function addByte(byte: number): void {
  const sum = crc[0] as number;
  crc[0] = (crcTable[(sum ^ byte) & 0xff] as number) ^ (sum >>> 8);
}

/** zlib's CRC-32, loaded on the first long text (node:zlib is not loaded when Troupe is imported). */
let zlibCrc32: ((data: string, value?: number) => number) | undefined;

/** The CRC-32 table of the polynomial zlib uses (reflected 0xEDB88320). */
const crcTable = /* @__PURE__ */ (() => {
  const table = new Int32Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let value = byte;
    for (let bit = 0; bit < 8; bit++) value = value & 1 ? 0xedb88320 ^ (value >>> 1) : value >>> 1;
    table[byte] = value;
  }
  return table;
})();

/**
 * Continues the CRC with the text's UTF-8 bytes, as zlib's `crc32(text, sum)` does (a lone surrogate is the bytes of
 * U+FFFD, as Node encodes it).
 */
function addText(text: string): void {
  if (text.length > longText) {
    zlibCrc32 ??= process.getBuiltinModule('node:zlib').crc32;
    crc[0] = ~zlibCrc32(text, ~(crc[0] as number) >>> 0);
    return;
  }
  let sum = crc[0] as number;
  for (let index = 0; index < text.length; index++) {
    let code = text.charCodeAt(index);
    if (code < 0x80) {
      sum = (crcTable[(sum ^ code) & 0xff] as number) ^ (sum >>> 8);
      continue;
    }
    // The UTF-8 bytes of the code point, lowest first in `bytes` (2 to 4 of them).
    let bytes: number;
    let count: number;
    if (code < 0x800) {
      bytes = 0xc0 | (code >> 6) | ((0x80 | (code & 0x3f)) << 8);
      count = 2;
    } else {
      if (code >= 0xd800 && code <= 0xdfff) {
        const low = index + 1 < text.length ? text.charCodeAt(index + 1) : 0;
        if (code <= 0xdbff && low >= 0xdc00 && low <= 0xdfff) {
          code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
          index++;
        } else code = 0xfffd;
      }
      if (code < 0x10000) {
        bytes = 0xe0 | (code >> 12) | ((0x80 | ((code >> 6) & 0x3f)) << 8) | ((0x80 | (code & 0x3f)) << 16);
        count = 3;
      } else {
        bytes =
          0xf0 |
          (code >> 18) |
          ((0x80 | ((code >> 12) & 0x3f)) << 8) |
          ((0x80 | ((code >> 6) & 0x3f)) << 16) |
          ((0x80 | (code & 0x3f)) << 24);
        count = 4;
      }
    }
    for (let byte = 0; byte < count; byte++)
      sum = (crcTable[(sum ^ (bytes >>> (8 * byte))) & 0xff] as number) ^ (sum >>> 8);
  }
  crc[0] = sum;
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
