import type { Message } from '../core/messages.ts';
import type { StoredSession } from './store.ts';
import { StoreCommitError, StoreCorruptError } from './store-errors.ts';

/**
 * How a session row is written as JSON without repeating the conversation. A row holds it up to four times: the
 * conversation at the last turn's end, the conversation up to the agent holding the turn, that agent's input
 * history, and the agent's history in its checkpoint. They share their message objects (each is a prefix of the
 * next, or the same list), so the row is written with every distinct message once, in `messages`, and each list as
 * the positions of its messages there: `{ "$messages": [0, 1, 2, ...] }`. Reading it back rebuilds the lists.
 */

/** A list of messages written as positions in the row's `messages`. */
interface MessageRefs {
  $messages: number[];
}

/** The row as written: the session row, its message lists replaced by references, and the messages once. */
export interface EncodedRow {
  row: unknown;
  messages: Message[];
}

export function encodeRow(session: StoredSession): EncodedRow {
  const positions = new Map<Message, number>();
  const messages: Message[] = [];
  const refs = (list: readonly Message[], where: string): MessageRefs => {
    if (!Array.isArray(list))
      throw new StoreCommitError(
        session.id,
        'invalid_value',
        `the session row's ${where} is not a list of messages`,
      );
    return {
      $messages: list.map((message) => {
        let position = positions.get(message);
        if (position === undefined) {
          position = messages.length;
          positions.set(message, position);
          messages.push(message);
        }
        return position;
      }),
    };
  };
  const turn = session.turn;
  const row = {
    ...session,
    transcript: refs(session.transcript, 'transcript'),
    turn: turn && {
      ...turn,
      session: {
        ...turn.session,
        transcript: refs(turn.session.transcript, 'turn.session.transcript'),
        agentHistory: refs(turn.session.agentHistory, 'turn.session.agentHistory'),
      },
      agent: turn.agent && {
        ...turn.agent,
        checkpoint: {
          ...turn.agent.checkpoint,
          history: refs(turn.agent.checkpoint.history, 'turn.agent.checkpoint.history'),
        },
      },
    },
  };
  return { row, messages };
}

/**
 * The row read back: every `{ "$messages": [...] }` where a message list stood becomes that list again. A
 * reference to a message the row does not have is a StoreCorruptError naming the session; anything else that is
 * wrong is left for validation to name.
 */
export function decodeRow(sessionId: string, encoded: unknown): unknown {
  if (typeof encoded !== 'object' || encoded === null || Array.isArray(encoded)) return encoded;
  const { row, messages } = encoded as { row?: unknown; messages?: unknown };
  if (!Array.isArray(messages))
    throw new StoreCorruptError(
      sessionId,
      'its row has no message list (it was not written by this version)',
    );
  const list = (value: unknown, where: string): unknown => {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, '$messages')) return value;
    const positions = (value as MessageRefs).$messages;
    if (!Array.isArray(positions))
      throw new StoreCorruptError(sessionId, `${where} refers to its messages wrongly`);
    return positions.map((position) => {
      if (!Number.isInteger(position) || position < 0 || position >= messages.length)
        throw new StoreCorruptError(
          sessionId,
          `${where} refers to message ${String(position)}, which the row lacks`,
        );
      return messages[position];
    });
  };
  const record = (value: unknown): Record<string, unknown> | undefined =>
    typeof value === 'object' && value !== null && !Array.isArray(value)
      ? { ...(value as Record<string, unknown>) }
      : undefined;
  const decoded = record(row);
  if (!decoded) return row;
  decoded.transcript = list(decoded.transcript, 'session.transcript');
  const turn = record(decoded.turn);
  if (turn) {
    decoded.turn = turn;
    const session = record(turn.session);
    if (session) {
      turn.session = session;
      session.transcript = list(session.transcript, 'turn.session.transcript');
      session.agentHistory = list(session.agentHistory, 'turn.session.agentHistory');
    }
    const agent = record(turn.agent);
    if (agent) {
      turn.agent = agent;
      const checkpoint = record(agent.checkpoint);
      if (checkpoint) {
        agent.checkpoint = checkpoint;
        checkpoint.history = list(checkpoint.history, 'turn.agent.checkpoint.history');
      }
    }
  }
  return decoded;
}
