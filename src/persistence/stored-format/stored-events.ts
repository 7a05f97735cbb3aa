import type { RunEvent } from '../../core/events.ts';
import { StoreCorruptError } from '../store-errors.ts';
import { parseStoredJson } from '../validate-stored.ts';
import { storedEventTypes } from './stored-event-types.ts';

/**
 * An event row holds the events of one commit: its `doc` is a JSON array with one array per event,
 * `[time, agent, route, depth, type, origin, data]` (`origin` null for the session's own events), the events in seq
 * order from the row's `first_seq` to its `seq`. One row per commit is one index entry and one checksum, whatever
 * the commit's count of events.
 */

/**
 * One event's array in a row's `doc`, from its columns and the JSON text of its data (which is written as it is,
 * not serialized again).
 */
export function storedEventText(
  time: unknown,
  agent: unknown,
  route: unknown,
  depth: unknown,
  type: unknown,
  origin: unknown,
  data: string,
): string {
  const columns = JSON.stringify([time, agent, route, depth, type, origin]);
  return `${columns.slice(0, -1)},${data}]`;
}

/**
 * The events of a row read back: checked against its seqs (as many events as they span) and each event's columns
 * checked for their types. The row's checksum is verified before (the caller's). Events with `seq <= after` are
 * left out.
 */
export function eventsOfRow(
  sessionId: string,
  firstSeq: unknown,
  lastSeq: unknown,
  doc: unknown,
  after: number,
  into: RunEvent[],
): void {
  if (
    typeof firstSeq !== 'number' ||
    typeof lastSeq !== 'number' ||
    !Number.isSafeInteger(firstSeq) ||
    !Number.isSafeInteger(lastSeq) ||
    firstSeq < 0 ||
    lastSeq < firstSeq
  )
    throw new StoreCorruptError(
      sessionId,
      `an event row has the seqs ${String(firstSeq)} to ${String(lastSeq)}, not a range of counts`,
    );
  const what = `the row of events ${firstSeq} to ${lastSeq}`;
  const events = parseStoredJson(sessionId, what, doc);
  if (!Array.isArray(events) || events.length !== lastSeq - firstSeq + 1)
    throw new StoreCorruptError(
      sessionId,
      `${what} holds ${Array.isArray(events) ? `${events.length} events` : 'something else than a list of events'}`,
    );
  for (let index = 0; index < events.length; index++) {
    const seq = firstSeq + index;
    if (seq <= after) continue;
    const event = events[index];
    if (!Array.isArray(event) || event.length !== 7)
      throw new StoreCorruptError(sessionId, `event ${seq} is not stored as its seven columns`);
    const time = event[0];
    const agent = event[1];
    const route = event[2];
    const depth = event[3];
    const type = event[4];
    const origin = event[5];
    if (
      typeof time !== 'number' ||
      typeof agent !== 'string' ||
      typeof route !== 'string' ||
      typeof depth !== 'number' ||
      typeof type !== 'string' ||
      (origin !== null && typeof origin !== 'string')
    )
      throw new StoreCorruptError(sessionId, `event ${seq} has columns of the wrong type`);
    if (!storedEventTypes.has(type))
      throw new StoreCorruptError(
        sessionId,
        `event ${seq} has the type ${JSON.stringify(type)}, which no event has`,
      );
    if (agent.length === 0 || !Number.isSafeInteger(depth) || depth < 0)
      throw new StoreCorruptError(
        sessionId,
        `event ${seq} has an empty agent, or a depth that is not a count`,
      );
    into.push({
      time,
      agent,
      sessionId: origin ?? sessionId,
      route,
      depth,
      seq,
      type,
      data: event[6],
    } as RunEvent);
  }
}
