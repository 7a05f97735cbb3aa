import * as xstate from 'xstate';
import { type AnyStateMachine, assign, StateMachine, spawnChild, stopChild } from 'xstate';
import {
  type Configuration,
  Configurations,
  type EnteredNode,
  ReadonlyTags,
  type TransitionPlan,
} from './configuration.ts';
import { GuardTests } from './guards.ts';
import { ignoreInspection, inspectMicrostep } from './inspection-events.ts';
import { chosenInterpreter, type InterpreterStatus, processInterpreter } from './interpreter-choice.ts';
import {
  ActionRun,
  noContext,
  type PreparedAction,
  prepareActions,
  resolveActions,
  resolvePrepared,
  resolveUndeferred,
  type SnapshotBuilder,
  type WorkingState,
} from './resolve-actions.ts';
import { assessRuntime } from './runtime-gate.ts';
import { CandidateTable, selectEventless, selectTransition } from './select-transition.ts';
import { xstateDevelopmentBuild } from './xstate-build.ts';
import type {
  Children,
  EngineEvent,
  EngineMachine,
  EngineScope,
  EngineSnapshot,
  EngineStateNode,
  EngineTransition,
} from './xstate-shapes.ts';

/**
 * XState's interpreter, specialised for machines without parallel or history states.
 *
 * XState recomputes a microstep's structure from scratch every time: the transition domain, the exit and entry sets,
 * the new state value and tags, and a full snapshot copy after every `assign`. On the agent loop's hot path that is
 * most of a step's cost (BENCHMARKS.md). A compiled machine is the same `StateMachine`, built from the same config
 * and implementations, run by XState's own `Actor`; only `transition` and `getInitialSnapshot` differ: they follow
 * XState's macrostep and microstep algorithm step for step (guards, action order, deferred sends, spawned and stopped
 * children, done states and output, eventless transitions, raised events, inspection events), with each
 * configuration's state value, tags and each transition's exit and entry sets computed once. Snapshots are ordinary
 * machine snapshots, except that those of one configuration share their state value (frozen) and tag set
 * (read-only), where XState builds new ones each time. `test/engine/` runs every generated path of Troupe's machines,
 * hand-written machines of every feature and random statecharts on both interpreters and requires the same
 * snapshots, children, actions, emitted events and inspection events after every event.
 *
 * `xstate.stop`, `xstate.init`, an event typed `*` and snapshots that are not active go to XState's own
 * `transition`, and `microstep` is XState's own.
 *
 * The compiled interpreter runs only on an xstate that passes the runtime check (runtime-gate.ts: the private
 * members it uses, and a canary machine run on both interpreters), made once per process at the first call; when
 * it fails, or with TROUPE_INTERPRETER=xstate, the machine is returned unchanged and runs on XState's interpreter
 * (interpreter-choice.ts). A machine with parallel or history states is refused either way.
 */
export function compileMachine<TMachine extends AnyStateMachine>(machine: TMachine): TMachine {
  assertCompilable((machine as unknown as EngineMachine).root);
  if (processInterpreter(checkLoadedXState) === 'xstate') return machine;
  return new CompiledMachine(machine.config, machine.implementations) as unknown as TMachine;
}

/** The runtime check on the xstate this module loaded, with this module's compiled interpreter. */
function checkLoadedXState() {
  return assessRuntime(
    xstate as never,
    (machine) => new CompiledMachine(machine.config, machine.implementations) as unknown as AnyStateMachine,
  );
}

/**
 * The interpreter this process runs Troupe's machines on, and why: `compiled`, or `xstate` with the reason (the
 * TROUPE_INTERPRETER setting, or what the check of the loaded xstate found). Makes the choice if no machine was
 * compiled yet.
 */
export function interpreterStatus(): InterpreterStatus {
  processInterpreter(checkLoadedXState);
  return chosenInterpreter() as InterpreterStatus;
}

