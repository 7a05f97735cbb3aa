import { type AnyActorLogic, type AnyActorRef, createActor } from 'xstate';
import type { Configuration } from './configuration.ts';
import { ignoreInspection, inspectEmit } from './inspection-events.ts';
import {
  type Children,
  type EngineEvent,
  type EngineMachine,
  type EngineScope,
  type EngineSnapshot,
  type EngineStateNode,
  processingRunning,
  processingStopped,
} from './xstate-shapes.ts';

/** The parts of a snapshot that actions change. */
export interface WorkingState {
  context: Record<string, unknown>;
  children: Children;
  status: EngineSnapshot['status'];
  output: unknown;
  error: unknown;
}

/** Builds a real machine snapshot of a working state (the compiled machine does it). */
export interface SnapshotBuilder {
  snapshotOf(
    configuration: Configuration,
    working: WorkingState,
    nodes: readonly EngineStateNode[] | undefined,
    historyValue: Record<string, unknown>,
  ): EngineSnapshot;
}

/**
 * One microstep's actions in progress. XState copies the whole snapshot (state value, tags and all) after every
 * `assign`; here the changing parts live on this object and one snapshot is built when the microstep ends (or when
 * one of XState's own built-in resolvers needs a real snapshot to read).
 */
export class ActionRun implements WorkingState {
  // Fields are declared, not defined: each is set once in the constructor. (A defined field is set twice per
  // object, by a field initializer and then by the constructor: this object is made for every microstep.)
  declare context: Record<string, unknown>;
  declare children: Children;
  declare status: EngineSnapshot['status'];
  declare output: unknown;
  declare error: unknown;
  declare readonly machine: EngineMachine & SnapshotBuilder;
  declare readonly scope: EngineScope;
  declare readonly event: EngineEvent;
  declare readonly internalQueue: EngineEvent[];
  /** The configuration the microstep started from: intermediate snapshots keep it, as XState's do. */
  declare readonly configuration: Configuration;
  declare private readonly start: EngineSnapshot;
  /**
   * The real snapshot of the working state, while it is one: the microstep's first until an action changes the
   * working state (XState's microstep then returns a new snapshot object), undefined from a change until a real
   * snapshot is asked for. Set to undefined directly by the actions resolved here: `touch` is a call more.
   */
  declare current: EngineSnapshot | undefined;

  constructor(
    machine: EngineMachine & SnapshotBuilder,
    scope: EngineScope,
    event: EngineEvent,
    internalQueue: EngineEvent[],
    configuration: Configuration,
    start: EngineSnapshot,
  ) {
    this.machine = machine;
    this.scope = scope;
    this.event = event;
    this.internalQueue = internalQueue;
    this.configuration = configuration;
    this.start = start;
    this.context = start.context;
    this.children = start.children;
    this.status = start.status;
    this.output = start.output;
    this.error = start.error;
    this.current = start;
  }

  /** A real snapshot of the working state, for XState's own built-in action resolvers. */
  snapshot(): EngineSnapshot {
    if (!this.current)
      this.current = this.machine.snapshotOf(
        this.configuration,
        this,
        this.start._nodes,
        this.start.historyValue,
      );
    return this.current;
  }

  adopt(snapshot: EngineSnapshot): void {
    this.context = snapshot.context;
    this.children = snapshot.children;
    this.status = snapshot.status;
    this.output = snapshot.output;
    this.error = snapshot.error;
    this.current = snapshot;
  }

  /**
   * The `extra` argument of XState's built-in resolvers, made when one is called (most microsteps call none, and a
   * field for it is a store in every run's constructor).
   */
  extra(deferredActorIds: string[] | undefined): {
    internalQueue: EngineEvent[];
    deferredActorIds: string[] | undefined;
  } {
    return { internalQueue: this.internalQueue, deferredActorIds };
  }

  /** Marks the working state as changed since the last real snapshot. */
  touch(): void {
    this.current = undefined;
  }
}

type BuiltinResolve = (
  scope: EngineScope,
  snapshot: EngineSnapshot,
  args: unknown,
  params: unknown,
  action: unknown,
  extra: { internalQueue: EngineEvent[]; deferredActorIds: string[] | undefined },
) => [EngineSnapshot, unknown, unknown[] | undefined];

interface BuiltinAction {
  type: string;
  resolve: BuiltinResolve;
  retryResolve?: (scope: EngineScope, snapshot: EngineSnapshot, params: unknown) => void;
  execute?: (scope: EngineScope, params: unknown) => void;
  assignment?: unknown;
}

