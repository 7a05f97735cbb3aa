import type { Message } from '../../core/messages.ts';
import { decodeRow, encodeRow } from '../row-encoding.ts';
import type { StoredSession } from '../store.ts';
import { storeLayoutVersion } from '../store.ts';
import { StoreCorruptError, StoreLayoutError } from '../store-errors.ts';

/**
 * The session row as a SQLite store writes it: `{ layout, row, messages }`. `layout` is the layout the record was
 * written with (a store migrates every record when it opens an older file, so a record of another layout is damage,
 * or a newer Troupe wrote it); `row` is the row with its message lists as ranges of the session's stored messages
 * (row-encoding.ts), and `messages` how many stored messages it expects (stored-messages.ts).
 */
export function encodeSessionDoc(session: StoredSession): { doc: unknown; messages: Message[] } {
  const { row, messages } = encodeRow(session);
  return { doc: { layout: storeLayoutVersion, row, messages: messages.length }, messages };
}

/** The session row read back from its JSON value and its stored messages, or a typed error naming the session. */
export function decodeSessionDoc(sessionId: string, doc: unknown, messages: readonly unknown[]): unknown {
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
  // The row says how many messages it was written with: a message row lost with its head, or one too many, shows here.
  const expected = field('messages');
  if (expected !== messages.length)
    throw new StoreCorruptError(
      sessionId,
      `its row expects ${JSON.stringify(expected) ?? 'no'} messages, but ${messages.length} are stored`,
    );
  return decodeRow(sessionId, field('row'), messages);
}