/** Whether a machine runs on the compiled interpreter. */
export function isCompiledMachine(machine: unknown): boolean {
  return machine instanceof CompiledMachine;
}

function assertCompilable(node: EngineStateNode): void {
  if (node.type === 'parallel' || node.type === 'history')
    throw new Error(
      `compileMachine: state '${node.id}' is ${node.type}; only compound, atomic and final states are compiled.`,
    );
  for (const child of Object.values(node.states)) assertCompilable(child);
}

type MachineBase = EngineMachine & {
  config: AnyStateMachine['config'];
  transition(snapshot: EngineSnapshot, event: EngineEvent, scope: EngineScope): EngineSnapshot;
  getInitialSnapshot(scope: EngineScope, input: unknown): EngineSnapshot;
  provide(implementations: object): MachineBase;
  resolveState(config: { value: unknown; context: unknown }): EngineSnapshot;
};

const Base = StateMachine as unknown as new (config: unknown, implementations: unknown) => MachineBase;

interface EntryActions {
  actions: readonly PreparedAction[];
  withInitial: readonly PreparedAction[];
  invokeIds: string[] | undefined;
}

/** The snapshot methods XState attaches to every machine snapshot (shared functions that read `this`). */
type SnapshotMethods = Pick<EngineSnapshot, 'matches' | 'hasTag' | 'can' | 'getMeta' | 'toJSON'>;

const stopEvent = 'xstate.stop';
const initEvent = 'xstate.init';

class CompiledMachine extends Base implements SnapshotBuilder {
  private readonly configurations = new Configurations();
  private readonly candidates = new CandidateTable(new GuardTests(this.implementations.guards));
  /** Per state node: its exit actions plus stopping its invoked actors (XState's exitStates). */
  private readonly exitActions = new Map<EngineStateNode, readonly PreparedAction[]>();
  /** Per transition: its own actions, prepared (used when a microstep resolves node by node). */
  private readonly transitionActions = new Map<EngineTransition, readonly PreparedAction[]>();
  /** Per state node: its entry actions plus starting its invoked actors, with or without its initial actions. */
  private readonly entryActions = new Map<EngineStateNode, EntryActions>();
  /** Built at the first start: a machine whose `initial` names no state fails its actor then, as in XState. */
  private initialTransition: EngineTransition | undefined;
  private readonly contextAssign: unknown;
  private methods: SnapshotMethods | undefined;
  /** Whether `maxIterations` allows the one round of `settle` that finds nothing to do (it is at least 1). */
  private readonly settlesInOneRound: boolean;

  constructor(config: unknown, implementations: unknown) {
    super(config, implementations);
    this.settlesInOneRound = (this.options.maxIterations ?? Number.POSITIVE_INFINITY) >= 1;
    const context = this.config.context;
    this.contextAssign =
      typeof context === 'function'
        ? assign(({ spawn, event, self }) =>
            (context as (args: unknown) => Record<string, unknown>)({
              spawn,
              input: (event as EngineEvent).input,
              self,
            }),
          )
        : undefined;
  }

  override provide(implementations: object): MachineBase {
    const provided = super.provide(implementations);
    return new CompiledMachine(provided.config, provided.implementations);
  }