type Assigner = (args: AssignArgs, params: unknown) => Record<string, unknown>;

/** What resolveList does with an action, decided once per action of a machine's config (module constants). */
type ActionKind = 0 | 1 | 2 | 3 | 4 | 5;
/** A custom action (or one not found): the actor's executor runs it. */
const customAction = 0;
const assignAction = 1;
const spawnOrStopAction = 2;
const sendToAction = 3;
const emitAction = 4;
/** Any other built-in: XState's own resolver. */
const builtinAction = 5;

/**
 * An action of a machine's config with what running it needs looked up: its implementation, its kind and its
 * parameters (a value, or the function that makes them at each run). The lookups (the implementation by name, the
 * `params` and `resolve` members, the built-in's type) are made once, not at every microstep.
 */
export interface PreparedAction {
  readonly kind: ActionKind;
  /** The implementation: the inline function, the named one, or undefined when the name is not implemented. */
  readonly resolved: (((info: unknown, params: unknown) => void) & Partial<BuiltinAction>) | undefined;
  /** The action's `params` member, when it has one (a function makes the parameters at each run). */
  readonly params: unknown;
  readonly hasParams: boolean;
  /** The name the actor's executor reports a custom action under. */
  readonly name: string;
}

/** Looks up what running `action` needs (see PreparedAction). */
function prepareAction(machine: EngineMachine, action: unknown): PreparedAction {
  const isInline = typeof action === 'function';
  const resolved = (
    isInline
      ? action
      : machine.implementations.actions[
          typeof action === 'string' ? action : (action as { type: string }).type
        ]
  ) as PreparedAction['resolved'];
  const hasParams =
    !isInline && typeof action !== 'string' && !!action && typeof action === 'object' && 'params' in action;
  const params = hasParams ? (action as { params: unknown }).params : undefined;
  const name =
    typeof action === 'string'
      ? action
      : typeof action === 'object'
        ? (action as { type: string }).type
        : (action as { name?: string }).name || '(anonymous)';
  let kind: ActionKind = customAction;
  if (resolved && 'resolve' in resolved) {
    const type = (resolved as BuiltinAction).type;
    kind =
      type === 'xstate.assign'
        ? assignAction
        : type === 'xstate.spawnChild' || type === 'xstate.stopChild'
          ? spawnOrStopAction
          : type === 'xstate.sendTo'
            ? sendToAction
            : type === 'xstate.emit' && resolved.execute
              ? emitAction
              : builtinAction;
  }
  return { kind, resolved, params, hasParams, name };
}

/** The actions of a list, prepared (see PreparedAction): once per list of a machine's config. */
export function prepareActions(
  machine: EngineMachine,
  actions: readonly unknown[],
): readonly PreparedAction[] {
  return actions.map((action) => prepareAction(machine, action));
}

/**
 * XState's resolveActionsAndContext: runs a list of actions in order against the working state. `assign` is done
 * here directly (the same partial update and `Object.assign` copy of the context, without a snapshot copy), and so
 * are the built-ins whose resolution reads no snapshot (the usual sendTo, emit, spawnChild, stopChild); every other
 * built-in (raise, a delayed send, ...) goes through XState's own resolver and executor,
 * and custom actions through the actor's action executor, so inspection and deferral behave exactly as in XState.
 */
export function resolveActions(
  run: ActionRun,
  actions: readonly unknown[],
  deferredActorIds?: string[],
): void {
  resolvePrepared(run, prepareActions(run.machine, actions), deferredActorIds);
}

/** resolveActions for a list prepared beforehand (a microstep's cached list of actions). */
export function resolvePrepared(
  run: ActionRun,
  actions: readonly PreparedAction[],
  deferredActorIds?: string[],
): void {
  const retries: [BuiltinAction, unknown][] | undefined = deferredActorIds ? [] : undefined;
  resolveList(run, actions, deferredActorIds, retries);
  if (retries && retries.length > 0) {
    const snapshot = run.snapshot();
    for (const retry of retries) retry[0].retryResolve?.(run.scope, snapshot, retry[1]);
  }
}

/** resolvePrepared for a list whose sends wait for no actor (no `deferredActorIds`): no built-in is retried. */
export function resolveUndeferred(run: ActionRun, actions: readonly PreparedAction[]): void {
  resolveList(run, actions, undefined, undefined);
}

