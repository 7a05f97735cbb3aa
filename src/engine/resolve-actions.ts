import { type AnyActorLogic, type AnyActorRef, createActor } from 'xstate';
import {
  type Children,
  type EngineEvent,
  type EngineMachine,
  type EngineScope,
  type EngineSnapshot,
  processingStopped,
} from './xstate-shapes.ts';

/**
 * What one microstep changes while its actions run. XState copies the whole snapshot (state value, tags and all)
 * after every `assign`; the engine keeps the changing parts here and builds one snapshot when the microstep ends.
 */
export interface WorkingState {
  context: Record<string, unknown>;
  children: Children;
  status: EngineSnapshot['status'];
  output: unknown;
  error: unknown;
  /** Whether any action replaced the snapshot (XState's microstep then returns a new snapshot object). */
  changed: boolean;
}

/** The microstep's inputs shared by every action it resolves. */
export interface ActionRun {
  scope: EngineScope;
  event: EngineEvent;
  internalQueue: EngineEvent[];
  /** A real snapshot of the working state, for XState's own built-in action resolvers. */
  snapshot(): EngineSnapshot;
  working: WorkingState;
  machine: EngineMachine;
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

type Assigner = (args: Record<string, unknown>, params: unknown) => Record<string, unknown>;

/**
 * XState's resolveActionsAndContext: runs a list of actions in order against the working state. `assign` is done
 * here directly (the same partial update and `Object.assign` copy of the context, without a snapshot copy); every
 * other built-in (sendTo, raise, spawnChild, stopChild, emit, ...) goes through XState's own resolver and executor,
 * and custom actions through the actor's action executor, so inspection and deferral behave exactly as in XState.
 */
export function resolveActions(
  run: ActionRun,
  actions: readonly unknown[],
  deferredActorIds?: string[],
): void {
  const retries: [BuiltinAction, unknown][] | undefined = deferredActorIds ? [] : undefined;
  resolveList(run, actions, deferredActorIds, retries);
  if (retries && retries.length > 0) {
    const snapshot = run.snapshot();
    for (const [action, params] of retries) action.retryResolve?.(run.scope, snapshot, params);
  }
}

function resolveList(
  run: ActionRun,
  actions: readonly unknown[],
  deferredActorIds: string[] | undefined,
  retries: [BuiltinAction, unknown][] | undefined,
): void {
  const { scope, event, working, machine } = run;
  for (const action of actions) {
    const isInline = typeof action === 'function';
    const resolved = (
      isInline
        ? action
        : machine.implementations.actions[
            typeof action === 'string' ? action : (action as { type: string }).type
          ]
    ) as (((info: unknown, params: unknown) => void) & Partial<BuiltinAction>) | undefined;
    const args = { context: working.context, event, self: scope.self, system: scope.system };
    let params: unknown;
    if (
      !isInline &&
      typeof action !== 'string' &&
      action &&
      typeof action === 'object' &&
      'params' in action
    ) {
      const raw = (action as { params: unknown }).params;
      params = typeof raw === 'function' ? raw({ context: working.context, event }) : raw;
    }
    if (!resolved || !('resolve' in resolved)) {
      scope.actionExecutor({
        type:
          typeof action === 'string'
            ? action
            : typeof action === 'object'
              ? (action as { type: string }).type
              : (action as { name?: string }).name || '(anonymous)',
        info: args,
        params,
        exec: resolved,
      });
      continue;
    }
    const builtin = resolved as BuiltinAction;
    if (builtin.type === 'xstate.assign') {
      assignContext(run, builtin.assignment, params);
      continue;
    }
    const before = run.snapshot();
    const [next, resolvedParams, nested] = builtin.resolve(scope, before, args, params, builtin, {
      internalQueue: run.internalQueue,
      deferredActorIds,
    });
    if (next !== before) adopt(working, next);
    if (builtin.retryResolve) retries?.push([builtin, resolvedParams]);
    if (builtin.execute) {
      scope.actionExecutor({
        type: builtin.type,
        info: args,
        params: resolvedParams,
        exec: builtin.execute.bind(null, scope, resolvedParams) as (info: unknown, params: unknown) => void,
      });
    }
    if (nested) resolveList(run, nested, deferredActorIds, retries);
  }
}

function adopt(working: WorkingState, snapshot: EngineSnapshot): void {
  working.context = snapshot.context;
  working.children = snapshot.children;
  working.status = snapshot.status;
  working.output = snapshot.output;
  working.error = snapshot.error;
  working.changed = true;
}

/** XState's resolveAssign: a function or a property map gives a partial update; the context is copied with it. */
function assignContext(run: ActionRun, assignment: unknown, params: unknown): void {
  const { working, scope, event } = run;
  if (!working.context)
    throw new Error(
      'Cannot assign to undefined `context`. Ensure that `context` is defined in the machine config.',
    );
  const spawned: Children = {};
  const args = {
    context: working.context,
    event,
    spawn: spawner(run, spawned),
    self: scope.self,
    system: scope.system,
  };
  let update: Record<string, unknown> = {};
  if (typeof assignment === 'function') update = (assignment as Assigner)(args, params);
  else {
    for (const key of Object.keys(assignment as object)) {
      const property = (assignment as Record<string, unknown>)[key];
      update[key] = typeof property === 'function' ? (property as Assigner)(args, params) : property;
    }
  }
  working.context = Object.assign({}, working.context, update);
  if (Object.keys(spawned).length > 0) working.children = { ...working.children, ...spawned };
  working.changed = true;
}

interface SpawnOptions {
  id?: string;
  systemId?: string;
  input?: unknown;
  syncSnapshot?: boolean;
}

/** XState's createSpawner: `spawn` inside an assigner creates a child of this actor, started after the step. */
function spawner(run: ActionRun, spawned: Children) {
  const { scope, machine, event, working } = run;
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
                context: working.context,
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