  override transition(snapshot: EngineSnapshot, event: EngineEvent, scope: EngineScope): EngineSnapshot {
    // XState's own path for stop and init, for snapshots that are not active, and for an event typed '*' (which
    // XState's development build refuses).
    // Each member read once into a local: a step runs this in V8's baseline tiers for a while, where every property
    // read is an inline-cache call.
    const type = event.type;
    if (type === stopEvent || type === initEvent || type === '*' || snapshot.status !== 'active')
      return super.transition(snapshot, event, scope);
    const configurations = this.configurations;
    const configuration = configurations.of(snapshot._nodes);
    const candidates = this.candidates;
    const transition = selectTransition(configuration, candidates, event, snapshot);
    if (!transition && type.startsWith('xstate.error.actor')) return this.fail(snapshot, event, scope);
    const internalQueue: EngineEvent[] = [];
    const plan = transition ? configurations.plan(configuration, transition, false) : undefined;
    const next = this.step(transition, plan, snapshot, configuration, event, scope, internalQueue);
    // Asked here too: a system nothing inspects (the own actor's) then costs no call.
    if (scope.system._sendInspectionEvent !== ignoreInspection)
      inspectMicrostep(scope, event, next, transition);
    // The snapshot's configuration is the plan's (a done snapshot's nodes are its `nodesDone`), or the one it
    // started in. A configuration it moved to becomes the one the next event's lookup finds first (`of` has just
    // made `configuration` the last one asked for: it becomes the one before).
    const reached = plan === undefined ? configuration : plan.next;
    if (reached !== configuration) {
      configurations.before = configuration;
      configurations.last = reached;
    }
    // The usual event leaves nothing to settle (no raised event, no eventless transition where it led): what
    // `settle` would find in its first round, asked without it.
    if (
      internalQueue.length === 0 &&
      next.status === 'active' &&
      this.settlesInOneRound &&
      (reached.eventless ?? candidates.always(reached)).length === 0
    )
      return next;
    return this.settle(next, event, scope, internalQueue);
  }

  override getInitialSnapshot(scope: EngineScope, input: unknown): EngineSnapshot {
    const event: EngineEvent = { type: initEvent, input };
    const internalQueue: EngineEvent[] = [];
    const preInitialContext = this.config.context;
    const preInitial = this.configurations.at(this.root);
    let snapshot = this.snapshotOf(
      preInitial,
      {
        context:
          typeof preInitialContext !== 'function' && preInitialContext
            ? (preInitialContext as Record<string, unknown>)
            : noContext,
        children: noChildren,
        status: 'active',
        output: undefined,
        error: undefined,
      },
      undefined,
      noHistoryValue,
    );
    try {
      if (this.contextAssign) {
        const run = new ActionRun(this, scope, event, internalQueue, preInitial, snapshot);
        resolveActions(run, [this.contextAssign]);
        snapshot = run.snapshot();
      }
      this.initialTransition ??= {
        target: initialStateNodes(this.root),
        source: this.root,
        reenter: true,
        actions: [],
        eventType: null,
      };
      const from = this.configurations.of(snapshot._nodes);
      const next = this.step(
        this.initialTransition,
        this.configurations.plan(from, this.initialTransition, true),
        snapshot,
        from,
        event,
        scope,
        internalQueue,
      );
      return this.settle(next, event, scope, internalQueue);
    } catch (error) {
      return { ...snapshot, status: 'error', error };
    }
  }

  /** An actor error no transition handles fails the machine: its children are stopped (XState's macrostep). */
  private fail(snapshot: EngineSnapshot, event: EngineEvent, scope: EngineScope): EngineSnapshot {
    const configuration = this.configurations.of(snapshot._nodes);
    const run = new ActionRun(this, scope, event, [], configuration, snapshot);
    resolveActions(
      run,
      Object.values(snapshot.children).map((child) => stopChild(child as never)),
    );
    run.status = 'error';
    run.error = (event as { error?: unknown }).error;
    const failed = this.snapshotOf(configuration, run, snapshot._nodes, snapshot.historyValue);
    inspectMicrostep(scope, event, failed, undefined);
    return failed;
  }

