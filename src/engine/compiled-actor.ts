import type { AnyActorRef, EventObject, Subscription } from 'xstate';
import { isCompiledMachine } from './compiled-machine.ts';
import { ignoreInspection } from './inspection-events.ts';
import { xstateDevelopmentBuild } from './xstate-build.ts';
import { processingRunning, processingStopped } from './xstate-shapes.ts';

/**
 * An actor for a compiled machine that nothing inspects and that has no child actors and no delayed events (a plain
 * run's agent). XState's `Actor` gives every actor an actor system (or a place in its parent's), a mailbox object
 * with a bound callback, an inspection event for every event, snapshot and action, and a scope of four closures;
 * this one is a single object with a scope, and takes each event straight to the machine's `transition`.
 *
 * It behaves as XState's actor does for everything its owner observes (test/engine/compiled-actor.test.ts runs both
 * on the same events): the snapshots (status, value, context, output, error), the order of deferred actions,
 * emitted events and observer notifications, events sent during a transition processed after it in order, events
 * sent before the start processed at the start, events sent to a stopped or finished actor ignored, an action that
 * throws making an error snapshot reported to observers' `error` (and, with no observer to take it, thrown
 * asynchronously as XState does), and `stop()` making a stopped snapshot and completing the observers.
 *
 * What it leaves out, because such machines do not need it: an actor system (`system` is a shared stand-in with
 * no registry, scheduler or inspection), a parent to report done and error to, and the development tools.
 */

/** The actor logic it runs: a machine's entry points (the compiled machine, possibly wrapped by its effects). */
export interface OwnActorLogic {
  getInitialSnapshot(scope: OwnActorScope, input: unknown): ActorSnapshot;
  transition(snapshot: ActorSnapshot, event: EventObject, scope: OwnActorScope): ActorSnapshot;
  start?(snapshot: ActorSnapshot, scope: OwnActorScope): void;
  getPersistedSnapshot(snapshot: ActorSnapshot, options?: unknown): unknown;
}

/** The parts of a snapshot the actor reads. */
export interface ActorSnapshot {
  status: 'active' | 'done' | 'error' | 'stopped';
  output?: unknown;
  error?: unknown;
}

/** What XState's actor hands the actions it executes: the action's record and its implementation. */
interface ExecutableAction {
  type: string;
  info: unknown;
  params: unknown;
  exec: ((info: unknown, params: unknown) => void) | undefined;
}

type Handler = (event: EventObject) => void;

/** An observer of the actor's snapshots: any of its three callbacks, called on it. */
interface ActorObserver {
  next?: ((snapshot: unknown) => void) | undefined;
  error?: ((error: unknown) => void) | undefined;
  complete?: (() => void) | undefined;
}

const processingNotStarted = 0;
const stopEventType = 'xstate.stop';

/**
 * The system an unsystematic actor reports to: nothing inspects it, it registers nobody, and it relays an event
 * straight to its target (what a machine's `sendTo` to itself or `sendParent` would use). Shared by every such
 * actor; it holds no state.
 */
const detachedSystem = Object.freeze({
  _sendInspectionEvent: ignoreInspection,
  _relay(_source: unknown, target: { _send(event: EventObject): void }, event: EventObject): void {
    target._send(event);
  },
  _register(sessionId: string): string {
    return sessionId;
  },
  _unregister(): void {},
  get(): undefined {
    return undefined;
  },
  getAll(): Record<string, never> {
    return {};
  },
  inspect(): Subscription {
    throw new Error('An actor started without an inspector cannot be inspected later.');
  },
  scheduler: Object.freeze({
    schedule(): void {
      throw new Error('Delayed events need XState’s actor: this actor has no scheduler.');
    },
    cancel(): void {},
    cancelAll(): void {},
  }),
});

let bookedIds = 0;

/** XState's unhandled error report: thrown outside the current call stack, so the caller's step completes. */
function reportUnhandledError(error: unknown): void {
  setTimeout(() => {
    throw error;
  });
}

/**
 * The scope the machine's actions get (XState's actor scope): one object per actor, its functions on the prototype
 * (no closure per actor). Its `emit` may be replaced by the actor's owner (the run's effects take the machine's
 * commands there); whoever keeps the one it replaced calls it on the scope (`emit.call(scope, event)`), as the
 * machine's actions do (`scope.emit(event)`).
 */