function resolveList(
  run: ActionRun,
  actions: readonly PreparedAction[],
  deferredActorIds: string[] | undefined,
  retries: [BuiltinAction, unknown][] | undefined,
): void {
  const { scope, event } = run;
  // An indexed loop: a microstep runs in V8's baseline tiers for a while, where `for...of` allocates (and where
  // every property read is an inline-cache call: what is read twice is read once into a local).
  // The loop keeps only the most frequent kinds (custom actions and `assign`); the other built-ins are resolved by
  // a function of their own. V8's optimizing compiler compiles this loop early in a process's life, and its cost
  // grows with the loop's bytecode: a short loop is a short compile.
  const count = actions.length;
  for (let index = 0; index < count; index++) {
    const prepared = actions[index] as PreparedAction;
    const resolved = prepared.resolved;
    let params: unknown;
    if (prepared.hasParams) {
      const raw = prepared.params;
      params = typeof raw === 'function' ? raw({ context: run.context, event }) : raw;
    }
    const kind = prepared.kind;
    if (kind === customAction) {
      const args = { context: run.context, event, self: scope.self, system: scope.system };
      scope.actionExecutor({ type: prepared.name, info: args, params, exec: resolved });
    } else if (kind === assignAction) {
      assignContext(run, (resolved as BuiltinAction).assignment, params);
    } else resolveBuiltin(run, kind, resolved as BuiltinAction, params, deferredActorIds, retries);
  }
}

/** The context before a machine's first assign, when its config gives the context as a function. */
export const noContext: Record<string, unknown> = Object.freeze({});

/** One built-in action other than `assign`, resolved against the working state and handed to the executor. */
function resolveBuiltin(
  run: ActionRun,
  kind: ActionKind,
  builtin: BuiltinAction,
  params: unknown,
  deferredActorIds: string[] | undefined,
  retries: [BuiltinAction, unknown][] | undefined,
): void {
  const scope = run.scope;
  const args = { context: run.context, event: run.event, self: scope.self, system: scope.system };
  if (kind === spawnOrStopAction) {
    // Done here as XState's resolvers do it, minus their full snapshot copy (every run spawns and stops one).
    const resolvedParams =
      builtin.type === 'xstate.spawnChild'
        ? spawnChild(run, builtin as unknown as SpawnChildAction, args)
        : stopChild(run, builtin as unknown as StopChildAction, args, params);
    run.touch();
    executeResolved(scope, builtin, args, resolvedParams);
    return;
  }
  if (kind === sendToAction) {
    // The usual send (to a child by its id, without a delay): resolved from the working state, no real snapshot.
    const resolvedParams = sendToChild(
      run,
      builtin as unknown as SendToAction,
      args,
      params,
      deferredActorIds,
    );
    if (resolvedParams && builtin.execute) {
      executeResolved(scope, builtin, args, resolvedParams);
      return;
    }
  }
  if (kind === emitAction) {
    // XState's resolveEmit reads nothing of the snapshot: the event (or what builds it), emitted after the step.
    const emitted = (builtin as unknown as EmitAction).event;
    const event = typeof emitted === 'function' ? (emitted as EventBuilder)(args, params) : emitted;
    const self = args.self as unknown as { _processingStatus: number; _actorScope: unknown };
    if (self._processingStatus === processingRunning && self._actorScope === scope) {
      // What the executor of a running actor does for it: reports the action, and its execution defers the
      // emission to the end of the step (no action record, bound function or executor closure in between).
      // A scope of another making (XState's pure transition functions, a test's) gets the action through its
      // executor.
      // Asked here too: a system nothing inspects (the own actor's) then costs no call.
      if (scope.system._sendInspectionEvent !== ignoreInspection) inspectEmit(scope, event);
      scope.defer(() => scope.emit(event));
    } else executeResolved(scope, builtin, args, { event });
    return;
  }
  const before = run.snapshot();
  const resolution = builtin.resolve(scope, before, args, params, builtin, run.extra(deferredActorIds));
  const resolvedParams = resolution[1];
  const nested = resolution[2];
  if (resolution[0] !== before) run.adopt(resolution[0]);
  if (builtin.retryResolve) retries?.push([builtin, resolvedParams]);
  if (builtin.execute) executeResolved(scope, builtin, args, resolvedParams);
  if (nested) resolveList(run, prepareActions(run.machine, nested), deferredActorIds, retries);
}

/** XState's resolveAssign: a function or a property map gives a partial update; the context is copied with it. */
/** Hands a built-in action resolved here to the actor's executor, as XState's own resolution would. */
function executeResolved(scope: EngineScope, builtin: BuiltinAction, args: unknown, params: unknown): void {
  scope.actionExecutor({
    type: builtin.type,
    info: args,
    params,
    exec: builtin.execute?.bind(null, scope, params) as (info: unknown, params: unknown) => void,
  });
}

