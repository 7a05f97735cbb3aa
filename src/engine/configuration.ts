import type { StateValue } from 'xstate';
import type { PreparedAction } from './resolve-actions.ts';
import type { Candidate } from './select-transition.ts';
import {
  type EngineStateNode,
  type EngineTransition,
  isDescendant,
  properAncestors,
} from './xstate-shapes.ts';

/**
 * One configuration of a machine without parallel or history states: a chain of active state nodes from the root
 * to one leaf. Everything XState's interpreter recomputes from the active nodes on every microstep (the state value,
 * the tags, the exit and entry sets of a transition) is computed here once per configuration and reused.
 */
export interface Configuration {
  leaf: EngineStateNode;
  /** Leaf to root: where transitions for an event are looked for, deepest first (XState's transitionNode). */
  chain: readonly EngineStateNode[];
  /** Root to leaf: a snapshot's `_nodes` in the order XState's microstep leaves them. */
  nodes: readonly EngineStateNode[];
  /** Leaf to root: `_nodes` of a snapshot that has just reached its final state (XState sorts them so). */
  nodesDone: readonly EngineStateNode[];
  /** The state value, completed with initial descendants as XState does; shared by every snapshot, frozen. */
  value: StateValue;
  /** Tags in `nodes` order, and in `nodesDone` order for a snapshot that is done (XState's Set keeps that order). */
  tags: Set<string>;
  tagsDone: Set<string>;
  /** What each transition taken from here does to the configuration, computed on first use. */
  plans: Map<EngineTransition, TransitionPlan>;
  /** The candidate transitions for each event type, and the eventless ones, filled on first use (select-transition.ts). */
  candidates: Map<string, readonly Candidate[]>;
  eventless: readonly Candidate[] | undefined;
  /**
   * A snapshot of this configuration with `nodes` (and one with `nodesDone`), whose state-dependent parts a new
   * snapshot replaces: made on first use by the machine that owns the configuration (compiled-machine.ts).
   */
  template: object | undefined;
  templateDone: object | undefined;
}

/** A state node entered by a transition; `defaultEntry` nodes also run their `initial` transition's actions. */
export interface EnteredNode {
  node: EngineStateNode;
  defaultEntry: boolean;
}

/** The structural part of one microstep: which nodes it exits and enters, in order, and where it ends. */
export interface TransitionPlan {
  /** Exited nodes in reverse document order (XState's exitStates). */
  exit: readonly EngineStateNode[];
  /** Entered nodes in document order (XState's enterStates). */
  enter: readonly EnteredNode[];
  next: Configuration;
  /** Whether the active nodes differ afterwards (when they do not, XState keeps the snapshot's `_nodes`). */
  nodesChanged: boolean;
  /**
   * The microstep's exit, transition and entry actions as one list, prepared (resolve-actions.ts), or null when they
   * are resolved node by node; filled on first use (compiled-machine.ts).
   */
  actions?: readonly PreparedAction[] | null | undefined;
}

/** The configurations of one machine, by leaf. */
export class Configurations {
  private readonly byLeaf = new Map<EngineStateNode, Configuration>();
  private readonly byNodes = new WeakMap<readonly EngineStateNode[], Configuration>();

  /** The configuration whose leaf is `leaf` (the chain from the root down to it). */
  at(leaf: EngineStateNode): Configuration {
    let configuration = this.byLeaf.get(leaf);
    if (!configuration) {
      configuration = createConfiguration(leaf);
      this.byLeaf.set(leaf, configuration);
      this.byNodes.set(configuration.nodes, configuration);
      this.byNodes.set(configuration.nodesDone, configuration);
    }
    return configuration;
  }

  /**
   * The two configurations asked for last (an agent loop alternates between two states). The machine moves them on
   * when a transition leads to another configuration (see `reached`), so that the next event's snapshot finds its
   * configuration first.
   */
  last: Configuration | undefined;
  before: Configuration | undefined;

  /** The configuration of a snapshot's active nodes: by identity for our own arrays, else by its deepest node. */
  of(nodes: readonly EngineStateNode[]): Configuration {
    const last = this.last;
    if (last && (last.nodes === nodes || last.nodesDone === nodes)) return last;
    const before = this.before;
    if (before && (before.nodes === nodes || before.nodesDone === nodes)) {
      this.before = last;
      this.last = before;
      return before;
    }
    const known = this.byNodes.get(nodes) ?? this.resolve(nodes);
    this.before = last;
    this.last = known;
    return known;
  }

  /** A snapshot's active nodes that are not one of our arrays (a snapshot XState built): found by the deepest node. */
  private resolve(nodes: readonly EngineStateNode[]): Configuration {
    let leaf = nodes[0] as EngineStateNode;
    for (const node of nodes) if (depth(node) > depth(leaf)) leaf = node;
    const configuration = this.at(leaf);
    if (
      configuration.nodes.length !== nodes.length ||
      nodes.some((node) => !configuration.chain.includes(node))
    )
      throw new Error(`The active state nodes of this snapshot do not form one chain (at ${leaf.id}).`);
    return configuration;
  }

  /** The plan of `transition` taken in `from`; `initial` is the machine's initial microstep (nothing is exited). */
  plan(from: Configuration, transition: EngineTransition, initial = false): TransitionPlan {
    let plan = from.plans.get(transition);
    if (!plan) {
      plan = this.createPlan(from, transition, initial);
      from.plans.set(transition, plan);
    }
    return plan;
  }