export class OwnActorScope {
  declare readonly self: CompiledActor;
  /** The shared detached system, on the prototype (no field per actor). */
  declare readonly system: typeof detachedSystem;

  constructor(actor: CompiledActor) {
    this.self = actor;
  }

  get id(): string {
    return this.self.id;
  }

  get sessionId(): string {
    return this.self.sessionId;
  }

  /** Hands an emitted event to the actor's listeners (`actor.on`). */
  emit(event: EventObject): void {
    this.self._emit(event);
  }

  logger(...args: unknown[]): void {
    console.log(...args);
  }

  defer(fn: () => void): void {
    const self = this.self;
    const deferred = self._deferred;
    if (deferred === undefined) self._deferred = [fn];
    else deferred.push(fn);
  }

  stopChild(child: AnyActorRef): void {
    throw new Error(`Cannot stop child actor ${child.id} of ${this.id} because it is not a child`);
  }

  actionExecutor(action: ExecutableAction): void {
    const self = this.self;
    if (self._processingStatus === processingRunning) runAction(action);
    else this.defer(() => runAction(action));
  }
}

/** The warning of XState's development build for an event sent to a stopped actor. */
function warnStopped(actor: CompiledActor, event: EventObject): void {
  let text: string;
  try {
    text = JSON.stringify(event);
  } catch {
    text = String(event);
  }
  console.warn(
    `Event "${event.type}" was sent to stopped actor "${actor.id} (${actor.sessionId})". This actor has already reached its final state, and will not transition.\nEvent: ${text}`,
  );
}

function runAction(action: ExecutableAction): void {
  action.exec?.(action.info, action.params);
}

/**
 * A node of the mailbox: the event and the one after it. The mailbox is a list of these, as XState's is, so that
 * `stop` can drop what was queued after the event in progress.
 */
interface Letter {
  value: EventObject;
  next: Letter | null;
}

export class CompiledActor {
  declare readonly logic: OwnActorLogic;
  declare readonly id: string;
  declare readonly sessionId: string;
  /** The shared detached system, on the prototype (no field per actor). */
  declare readonly system: typeof detachedSystem;
  declare readonly _actorScope: OwnActorScope;
  declare _snapshot: ActorSnapshot;
  declare _processingStatus: number;
  /**
   * Actions and emissions a step defers to its end (run when its snapshot is taken): made by the step that defers
   * and dropped once run, so that a run waiting between steps holds no list.
   */
  declare _deferred: (() => void)[] | undefined;
  /**
   * The first observer (a run's own, subscribed before the start), kept in a field: a set per actor costs a table.
   * `null` once it unsubscribed: later observers go to `observers`, so the order stays the order of subscription.
   */
  declare private firstObserver: ActorObserver | null | undefined;
  /** The observers after the first, in the order they subscribed; made for the second. */
  declare private observers: Set<ActorObserver> | undefined;
  declare private listeners: Map<string, Set<Handler>> | undefined;
  /** The event in progress (or the first waiting for the start) and the last queued; null when idle. */
  declare private current: Letter | null;
  declare private last: Letter | null;
  /** Whether queued events are processed (from the end of the start on). */
  declare private mailboxActive: boolean;

  constructor(logic: OwnActorLogic, options: { input?: unknown; id?: string } = {}) {
    this.logic = logic;
    this.sessionId = `o:${bookedIds++}`;
    this.id = options.id ?? this.sessionId;
    this.firstObserver = undefined;
    this.observers = undefined;
    this.listeners = undefined;
    this._processingStatus = processingNotStarted;
    this._deferred = undefined;
    this.current = null;
    this.last = null;
    this.mailboxActive = false;
    this._actorScope = new OwnActorScope(this);
    try {
      this._snapshot = logic.getInitialSnapshot(this._actorScope, options.input);
    } catch (error) {
      this._snapshot = { status: 'error', output: undefined, error };
    }
  }

  /** The actor itself, as XState's `ref`. */
  get ref(): this {
    return this;
  }

  /** No parent: such an actor reports its end to its observers only. */
  get _parent(): undefined {
    return undefined;
  }

  getSnapshot(): ActorSnapshot {
    return this._snapshot;
  }

  getPersistedSnapshot(options?: unknown): unknown {
    return this.logic.getPersistedSnapshot(this._snapshot, options);
  }