function assignContext(run: ActionRun, assignment: unknown, params: unknown): void {
  const context = run.context;
  if (!context)
    throw new Error(
      'Cannot assign to undefined `context`. Ensure that `context` is defined in the machine config.',
    );
  const args = new AssignArgs(run, context);
  let update: Record<string, unknown>;
  if (typeof assignment === 'function') update = (assignment as Assigner)(args, params);
  else {
    update = {};
    for (const key of Object.keys(assignment as object)) {
      const property = (assignment as Record<string, unknown>)[key];
      update[key] = typeof property === 'function' ? (property as Assigner)(args, params) : property;
    }
  }
  // A spread, where XState calls `Object.assign({}, ...)`: the same own enumerable properties in the same order, in
  // a copy of the context's layout (its fields in the object), where `Object.assign` onto `{}` keeps four in the
  // object and the rest in a property array of its own: one object per step instead of two.
  // The context of a machine whose config gives a function is made from `noContext`: a copy of the function's
  // object, with its layout. An own `__proto__` key (a context read back from JSON) is where the two differ:
  // `Object.assign` makes it the copy's prototype, a spread an own key; XState's copy is kept then.
  let copy = context === noContext ? { ...update } : { ...context, ...update };
  if (Object.hasOwn(copy, '__proto__')) copy = Object.assign({}, context, update);
  run.context = copy;
  // Most assigners never spawn: the record is absent, and only a spawn makes it.
  if (args[spawnedOfArgs] !== undefined) {
    const spawned = spawnedChildren(args);
    if (spawned) run.children = { ...run.children, ...spawned };
  }
  run.current = undefined;
}

/** Where an assigner's arguments keep their run, and the children spawned during the assign (see AssignArgs). */
const runOfArgs: unique symbol = Symbol('run');
const spawnedOfArgs: unique symbol = Symbol('spawned');

/**
 * An assigner's arguments, as XState builds them (context, event, spawn, self, system). `spawn` is made on first
 * use, from the prototype: most assigners never spawn, and a closure plus a children record per assign was a
 * measurable share of a step's garbage. (So `spawn` is not an own property: spreading the arguments drops it.) The
 * run and the spawned children are kept under symbols, which `Object.keys`, `for...in` and JSON do not list: private
 * fields (`#run`) cost an initializer call per object, and one of these is made per assign.
 */
class AssignArgs {
  // The fields are declared, not defined: set once in the constructor (see ActionRun).
  declare readonly context: Record<string, unknown>;
  declare readonly event: EngineEvent;
  declare readonly self: EngineScope['self'];
  declare readonly system: EngineScope['system'];
  declare readonly [runOfArgs]: ActionRun;
  /** The children spawned during this assign: set by the first `spawn`, absent otherwise. */
  declare [spawnedOfArgs]: Children | undefined;

  constructor(run: ActionRun, context: Record<string, unknown>) {
    const scope = run.scope;
    this.context = context;
    this.event = run.event;
    this.self = scope.self;
    this.system = scope.system;
    this[runOfArgs] = run;
  }

  get spawn() {
    this[spawnedOfArgs] ??= {};
    return spawner(this[runOfArgs], this[spawnedOfArgs]);
  }
}

/** The children spawned during the assign these arguments were made for, if any. */
function spawnedChildren(args: AssignArgs): Children | undefined {
  const spawned = args[spawnedOfArgs];
  return spawned !== undefined && Object.keys(spawned).length > 0 ? spawned : undefined;
}

interface SpawnChildAction {
  id: string | ((args: unknown) => string);
  systemId?: string;
  src: string | AnyActorLogic;
  input?: unknown;
  syncSnapshot?: boolean;
}

/** XState's resolveSpawn: creates the child (not started: its execution defers that) and lists it in children. */
function spawnChild(
  run: ActionRun,
  action: SpawnChildAction,
  args: { context: unknown; event: EngineEvent },
): { id: unknown; systemId: unknown; actorRef: AnyActorRef | undefined; src: unknown; input: unknown } {
  const { id, systemId, src, input, syncSnapshot } = action;
  const logic = typeof src === 'string' ? referencedActor(run.machine, src) : src;
  const resolvedId = typeof id === 'function' ? id(args) : id;
  let actorRef: AnyActorRef | undefined;
  let resolvedInput: unknown;
  if (logic) {
    resolvedInput =
      typeof input === 'function'
        ? (input as (args: unknown) => unknown)({
            context: run.context,
            event: args.event,
            self: run.scope.self,
          })
        : input;
    actorRef = createActor(logic, {
      id: resolvedId,
      src,
      parent: run.scope.self,
      syncSnapshot,
      systemId,
      input: resolvedInput,
    } as never);
  }
  run.children = { ...run.children, [resolvedId]: actorRef };
  return { id, systemId, actorRef, src, input: resolvedInput };
}