  /**
   * XState's computeExitSet and computeEntrySet for one transition in a machine without parallel or history
   * states, with the same domain rules (reenter, targets inside the source, the least common compound ancestor).
   */
  private createPlan(from: Configuration, transition: EngineTransition, initial: boolean): TransitionPlan {
    const targets = transition.target ?? [];
    if (targets.length === 0)
      return { exit: [], enter: [], next: from, nodesChanged: false, actions: undefined };
    const domain = transitionDomain(transition, targets);

    const exitSet = new Set<EngineStateNode>();
    if (!initial) {
      if (transition.reenter && transition.source === domain && domain) exitSet.add(domain);
      for (const node of from.nodes) if (isDescendant(node, domain)) exitSet.add(node);
    }
    const exit = [...exitSet].sort((a, b) => b.order - a.order);

    const toEnter = new Set<EngineStateNode>();
    const defaultEntry = new Set<EngineStateNode>();
    for (const target of targets) {
      if (transition.source !== target || transition.source !== domain || transition.reenter) {
        toEnter.add(target);
        defaultEntry.add(target);
      }
      addDescendantsToEnter(target, toEnter, defaultEntry);
    }
    const reentrancyDomain = !transition.source.parent && transition.reenter ? undefined : domain;
    for (const target of targets) {
      for (const ancestor of properAncestors(target, domain)) {
        if (!reentrancyDomain || isDescendant(ancestor, reentrancyDomain)) toEnter.add(ancestor);
      }
    }
    // In the initial microstep the root itself is entered by default (its initial actions run).
    if (initial) defaultEntry.add(transition.source);
    const enter = [...toEnter]
      .sort((a, b) => a.order - b.order)
      .map((node) => ({ node, defaultEntry: defaultEntry.has(node) }));

    const active = new Set(from.nodes);
    for (const node of exit) active.delete(node);
    for (const { node } of enter) active.add(node);
    const nodesChanged = active.size !== from.nodes.length || from.nodes.some((node) => !active.has(node));
    const next = nodesChanged ? this.of([...active]) : from;
    return { exit, enter, next, nodesChanged, actions: undefined };
  }
}

function depth(node: EngineStateNode): number {
  let n = 0;
  for (let marker = node.parent; marker; marker = marker.parent) n++;
  return n;
}

function createConfiguration(leaf: EngineStateNode): Configuration {
  const chain: EngineStateNode[] = [];
  for (let node: EngineStateNode | undefined = leaf; node; node = node.parent) chain.push(node);
  const nodes = Object.freeze([...chain].reverse());
  // XState's state value completes a compound leaf with its initial descendants (getAllStateNodes): the
  // pre-initial snapshot, whose only active node is the root, already has the initial state's value.
  const completed = [...nodes];
  for (let last = leaf; last.type === 'compound'; ) {
    last = last.initial.target[0] as EngineStateNode;
    completed.push(last);
  }
  const nodesDone = Object.freeze([...chain]);
  return {
    leaf,
    chain: Object.freeze(chain),
    nodes,
    nodesDone,
    value: deepFreeze(stateValueOf(completed, 0)),
    tags: new ReadonlyTags(nodes.flatMap((node) => node.tags)),
    tagsDone: new ReadonlyTags(nodesDone.flatMap((node) => node.tags)),
    plans: new Map(),
    candidates: new Map(),
    eventless: undefined,
    template: undefined,
    templateDone: undefined,
  };
}

/**
 * A snapshot's tags. XState builds a new Set for every snapshot; here every snapshot of a configuration shares one,
 * so it refuses changes (as the shared state value, which is frozen, does) instead of letting one snapshot's edit
 * show in all the others.
 */
export class ReadonlyTags extends Set<string> {
  #sealed = false;

  constructor(tags: readonly string[]) {
    super();
    for (const tag of tags) super.add(tag);
    this.#sealed = true;
  }

  override add(tag: string): this {
    if (this.#sealed) throw new TypeError(readOnlyTags);
    return super.add(tag);
  }

  override delete(_tag: string): boolean {
    throw new TypeError(readOnlyTags);
  }

  override clear(): void {
    throw new TypeError(readOnlyTags);
  }
}

const readOnlyTags = "A snapshot's tags are read-only (snapshots of one configuration share them).";

/** XState's getStateValue restricted to a chain: a compound node maps to its active child, an atomic one is its key. */
function stateValueOf(nodes: readonly EngineStateNode[], index: number): StateValue {
  const node = nodes[index] as EngineStateNode;
  const child = nodes[index + 1];
  if (node.type !== 'compound' || !child) return {};
  if (child.type === 'atomic' || child.type === 'final') return child.key;
  return { [child.key]: stateValueOf(nodes, index + 1) };
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/** XState's getTransitionDomain for targets that are plain state nodes. */
function transitionDomain(
  transition: EngineTransition,
  targets: readonly EngineStateNode[],
): EngineStateNode | undefined {
  const { source } = transition;
  if (!transition.reenter && targets.every((target) => target === source || isDescendant(target, source)))
    return source;
  const [head, ...tail] = [...targets, source] as unknown as [EngineStateNode, ...EngineStateNode[]];
  for (const ancestor of properAncestors(head, undefined)) {
    if (tail.every((node) => isDescendant(node, ancestor))) return ancestor;
  }
  if (transition.reenter) return undefined;
  let root = source;
  while (root.parent) root = root.parent;
  return root;
}

/** XState's addDescendantStatesToEnter without history or parallel nodes: a compound node enters its initial child. */
function addDescendantsToEnter(
  node: EngineStateNode,
  toEnter: Set<EngineStateNode>,
  defaultEntry: Set<EngineStateNode>,
): void {
  if (node.type !== 'compound') return;
  const initial = node.initial.target[0] as EngineStateNode;
  toEnter.add(initial);
  defaultEntry.add(initial);
  addDescendantsToEnter(initial, toEnter, defaultEntry);
}