  subscribe(
    next: ActorObserver | ((snapshot: unknown) => void),
    error?: (error: unknown) => void,
    complete?: () => void,
  ): Subscription {
    let observer: ActorObserver;
    if (typeof next !== 'object') observer = { next, error, complete };
    else if (this.firstObserver === next || this.observers?.has(next))
      // Subscribed again: told again, as XState's actor tells each subscription (each unsubscribes on its own).
      observer = {
        next: next.next?.bind(next),
        error: next.error?.bind(next),
        complete: next.complete?.bind(next),
      };
    else observer = next;
    if (this._processingStatus !== processingStopped) this.addObserver(observer);
    else if (this._snapshot.status === 'done') {
      try {
        observer.complete?.();
      } catch (thrown) {
        reportUnhandledError(thrown);
      }
    } else if (this._snapshot.status === 'error') {
      const failure = this._snapshot.error;
      if (!observer.error) reportUnhandledError(failure);
      else
        try {
          observer.error(failure);
        } catch (thrown) {
          reportUnhandledError(thrown);
        }
    }
    // A subscription ends once: the same observer subscribed again later is another subscription.
    let subscribed = true;
    return {
      unsubscribe: () => {
        if (subscribed) this.removeObserver(observer);
        subscribed = false;
      },
    };
  }

  private addObserver(observer: ActorObserver): void {
    if (this.firstObserver === undefined) this.firstObserver = observer;
    else if (this.observers === undefined) this.observers = new Set([observer]);
    else this.observers.add(observer);
  }

  private removeObserver(observer: ActorObserver): void {
    if (this.firstObserver === observer) this.firstObserver = null;
    else this.observers?.delete(observer);
  }

  /** Listens to the events the machine emits of one type (`*`: of every type). */
  on(type: string, handler: Handler): Subscription {
    this.listeners ??= new Map();
    let set = this.listeners.get(type);
    if (!set) {
      set = new Set();
      this.listeners.set(type, set);
    }
    const wrapped = handler.bind(undefined);
    set.add(wrapped);
    return { unsubscribe: () => set.delete(wrapped) };
  }

  /** The emit of the actor's scope: the listeners of the event's type, then those of every type. */
  _emit(event: EventObject): void {
    const listeners = this.listeners;
    if (!listeners) return;
    const typed = listeners.get(event.type);
    const wildcard = listeners.get('*');
    if (!typed && !wildcard) return;
    for (const handler of [...(typed ?? []), ...(wildcard ?? [])]) {
      try {
        handler(event);
      } catch (error) {
        reportUnhandledError(error);
      }
    }
  }

  start(): this {
    if (this._processingStatus === processingRunning) return this;
    this._processingStatus = processingRunning;
    const status = this._snapshot.status;
    if (status === 'done') {
      this.update(this._snapshot);
      return this;
    }
    if (status === 'error') {
      this.fail(this._snapshot.error);
      return this;
    }
    if (this.logic.start) {
      try {
        this.logic.start(this._snapshot, this._actorScope);
      } catch (error) {
        this._snapshot = { ...this._snapshot, status: 'error', error };
        this.fail(error);
        return this;
      }
    }
    this.update(this._snapshot);
    this.mailboxActive = true;
    this.flush();
    return this;
  }

  send(event: EventObject): void {
    // XState's development build refuses an event given as a string (its production build fails later).
    if (xstateDevelopmentBuild && typeof event === 'string')
      throw new Error(`Only event objects may be sent to actors; use .send({ type: "${event}" }) instead`);
    this._send(event);
  }

  /** Queues the event; processes the queue unless an event is in progress or the actor has not started. */
  _send(event: EventObject): void {
    if (this._processingStatus === processingStopped) {
      if (xstateDevelopmentBuild) warnStopped(this, event);
      return;
    }
    const letter: Letter = { value: event, next: null };
    if (this.current) {
      (this.last as Letter).next = letter;
      this.last = letter;
      return;
    }
    this.current = letter;
    this.last = letter;
    if (this.mailboxActive) this.flush();
  }

  stop(): this {
    return this._stop();
  }

  _stop(): this {
    if (this._processingStatus === processingStopped) return this;
    this.clearMailbox();
    if (this._processingStatus === processingNotStarted) {
      this._processingStatus = processingStopped;
      return this;
    }
    this._send({ type: stopEventType });
    return this;
  }

  toJSON(): { xstate$$type: number; id: string } {
    return { xstate$$type: 1, id: this.id };
  }

  private flush(): void {
    while (this.current) {
      const consumed = this.current;
      this.process(consumed.value);
      this.current = consumed.next;
    }
    this.last = null;
  }