interface SendToAction {
  to: unknown;
  event: unknown;
  id: unknown;
  delay: unknown;
}

/**
 * XState's resolveSendTo for the send every agent step makes: an event (or the function that builds it) sent without
 * a delay to a child named by its id that is already in the working state's children. It gives the same parameters
 * (target, its id, event, id, delay); anything else (a delay, a special or deferred target, a target given as a
 * function or an actor, a missing child) is left to XState's resolver (undefined), which needs a real snapshot of the
 * working state.
 */
function sendToChild(
  run: ActionRun,
  action: SendToAction,
  args: unknown,
  params: unknown,
  deferredActorIds: string[] | undefined,
): { to: AnyActorRef; targetId: string; event: unknown; id: unknown; delay: undefined } | undefined {
  const { to, event, id, delay } = action;
  if (typeof to !== 'string' || delay !== undefined || typeof event === 'string') return undefined;
  if (to.startsWith('#_') || deferredActorIds?.includes(to)) return undefined;
  const target = Object.hasOwn(run.children, to) ? run.children[to] : undefined;
  if (!target) return undefined;
  return {
    to: target as AnyActorRef,
    targetId: to,
    event: typeof event === 'function' ? event(args, params) : event,
    id,
    delay: undefined,
  };
}

interface EmitAction {
  event: unknown;
}

type EventBuilder = (args: unknown, params: unknown) => unknown;

interface StopChildAction {
  actorRef: string | AnyActorRef | ((args: unknown, params: unknown) => string | AnyActorRef | undefined);
}

/** XState's resolveStop: the child leaves children (its execution stops it). */
function stopChild(
  run: ActionRun,
  action: StopChildAction,
  args: unknown,
  params: unknown,
): AnyActorRef | undefined {
  const given = typeof action.actorRef === 'function' ? action.actorRef(args, params) : action.actorRef;
  const actorRef = typeof given === 'string' ? run.children[given] : given;
  if (actorRef) {
    const children = { ...run.children };
    delete children[actorRef.id];
    run.children = children;
  }
  return actorRef;
}

interface SpawnOptions {
  id?: string;
  systemId?: string;
  input?: unknown;
  syncSnapshot?: boolean;
}

/** XState's createSpawner: `spawn` inside an assigner creates a child of this actor, started after the step. */
function spawner(run: ActionRun, spawned: Children) {
  const { scope, machine, event } = run;
  return (src: string | AnyActorLogic, options?: SpawnOptions): AnyActorRef => {
    let actorRef: AnyActorRef;
    if (typeof src === 'string') {
      const logic = referencedActor(machine, src);
      if (!logic) throw new Error(`Actor logic '${src}' not implemented in machine '${machine.id}'`);
      actorRef = createActor(logic, {
        id: options?.id,
        parent: scope.self,
        syncSnapshot: options?.syncSnapshot,
        input:
          typeof options?.input === 'function'
            ? (options.input as (args: unknown) => unknown)({
                context: run.context,
                event,
                self: scope.self,
              })
            : options?.input,
        src,
        systemId: options?.systemId,
      } as never);
    } else {
      actorRef = createActor(src, {
        id: options?.id,
        parent: scope.self,
        syncSnapshot: options?.syncSnapshot,
        input: options?.input,
        src,
        systemId: options?.systemId,
      } as never);
    }
    spawned[actorRef.id] = actorRef;
    scope.defer(() => {
      if ((actorRef as unknown as { _processingStatus: number })._processingStatus === processingStopped)
        return;
      actorRef.start();
    });
    return actorRef;
  };
}

/** XState's resolveReferencedActor: a name from the machine's `actors`, or an inline invoke's generated source. */
function referencedActor(machine: EngineMachine, src: string): AnyActorLogic | undefined {
  const match = src.match(/^xstate\.invoke\.(\d+)\.(.*)/);
  if (!match) return machine.implementations.actors[src] as AnyActorLogic | undefined;
  const [, index, nodeId] = match as unknown as [string, string, string];
  const invoke = machine.getStateNodeById(nodeId).config.invoke;
  const config = (Array.isArray(invoke) ? invoke[Number(index)] : invoke) as { src: AnyActorLogic };
  return config.src;
}
