import type { Message } from '../../core/messages.ts';
import { StoreCorruptError } from '../store-errors.ts';

/**
 * The conversations of long sessions, one message per row, in one append-only table: a commit writes the messages
 * that are new since the session's last commit, not its whole conversation. A session's first messages are its rows
 * `idx` 0 to n - 1 (read through the index by session and idx, which refuses an idx written twice), the rest are in
 * its session row (its tail, up to `tailLimit` characters); the session row refers to all of them by position and
 * says how many are in rows.
 *
 * Each row's checksum covers its session, its idx and its text, continued from the checksum of the row before it
 * (the first from 0): a changed, missing, reordered or moved row breaks the chain. The session's head keeps the count
 * and the last row's checksum, so that a commit checks, without reading the rows, that the conversation it continues
 * is the stored one.
 */
export const messagesTable = `CREATE TABLE IF NOT EXISTS messages (
  id INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  doc TEXT NOT NULL,
  sum INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS messages_by_session ON messages (session_id, idx);`;

/** The checksum of message `idx` of a session, continued from the checksum of the message before it (0 for the first). */
export function messageChecksum(sessionId: string, idx: number, doc: string, previous: number): number {
  // node:zlib loads on the first checksum, not when Troupe is imported.
  const { crc32 } = process.getBuiltinModule('node:zlib');
  return crc32(`messages|s${sessionId.length}:${sessionId}|n${idx}|s${doc.length}:${doc}`, previous);
}

/**
 * What a commit writes of the conversation: the first `keep` stored messages stay (their chain ends with `keepSum`,
 * 0 when none stay); those after them are replaced by `docs`, whose checksums are `sums`.
 */
export interface MessageRows {
  keep: number;
  keepSum: number;
  docs: string[];
  sums: number[];
}

/** The session's conversation as its head says it is stored. */
export interface StoredMessageCount {
  messages: number;
  messagesSum: number;
}

/**
 * What a commit writes of a session's conversation: `rows`, the changes to its message rows, and `tail`, the JSON
 * texts of the messages after the first `stored`, which the session row holds itself.
 */
export interface ConversationWrite {
  rows: MessageRows;
  stored: number;
  tail: string[];
}

/**
 * A session row holds the messages its table rows do not (its tail) until they pass this many characters of JSON;
 * then the tail moves into rows of the messages table. A short conversation is written with its session row, as one
 * record (a row more per message would cost more than its text); a long one is not written again by every commit.
 */
export const tailLimit = 2_048;

/**
 * What one store knows of the conversations its commits wrote, so that the next commit of a session serializes only
 * the messages that are new and writes only the rows that changed. It remembers each session's messages (the
 * objects, which the runtime never changes), their JSON texts and the checksums of those in rows, while the session
 * runs here; a session it does not know (its first commit in this process or in a turn, after `load`, after a failed
 * commit) has its whole conversation written once.
 */
export interface MessageLog {
  /** What a commit writes of a conversation whose distinct messages, in order, are `messages`. */
  write(
    sessionId: string,
    messages: readonly Message[],
    json: (message: Message, index: number) => string,
  ): ConversationWrite;
  /** Forgets a session: its next commit writes its whole conversation. */
  forget(sessionId: string): void;
}

interface Known {
  messages: readonly Message[];
  texts: string[];
  /** How many of `messages` are in rows (the first ones), and their checksums. */
  stored: number;
  sums: number[];
}

export function createMessageLog(limit = tailLimit): MessageLog {
  const known = new Map<string, Known>();
  return {
    write(sessionId, messages, json) {
      const before = known.get(sessionId);
      let same = 0;
      if (before !== undefined) {
        const most = Math.min(before.messages.length, messages.length);
        while (same < most && before.messages[same] === messages[same]) same++;
      }
      const texts = before === undefined ? [] : before.texts.slice(0, same);
      for (let index = same; index < messages.length; index++)
        texts.push(json(messages[index] as Message, index));
      // The rows that still hold this conversation's first messages stay; an unknown session keeps none.
      const keep = before === undefined ? 0 : Math.min(before.stored, same);
      const sums = before === undefined ? [] : before.sums.slice(0, keep);
      const keepSum = keep === 0 ? 0 : (sums[keep - 1] as number);
      let tailLength = 0;
      for (let index = keep; index < texts.length; index++) tailLength += (texts[index] as string).length;
      const docs: string[] = [];
      const added: number[] = [];
      let stored = keep;
      if (tailLength > limit) {
        let previous = keepSum;
        for (let index = keep; index < texts.length; index++) {
          const doc = texts[index] as string;
          previous = messageChecksum(sessionId, index, doc, previous);
          docs.push(doc);
          added.push(previous);
          sums.push(previous);
        }
        stored = texts.length;
      }
      known.set(sessionId, { messages, texts, stored, sums });
      return { rows: { keep, keepSum, docs, sums: added }, stored, tail: texts.slice(stored) };
    },
    forget(sessionId) {
      known.delete(sessionId);
    },
  };
}

/** The rows of a session's messages as read back (by idx), verified: their texts, or a StoreCorruptError. */
export function verifiedMessages(
  sessionId: string,
  rows: readonly Record<string, unknown>[],
  stored: StoredMessageCount,
): string[] {
  const docs: string[] = [];
  let previous = 0;
  for (const [index, row] of rows.entries()) {
    const { idx, doc, sum } = row;
    if (idx !== index)
      throw new StoreCorruptError(
        sessionId,
        `its conversation lacks message ${index} (the next stored message is ${String(idx)})`,
      );
    if (typeof doc !== 'string' || sum !== messageChecksum(sessionId, index, doc, previous))
      throw new StoreCorruptError(
        sessionId,
        `message ${index} does not match its checksum (it was changed, moved or reordered after it was written)`,
      );
    previous = sum as number;
    docs.push(doc);
  }
  if (docs.length !== stored.messages || previous !== stored.messagesSum)
    throw new StoreCorruptError(
      sessionId,
      `it holds ${docs.length} message rows, but its head says ${stored.messages} (or another last one): message rows were lost or replaced`,
    );
  return docs;
}