  /** XState's macrostep after its first microstep: eventless transitions, then raised events, until stable. */
  private settle(
    start: EngineSnapshot,
    firstEvent: EngineEvent,
    scope: EngineScope,
    internalQueue: EngineEvent[],
  ): EngineSnapshot {
    let snapshot = start;
    let event = firstEvent;
    let selectEventlessNext = true;
    const maxIterations = this.options.maxIterations ?? Number.POSITIVE_INFINITY;
    let iterations = 0;
    while (snapshot.status === 'active') {
      iterations++;
      if (iterations > maxIterations)
        throw new Error(
          `Infinite loop detected: the machine has processed more than ${maxIterations} microsteps without reaching a stable state. This usually happens when there's a cycle of transitions (e.g., eventless transitions or raised events causing state A -> B -> C -> A).`,
        );
      const configuration = this.configurations.of(snapshot._nodes);
      let transition: EngineTransition | undefined = selectEventlessNext
        ? selectEventless(configuration, this.candidates, event, snapshot)
        : undefined;
      const previous: EngineSnapshot | undefined = transition ? snapshot : undefined;
      if (!transition) {
        const raised = internalQueue.shift();
        if (!raised) break;
        event = raised;
        transition = selectTransition(configuration, this.candidates, event, snapshot);
      }
      const plan = transition ? this.configurations.plan(configuration, transition, false) : undefined;
      snapshot = this.step(transition, plan, snapshot, configuration, event, scope, internalQueue);
      selectEventlessNext = snapshot !== previous;
      inspectMicrostep(scope, event, snapshot, transition);
    }
    if (snapshot.status !== 'active') {
      // XState stops every child of a machine that is done (the snapshot itself keeps listing them).
      const run = new ActionRun(this, scope, event, [], this.configurations.of(snapshot._nodes), snapshot);
      resolveActions(
        run,
        Object.values(snapshot.children).map((child) => stopChild(child as never)),
      );
    }
    return snapshot;
  }

  /**
   * XState's microstep for at most one transition: exit, transition actions, entry, final-state handling. (Not
   * named `microstep`: that is StateMachine's public method, the microsteps of a macrostep, inherited as it is.)
   * `from` is the configuration of `current`, which every caller has just looked up, and `plan` the transition's
   * plan from there (the caller reads where it leads).
   */
  private step(
    transition: EngineTransition | undefined,
    plan: TransitionPlan | undefined,
    current: EngineSnapshot,
    from: Configuration,
    event: EngineEvent,
    scope: EngineScope,
    internalQueue: EngineEvent[],
  ): EngineSnapshot {
    if (!transition || !plan) return current;
    const run = new ActionRun(this, scope, event, internalQueue, from, current);
    // The plan's list once it is made: read here, without the call that makes it.
    const known = plan.actions;
    const flat = known !== undefined ? known : this.actionsOf(plan, transition);
    if (flat) resolveUndeferred(run, flat);
    else {
      // Indexed loops: the microstep runs in V8's baseline tiers for a while, where `for...of` allocates.
      const { exit, enter } = plan;
      for (let index = 0; index < exit.length; index++)
        resolvePrepared(run, this.exitActionsOf(exit[index] as EngineStateNode));
      resolvePrepared(run, this.transitionActionsOf(transition));
      for (let index = 0; index < enter.length; index++) {
        const entered = enter[index] as EnteredNode;
        const node = entered.node;
        const entry = this.entryActionsOf(node);
        resolvePrepared(run, entered.defaultEntry ? entry.withInitial : entry.actions, entry.invokeIds);
        if (node.type === 'final') this.enterFinal(node, run);
      }
    }
    if (run.status === 'done') {
      for (const node of plan.next.nodesDone) resolveActions(run, node.exit);
    }
    if (!plan.nodesChanged)
      return run.current !== current
        ? this.snapshotOf(from, run, current._nodes, current.historyValue)
        : current;
    return this.snapshotOf(plan.next, run, undefined, current.historyValue);
  }

