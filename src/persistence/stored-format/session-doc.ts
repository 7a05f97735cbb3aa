import { decodeRow, encodeRow } from '../row-encoding.ts';
import type { StoredSession } from '../store.ts';
import { storeLayoutVersion } from '../store.ts';
import { StoreCorruptError, StoreLayoutError } from '../store-errors.ts';

/**
 * The session row as a SQLite store writes it: `{ layout, row, messages }`. `layout` is the layout the record was
 * written with (a store migrates every record when it opens an older file, so a record of another layout is damage,
 * or a newer Troupe wrote it); `row` and `messages` are the row with its conversation written once (row-encoding.ts).
 */
export function encodeSessionDoc(session: StoredSession): unknown {
  const { row, messages } = encodeRow(session);
  return { layout: storeLayoutVersion, row, messages };
}

/** The session row read back from its JSON value, or a typed error naming the session. */
export function decodeSessionDoc(sessionId: string, doc: unknown): unknown {
  const layout =
    typeof doc === 'object' && doc !== null && Object.hasOwn(doc, 'layout')
      ? (doc as { layout: unknown }).layout
      : undefined;
  if (typeof layout === 'number' && Number.isInteger(layout) && layout > storeLayoutVersion)
    throw new StoreLayoutError(`The row of session "${sessionId}"`, layout, storeLayoutVersion);
  if (layout !== storeLayoutVersion)
    throw new StoreCorruptError(
      sessionId,
      `its row has the record layout ${JSON.stringify(layout) ?? 'nothing'}, not ${storeLayoutVersion}`,
    );
  return decodeRow(sessionId, doc);
}