  /** Drops the events queued after the one in progress. */
  private clearMailbox(): void {
    if (this.current) {
      this.current.next = null;
      this.last = this.current;
    }
  }

  private process(event: EventObject): void {
    let next: ActorSnapshot;
    try {
      next = this.logic.transition(this._snapshot, event, this._actorScope);
    } catch (error) {
      this._snapshot = { ...this._snapshot, status: 'error', error };
      this.fail(error);
      return;
    }
    this.update(next);
    if (event.type === stopEventType) {
      this.stopProcedure();
      this.complete();
    }
  }

  /** Takes a step's snapshot: runs what the step deferred, then tells the observers. */
  private update(snapshot: ActorSnapshot): void {
    this._snapshot = snapshot;
    const deferred = this._deferred;
    if (deferred !== undefined) {
      let fn: (() => void) | undefined;
      // biome-ignore lint/suspicious/noAssignInExpressions: a deferred function may defer more (XState's loop).
      while ((fn = deferred.shift())) {
        try {
          fn();
        } catch (error) {
          deferred.length = 0;
          this._snapshot = { ...snapshot, status: 'error', error };
        }
      }
      if (this._deferred === deferred) this._deferred = undefined;
    }
    const status = this._snapshot.status;
    if (status === 'active' || status === 'done') {
      // The first observer, then the others: a set's order, observers subscribed meanwhile included.
      const first = this.firstObserver;
      if (first)
        try {
          first.next?.(snapshot);
        } catch (error) {
          reportUnhandledError(error);
        }
      const observers = this.observers;
      if (observers)
        for (const observer of observers) {
          try {
            observer.next?.(snapshot);
          } catch (error) {
            reportUnhandledError(error);
          }
        }
      if (status === 'done') {
        this.stopProcedure();
        this.complete();
      }
    } else if (status === 'error') this.fail(this._snapshot.error);
  }

  private fail(error: unknown): void {
    this.stopProcedure();
    this.reportError(error);
  }

  private stopProcedure(): void {
    if (this._processingStatus !== processingRunning) return;
    this.clearMailbox();
    this._processingStatus = processingStopped;
  }

  private complete(): void {
    const first = this.firstObserver;
    if (first)
      try {
        first.complete?.();
      } catch (error) {
        reportUnhandledError(error);
      }
    const observers = this.observers;
    if (observers)
      for (const observer of observers) {
        try {
          observer.complete?.();
        } catch (error) {
          reportUnhandledError(error);
        }
      }
    this.clearObservers();
  }

  private clearObservers(): void {
    this.firstObserver = null;
    this.observers = undefined;
    this.listeners = undefined;
  }

  private reportError(error: unknown): void {
    const first = this.firstObserver;
    const observers = this.observers;
    if (!first && (observers === undefined || observers.size === 0)) {
      reportUnhandledError(error);
      this.listeners = undefined;
      return;
    }
    let unreported = false;
    if (first) {
      unreported = !first.error;
      try {
        first.error?.(error);
      } catch (thrown) {
        reportUnhandledError(thrown);
      }
    }
    // Read after the first observer's call: observers it subscribed are told too, as in a set.
    const more = this.observers;
    if (more)
      for (const observer of more) {
        unreported ||= !observer.error;
        try {
          observer.error?.(error);
        } catch (thrown) {
          reportUnhandledError(thrown);
        }
      }
    this.clearObservers();
    if (unreported) reportUnhandledError(error);
  }
}

// Every actor and scope shares the one detached system: a property of their prototypes, read as a field would be.
Object.defineProperty(OwnActorScope.prototype, 'system', { value: detachedSystem });
Object.defineProperty(CompiledActor.prototype, 'system', { value: detachedSystem });

// Interop with observable libraries, under the key XState's actor uses (`Symbol.observable` where it exists).
Object.defineProperty(
  CompiledActor.prototype,
  (Symbol as { observable?: symbol }).observable ?? '@@observable',
  {
    value(this: CompiledActor) {
      return this;
    },
  },
);

/**
 * A CompiledActor for `logic` when it may have one: the logic is a compiled machine (on XState's interpreter,
 * XState's actor runs it). Undefined otherwise. The caller decides that nothing inspects the run.
 */
export function ownActorFor(logic: object, input: unknown): CompiledActor | undefined {
  if (!isCompiledMachine(logic)) return undefined;
  return new CompiledActor(logic as unknown as OwnActorLogic, { input });
}
