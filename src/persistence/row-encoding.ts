import type { Message } from '../core/messages.ts';
import type { StoredSession } from './store.ts';
import { StoreCommitError, StoreCorruptError } from './store-errors.ts';

/**
 * How a session row is written without repeating the conversation. A row holds it up to four times: the
 * conversation at the last turn's end, the conversation up to the agent holding the turn, that agent's input
 * history, and the agent's history in its checkpoint. They share their message objects (each is a prefix of the
 * next, or the same list), so every distinct message is stored once (in the order first met, stored-messages.ts)
 * and each list is written as the positions of its messages there, runs of consecutive positions as ranges:
 * `{ "$ranges": [start, end, start, end, ...] }` (each end excluded). Reading it back rebuilds the lists.
 */

/** A list of messages written as ranges of positions in the session's stored messages. */
interface MessageRanges {
  $ranges: number[];
}

/** The row as written: the session row, its message lists replaced by ranges, and its distinct messages. */
export interface EncodedRow {
  row: unknown;
  messages: Message[];
}

export function encodeRow(session: StoredSession): EncodedRow {
  const positions = new Map<Message, number>();
  const messages: Message[] = [];
  const refs = (list: readonly Message[], where: string): MessageRanges => {
    if (!Array.isArray(list))
      throw new StoreCommitError(
        session.id,
        'invalid_value',
        `the session row's ${where} is not a list of messages`,
      );
    const ranges: number[] = [];
    for (const message of list) {
      let position = positions.get(message);
      if (position === undefined) {
        position = messages.length;
        positions.set(message, position);
        messages.push(message);
      }
      if (ranges.length > 0 && ranges[ranges.length - 1] === position)
        ranges[ranges.length - 1] = position + 1;
      else ranges.push(position, position + 1);
    }
    return { $ranges: ranges };
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
 * The row read back, given its stored messages: every `{ "$ranges": [...] }` where a message list stood becomes that
 * list again. A range outside the messages is a StoreCorruptError naming the session; anything else that is wrong is
 * left for validation to name.
 */
export function decodeRow(sessionId: string, row: unknown, messages: readonly unknown[]): unknown {
  const list = (value: unknown, where: string): unknown => {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, '$ranges')) return value;
    const ranges = (value as MessageRanges).$ranges;
    if (!Array.isArray(ranges) || ranges.length % 2 !== 0)
      throw new StoreCorruptError(sessionId, `${where} refers to its messages wrongly`);
    const out: unknown[] = [];
    for (let index = 0; index < ranges.length; index += 2) {
      const start = ranges[index];
      const end = ranges[index + 1];
      if (
        !Number.isInteger(start) ||
        !Number.isInteger(end) ||
        (start as number) < 0 ||
        (start as number) >= (end as number) ||
        (end as number) > messages.length
      )
        throw new StoreCorruptError(
          sessionId,
          `${where} refers to messages ${String(start)} to ${String(end)}, which the session lacks`,
        );
      for (let position = start as number; position < (end as number); position++)
        out.push(messages[position]);
    }
    return out;
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
