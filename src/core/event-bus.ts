import type { Clock } from './clock.ts';
import type { RunEvent, RunEventData, RunEventType } from './events.ts';

/** Where an event's agent runs in the session (see RunEvent.route and depth). */
export interface EventOrigin {
  route: string;
  depth: number;
}

/** Hands an event on to the bus's listeners (stamped with time and seq). */
export type EventDelivery = <T extends RunEventType>(
  agent: string,
  type: T,
  data: RunEventData[T],
  origin: EventOrigin | undefined,
) => void;

/**
 * Sees every event before the listeners do and delivers what they get instead: the same event, a changed copy
 * (masked personal data), nothing yet (text held back), or more than one.
 */
export type EventFilter = <T extends RunEventType>(
  agent: string,
  type: T,
  data: RunEventData[T],
  origin: EventOrigin | undefined,
  deliver: EventDelivery,
) => void;

/** No listeners: shared by every bus that has none (the list is replaced, never changed in place). */
const noListeners: readonly ((event: RunEvent) => void)[] = Object.freeze([]);

/**
 * A session's event stream: stamps each event with time, session and a gap-free sequence number, and hands it to
 * the listeners. Model deltas come straight here from the model actor, never through the statechart: a machine
 * event per delta would slow the hot path.
 */
export class EventBus {
  readonly sessionId: string;
  /**
   * Whether anyone listens. Emitters on the hot path check it before building an event's data: a plain run() has
   * no listener, and its events would be garbage the moment they were made. Sequence numbers count the events
   * emitted to listeners, so they stay gap-free for whoever listens. A field the bus sets when its listeners
   * change, not a getter: it is read several times per tool step, where a getter costs a call each.
   */
  declare readonly listening: boolean;
  readonly #clock: Clock;
  /**
   * The listeners, replaced (never changed in place) on every subscription and unsubscription, so an event is
   * delivered to the listeners there were when it was emitted. Most runs (a plain run()) never have one.
   */
  #listeners: readonly ((event: RunEvent) => void)[] = noListeners;
  #seq: number;
  #filter: EventFilter | undefined;

  /** `firstSeq`: where numbering starts (a restored session continues its log). */
  constructor(sessionId: string, clock: Clock, firstSeq = 0) {
    this.sessionId = sessionId;
    (this as { listening: boolean }).listening = false;
    this.#clock = clock;
    this.#seq = firstSeq;
  }

  /** The seq the next event will get. */
  get nextSeq(): number {
    return this.#seq;
  }

  /** Emits an event of `agent`; `origin` says where the agent runs (default: holding the conversation). */
  emit<T extends RunEventType>(agent: string, type: T, data: RunEventData[T], origin?: EventOrigin): void {
    if (!this.listening) return;
    if (this.#filter) this.#filter(agent, type, data, origin, this.#delivery());
    else this.#deliver(agent, type, data, origin);
  }

  /** Puts `filter` between the emitters and the listeners (one per bus; a later call replaces it). */
  setFilter(filter: EventFilter | undefined): void {
    this.#filter = filter;
  }

  /** The bus's delivery as a function, for its filter: made when a filter first needs it, not with every bus. */
  #delivery(): EventDelivery {
    this.#deliverFunction ??= this.#deliveryFunction();
    return this.#deliverFunction;
  }

  /**
   * The delivery as a function, made by a function of its own: V8 allocates a function literal stored straight into
   * a property (`this.f ??= () => ...` too) in the old generation, where it would keep the bus and its listeners
   * reachable to young-generation collections until a full one. A closure returned by a function is young.
   */
  #deliveryFunction(): EventDelivery {
    return (agent, type, data, origin) => this.#deliver(agent, type, data, origin);
  }

  #deliverFunction: EventDelivery | undefined;

  #deliver<T extends RunEventType>(
    agent: string,
    type: T,
    data: RunEventData[T],
    origin: EventOrigin | undefined,
  ): void {
    const event = {
      time: this.#clock.now(),
      agent,
      sessionId: this.sessionId,
      route: origin?.route ?? agent,
      depth: origin?.depth ?? 0,
      seq: this.#seq++,
      type,
      data,
    };
    for (const listener of this.#listeners) listener(event as RunEvent);
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
    this.#setListeners([...this.#listeners, safe]);
    return () => {
      this.#setListeners(this.#listeners.filter((l) => l !== safe));
    };
  }

  clear(): void {
    this.#setListeners(noListeners);
  }

  #setListeners(listeners: readonly ((event: RunEvent) => void)[]): void {
    this.#listeners = listeners;
    (this as { listening: boolean }).listening = listeners.length > 0;
  }
}
