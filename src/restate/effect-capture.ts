import { AsyncLocalStorage } from 'node:async_hooks';
import { type Clock, systemClock } from '../core/clock.ts';
import { EventBus, type EventOrigin } from '../core/event-bus.ts';
import type { RunEventData, RunEventType } from '../core/events.ts';

/**
 * Inside a Restate handler only journaled values may decide anything, and what an effect emits while it runs is
 * not re-emitted when the journal replays it. So an effect runs inside a capture scope: the events it emits are
 * kept with its result in the journal and re-emitted, in order, whenever its result comes back (fresh or
 * replayed). Outside effects, the clock reads journaled time only, so event times and durations are the same
 * on every replay.
 */

/** An event an effect emitted while it ran, journaled with the effect's result. */
export interface CapturedEvent {
  agent: string;
  type: RunEventType;
  data: RunEventData[RunEventType];
  time: number;
  origin?: EventOrigin;
}

interface CaptureScope {
  events: CapturedEvent[];
}

const capture = new AsyncLocalStorage<CaptureScope>();

/** Runs `effect` in a capture scope; resolves with its value and the events it emitted. */
export async function captured<T>(effect: () => Promise<T>): Promise<{ value: T; events: CapturedEvent[] }> {
  const scope: CaptureScope = { events: [] };
  const value = await capture.run(scope, effect);
  return { value, events: scope.events };
}

/** Whether the caller runs inside an effect (its code may read the real clock there). */
export function insideEffect(): boolean {
  return capture.getStore() !== undefined;
}

/**
 * The clock of a turn run in a Restate handler: outside effects it reads the latest journaled time (the turn's
 * start, then the end time of each effect as recorded in the journal), inside effects the real time. Timers are
 * real: the runtime only sets them inside effects (tool timeouts), where they are journaled with the result.
 */
export class JournalClock implements Clock {
  #journaled: number;
  #pinned: number | undefined;

  constructor(start: number) {
    this.#journaled = start;
  }

  now(): number {
    if (capture.getStore() !== undefined) return Date.now();
    return this.#pinned ?? this.#journaled;
  }

  /** Moves journaled time forward to `time` (a journaled value); never backwards. */
  advance(time: number): void {
    if (time > this.#journaled) this.#journaled = time;
  }

  /** Runs `emit` with the clock reading `time` (a journaled event's own time). */
  at(time: number, emit: () => void): void {
    this.#pinned = time;
    try {
      emit();
    } finally {
      this.#pinned = undefined;
    }
  }

  setTimeout(callback: () => void, ms: number): unknown {
    return systemClock.setTimeout(callback, ms);
  }

  clearTimeout(handle: unknown): void {
    systemClock.clearTimeout(handle);
  }
}

/** Event types that are never kept: token deltas are streamed live only, and nobody listens to a handler live. */
const streamedOnly: ReadonlySet<string> = new Set(['delta', 'reasoning_delta', 'tool_call_delta']);

/** The turn's event bus: events emitted inside an effect are captured for the journal instead of emitted. */
export class JournaledBus extends EventBus {
  readonly #clock: JournalClock;

  constructor(sessionId: string, clock: JournalClock, firstSeq: number) {
    super(sessionId, clock, firstSeq);
    this.#clock = clock;
  }

  override emit<T extends RunEventType>(
    agent: string,
    type: T,
    data: RunEventData[T],
    origin?: EventOrigin,
  ): void {
    if (streamedOnly.has(type)) return;
    const scope = capture.getStore();
    if (scope === undefined) {
      super.emit(agent, type, data, origin);
      return;
    }
    const event: CapturedEvent = { agent, type, data, time: Date.now() };
    if (origin) event.origin = origin;
    scope.events.push(event);
  }

  /** Emits the events an effect captured, each at its own recorded time. */
  replay(events: readonly CapturedEvent[]): void {
    for (const event of events)
      this.#clock.at(event.time, () =>
        super.emit(event.agent, event.type, event.data as never, event.origin),
      );
  }
}
