import type { Message } from '../../core/messages.ts';
import { decodeRow, encodeRow } from '../row-encoding.ts';
import type { StoredSession } from '../store.ts';
import { storeLayoutVersion } from '../store.ts';
import { StoreCorruptError, StoreLayoutError } from '../store-errors.ts';

/**
 * The session row as a SQLite store writes it: `{ layout, row, messages, tail }`. `layout` is the layout the record
 * was written with (a store migrates every record when it opens an older file, so a record of another layout is
 * damage, or a newer Troupe wrote it); `row` is the row with its message lists as ranges of positions in the session's
 * messages (row-encoding.ts); `messages` is how many of them are in rows of the messages table (the first ones), and
 * `tail` the others (stored-messages.ts).
 */
export function encodeSessionDoc(session: StoredSession): { row: unknown; messages: Message[] } {
  return encodeRow(session);
}

/** The session row's JSON text, from its row's JSON, the count of its messages in rows and its tail's JSON texts. */
export function sessionDocText(rowJson: string, stored: number, tail: readonly string[]): string {
  return `{"layout":${storeLayoutVersion},"row":${rowJson},"messages":${stored},"tail":[${tail.join(',')}]}`;
}

/**
 * The session row read back from its JSON value and its messages read from rows, or a typed error naming the
 * session.
 */
export function decodeSessionDoc(sessionId: string, doc: unknown, stored: readonly unknown[]): unknown {
  const field = (name: string): unknown =>
    typeof doc === 'object' && doc !== null && Object.hasOwn(doc, name)
      ? (doc as Record<string, unknown>)[name]
      : undefined;
  const layout = field('layout');
  if (typeof layout === 'number' && Number.isInteger(layout) && layout > storeLayoutVersion)
    throw new StoreLayoutError(`The row of session "${sessionId}"`, layout, storeLayoutVersion);
  if (layout !== storeLayoutVersion)
    throw new StoreCorruptError(
      sessionId,
      `its row has the record layout ${JSON.stringify(layout) ?? 'nothing'}, not ${storeLayoutVersion}`,
    );
  // The row says how many messages it was written with in rows: a message row lost with its head, or one too many,
  // shows here.
  const expected = field('messages');
  if (expected !== stored.length)
    throw new StoreCorruptError(
      sessionId,
      `its row expects ${JSON.stringify(expected) ?? 'no'} messages in rows, but ${stored.length} are stored`,
    );
  const tail = field('tail');
  if (!Array.isArray(tail))
    throw new StoreCorruptError(sessionId, 'its row has no list of its last messages');
  return decodeRow(sessionId, field('row'), [...stored, ...tail]);
}
