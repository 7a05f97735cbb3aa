import { EventEmitter } from 'eventemitter3';
import type { Clock } from '../core/clock.ts';
import type { RunEvent, RunEventData, RunEventType } from '../core/events.ts';

/**
 * A session's event stream: stamps each event with time, session and a gap-free sequence number, and hands it to
 * the listeners. Model deltas come straight here from the model actor, never through the statechart (rule 4).
 */
export class EventBus {
  readonly sessionId: string;
  readonly #clock: Clock;
  readonly #emitter = new EventEmitter<{ event: [RunEvent] }>();
  #seq = 0;

  constructor(sessionId: string, clock: Clock) {
    this.sessionId = sessionId;
    this.#clock = clock;
  }

  /** The next sequence number, i.e. how many events were emitted so far. */
  get seq(): number {
    return this.#seq;
  }

  emit<T extends RunEventType>(agent: string, type: T, data: RunEventData[T]): void {
    const event = { time: this.#clock.now(), agent, sessionId: this.sessionId, seq: this.#seq++, type, data };
    this.#emitter.emit('event', event as RunEvent);
  }

  /** Listens to every event; returns the function that stops listening. A throwing listener is isolated. */
  subscribe(listener: (event: RunEvent) => void): () => void {
    const safe = (event: RunEvent) => {
      try {
        listener(event);
      } catch (error) {
        // A consumer's bug must not break the run or crash the process; report it where it can be seen.
        queueMicrotask(() => console.error('troupe: an event listener threw', error));
      }
    };
    this.#emitter.on('event', safe);
    return () => this.#emitter.off('event', safe);
  }

  clear(): void {
    this.#emitter.removeAllListeners();
  }
}
