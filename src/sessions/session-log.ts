import { AsyncQueue } from '../core/async-queue.ts';
import type { RunEvent } from '../core/events.ts';
import { ProcessHold } from './process-hold.ts';

/** Where a reader of the log starts and stops. */
export interface LogReadOptions {
  /** Deliver events with `seq > after` (-1: from the first one the log holds). */
  after: number;
  /** Stop after delivering the event this returns true for (e.g. a turn's run_end). */
  until?: (event: RunEvent) => boolean;
  /** Ends the iteration early. */
  signal?: AbortSignal | undefined;
}

/** Reads committed events from the store: what the log no longer holds in memory. */
export type StoredEventReader = (after: number) => RunEvent[] | Promise<RunEvent[]>;

/**
 * A session's event log as readers see it: events are appended as the session emits them, committed to the store
 * (by the session's next commit, or a flush shortly after), and only then delivered to readers, so what a reader has
 * seen is always in the store: a client that reconnects with the last seq it saw (an SSE Last-Event-ID) after a
 * crash neither misses nor repeats an event. The last `retain` committed events stay in memory for readers; older
 * ones are read back from the store.
 */
export class SessionLog {
  readonly #retain: number;
  readonly #readStored: StoredEventReader;
  /** Emitted, not committed yet. */
  #pending: RunEvent[] = [];
  /** Committed, newest last, at most `retain`. */
  #tail: RunEvent[] = [];
  #committedSeq: number;
  readonly #readers = new Set<LogReader>();
  #closed = false;
  /** Told of every event once committed (the system's stream of all sessions). */
  onCommitted: ((event: RunEvent) => void) | undefined;

  constructor(lastCommittedSeq: number, retain: number, readStored: StoredEventReader) {
    this.#committedSeq = lastCommittedSeq;
    this.#retain = retain;
    this.#readStored = readStored;
  }

  /** Seq of the last committed event (-1: none). */
  get committedSeq(): number {
    return this.#committedSeq;
  }

  get hasPending(): boolean {
    return this.#pending.length > 0;
  }

  append(event: RunEvent): void {
    if (!this.#closed) this.#pending.push(event);
  }

  /** Takes the events to commit; call `committed` with them once the store has them (or `failed`). */
  takePending(): RunEvent[] {
    const events = this.#pending;
    this.#pending = [];
    return events;
  }

  /** The store has these events: they become readable. */
  committed(events: readonly RunEvent[]): void {
    for (const event of events) {
      this.#tail.push(event);
      this.#committedSeq = event.seq;
      this.onCommitted?.(event);
    }
    if (this.#tail.length > this.#retain) this.#tail.splice(0, this.#tail.length - this.#retain);
    for (const reader of this.#readers) reader.offer(events);
  }

  /** A commit failed: its events go back to the front of the queue for the next one. */
  failed(events: readonly RunEvent[]): void {
    this.#pending = [...events, ...this.#pending];
  }

  /** Committed events from `after`, then live ones as they are committed, until `until`, the signal or close. */
  read(options: LogReadOptions): AsyncIterable<RunEvent> {
    const reader = new LogReader(options, () => this.#readers.delete(reader));
    if (this.#closed && options.after >= this.#committedSeq) {
      reader.end();
      return reader.queue;
    }
    const oldestInMemory = this.#tail[0]?.seq ?? this.#committedSeq + 1;
    if (options.after + 1 >= oldestInMemory) {
      reader.offer(this.#tail.filter((event) => event.seq > options.after));
      this.#attach(reader);
      return reader.queue;
    }
    // Older than what memory holds: read the store first, keep live events meanwhile, deliver in order.
    reader.hold();
    this.#attach(reader);
    void Promise.resolve()
      .then(() => this.#readStored(options.after))
      .then(
        (stored) => reader.release(stored),
        () => reader.release([]),
      );
    return reader.queue;
  }

  #attach(reader: LogReader): void {
    if (reader.ended) return;
    if (this.#closed) reader.end();
    else {
      this.#readers.add(reader);
      // A reader waiting for a live session's events keeps the process alive until it ends (the session closes,
      // its signal aborts, or the loop stops).
      reader.holdProcess();
    }
  }

  /** No more events: readers end once they have everything committed. */
  close(): void {
    this.#closed = true;
    for (const reader of this.#readers) reader.end();
    this.#readers.clear();
  }
}

/** One reader: delivers events in seq order, exactly once each. */
class LogReader {
  readonly queue = new AsyncQueue<RunEvent>();
  readonly #until: ((event: RunEvent) => boolean) | undefined;
  readonly #detach: () => void;
  #last: number;
  #held: RunEvent[] | undefined;
  #ended = false;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort = () => this.end();
  readonly #process = new ProcessHold();

  constructor(options: LogReadOptions, detach: () => void) {
    this.#last = options.after;
    this.#until = options.until;
    this.#detach = detach;
    this.#signal = options.signal;
    if (this.#signal?.aborted) {
      // Aborted before it started: never attached, nothing to detach.
      this.#ended = true;
      this.queue.end();
    } else this.#signal?.addEventListener('abort', this.#onAbort, { once: true });
    this.queue.onReturn(() => this.end());
  }

  get ended(): boolean {
    return this.#ended;
  }

  holdProcess(): void {
    if (!this.#ended) this.#process.hold();
  }

  /** Hold live events until the stored ones are read. */
  hold(): void {
    this.#held = [];
  }

  release(stored: readonly RunEvent[]): void {
    const held = this.#held ?? [];
    this.#held = undefined;
    this.offer(stored);
    this.offer(held);
  }

  offer(events: readonly RunEvent[]): void {
    if (this.#ended) return;
    if (this.#held) {
      this.#held.push(...events);
      return;
    }
    for (const event of events) {
      if (event.seq <= this.#last) continue;
      this.#last = event.seq;
      this.queue.push(event);
      if (this.#until?.(event)) {
        this.end();
        return;
      }
    }
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#process.release();
    this.#signal?.removeEventListener('abort', this.#onAbort);
    this.#detach();
    this.queue.end();
  }
}