  /** XState's enterStates for a final node: a done event for its parent, or the machine's completion and output. */
  private enterFinal(node: EngineStateNode, run: ActionRun): void {
    const { event, scope } = run;
    const working = run;
    const parent = node.parent;
    const ancestorMarker = parent?.parent;
    if (parent?.type === 'compound') {
      run.internalQueue.push({
        type: `xstate.done.state.${parent.id}`,
        output:
          node.output !== undefined ? resolveOutput(node.output, working.context, event, scope) : undefined,
      } as EngineEvent);
    }
    if (ancestorMarker) return;
    const completion = node;
    working.status = 'done';
    run.touch();
    const root = this.root;
    if (root.output === undefined) {
      working.output = undefined;
      return;
    }
    const doneEvent = {
      type: `xstate.done.state.${completion.id}`,
      output:
        completion.output !== undefined && completion.parent
          ? resolveOutput(completion.output, working.context, event, scope)
          : undefined,
    };
    working.output = resolveOutput(root.output, working.context, doneEvent as EngineEvent, scope);
  }

  snapshotOf(
    configuration: Configuration,
    working: WorkingState,
    nodes: readonly EngineStateNode[] | undefined,
    historyValue: Record<string, unknown>,
  ): EngineSnapshot {
    // Each member read once (see `transition`).
    const status = working.status;
    let template: object | undefined;
    if (nodes === undefined ? status !== 'done' : nodes === configuration.nodes)
      template = configuration.template ??= this.literalSnapshot(
        configuration,
        blank,
        configuration.nodes,
        blank.children,
      );
    else if (nodes === undefined || nodes === configuration.nodesDone)
      template = configuration.templateDone ??= this.literalSnapshot(
        configuration,
        blank,
        configuration.nodesDone,
        blank.children,
      );
    else return this.literalSnapshot(configuration, working, nodes, historyValue);
    // The configuration's template gives the parts its snapshots share, the working state the others: one literal
    // (V8 allocates it whole in optimized code), where a spread of the template and six stores went through the
    // object-copy inline cache, which the templates of the machine's many configurations take past its fast path.
    const shared = template as EngineSnapshot;
    return {
      status,
      output: working.output,
      error: working.error,
      machine: shared.machine,
      context: working.context,
      _nodes: shared._nodes,
      value: shared.value,
      tags: shared.tags,
      children: working.children,
      historyValue,
      matches: shared.matches,
      hasTag: shared.hasTag,
      can: shared.can,
      getMeta: shared.getMeta,
      toJSON: shared.toJSON,
    };
  }

  /** A snapshot built property by property, in XState's order. */
  private literalSnapshot(
    configuration: Configuration,
    working: WorkingState,
    activeNodes: readonly EngineStateNode[],
    historyValue: Record<string, unknown>,
  ): EngineSnapshot {
    const methods = this.methods ?? this.snapshotMethods();
    return {
      status: working.status,
      output: working.output,
      error: working.error,
      machine: this,
      context: working.context,
      _nodes: activeNodes,
      value: configuration.value,
      tags: tagsOf(configuration, activeNodes),
      children: working.children,
      historyValue,
      matches: methods.matches,
      hasTag: methods.hasTag,
      can: methods.can,
      getMeta: methods.getMeta,
      toJSON: methods.toJSON,
    };
  }

  /** XState's snapshot methods, taken once from a snapshot XState built itself. */
  private snapshotMethods(): SnapshotMethods {
    const probe = this.resolveState({ value: {}, context: {} });
    this.methods = {
      matches: probe.matches,
      hasTag: probe.hasTag,
      can: probe.can,
      getMeta: probe.getMeta,
      toJSON: probe.toJSON,
    };
    return this.methods;
  }

  /**
   * A plan's exit, transition and entry actions as one list, in XState's order, when no node it enters starts
   * invoked actors (a `sendTo` must wait for those) or is final (its done event and output come between lists);
   * null otherwise, and the step resolves node by node.
   */
  private actionsOf(plan: TransitionPlan, transition: EngineTransition): readonly PreparedAction[] | null {
    let flat = plan.actions;
    if (flat === undefined) {
      const simple = plan.enter.every(({ node }) => node.type !== 'final' && node.invoke.length === 0);
      flat = simple
        ? [
            ...plan.exit.flatMap((node) => this.exitActionsOf(node)),
            ...this.transitionActionsOf(transition),
            ...plan.enter.flatMap(({ node, defaultEntry }) => {
              const entry = this.entryActionsOf(node);
              return defaultEntry ? entry.withInitial : entry.actions;
            }),
          ]
        : null;
      plan.actions = flat;
    }
    return flat as readonly PreparedAction[] | null;
  }

  private exitActionsOf(node: EngineStateNode): readonly PreparedAction[] {
    let actions = this.exitActions.get(node);
    if (!actions) {
      actions = prepareActions(this, [...node.exit, ...node.invoke.map((invoke) => stopChild(invoke.id))]);
      this.exitActions.set(node, actions);
    }
    return actions;
  }

  private transitionActionsOf(transition: EngineTransition): readonly PreparedAction[] {
    let actions = this.transitionActions.get(transition);
    if (!actions) {
      actions = prepareActions(this, transition.actions);
      this.transitionActions.set(transition, actions);
    }
    return actions;
  }

  private entryActionsOf(node: EngineStateNode): EntryActions {
    let actions = this.entryActions.get(node);
    if (!actions) {
      const entry = [
        ...node.entry,
        ...node.invoke.map((invoke) =>
          spawnChild(invoke.src as never, { ...invoke, syncSnapshot: !!invoke.onSnapshot } as never),
        ),
      ];
      actions = {
        actions: prepareActions(this, entry),
        withInitial: prepareActions(this, [...entry, ...node.initial.actions]),
        // XState passes the ids of the actors this entry spawns, so a sendTo to one of them waits for it. Without
        // invokes that list is empty and changes nothing: no list is passed.
        invokeIds: node.invoke.length > 0 ? node.invoke.map((invoke) => invoke.id) : undefined,
      };
      this.entryActions.set(node, actions);
    }
    return actions;
  }
}

/**
 * A machine's children and history value at its start, shared by every actor: a step that spawns or stops a child
 * makes a new record, and machines without history states never write a history value, so a run in flight holds
 * none of its own until it has something in it.
 */
const noChildren: Children = Object.freeze({});
const noHistoryValue: Record<string, unknown> = Object.freeze({});

/** The working state of a snapshot template: it holds no run's context or children (the template outlives runs). */
const blank: WorkingState = Object.freeze({
  context: {},
  children: {},
  status: 'active',
  output: undefined,
  error: undefined,
});

/** The tags of these active nodes, in their order (XState's Set of a done snapshot lists the leaf's first). */
function tagsOf(configuration: Configuration, nodes: readonly EngineStateNode[]): Set<string> {
  if (nodes === configuration.nodes) return configuration.tags;
  if (nodes === configuration.nodesDone) return configuration.tagsDone;
  return new ReadonlyTags(nodes.flatMap((node) => node.tags));
}

function resolveOutput(mapper: unknown, context: unknown, event: EngineEvent, scope: EngineScope): unknown {
  if (typeof mapper === 'function') return mapper({ context, event, self: scope.self });
  if (
    xstateDevelopmentBuild &&
    mapper &&
    typeof mapper === 'object' &&
    Object.values(mapper).some((value) => typeof value === 'function')
  ) {
    const mapped = Object.entries(mapper)
      .filter(([, value]) => typeof value === 'function')
      .map(([key, value]) => `\n - ${key}: ${String(value).replace(/\n\s*/g, '')}`)
      .join('');
    console.warn(
      `Dynamically mapping values to individual properties is deprecated. Use a single function that returns the mapped object instead.\nFound object containing properties whose values are possibly mapping functions: ${mapped}`,
    );
  }
  return mapper;
}

/** XState's getInitialStateNodes: the root and, through each compound node's initial child, down to a leaf. */
function initialStateNodes(root: EngineStateNode): EngineStateNode[] {
  const nodes: EngineStateNode[] = [];
  for (let node: EngineStateNode | undefined = root; node; ) {
    nodes.push(node);
    node = node.type === 'compound' ? node.initial.target[0] : undefined;
  }
  return nodes;
}
