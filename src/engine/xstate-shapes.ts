/**
 * The parts of XState's runtime objects (xstate 5.33) that the compiled engine reads and writes, typed by their
 * shape. XState's public types keep most of these internal (state nodes' transition maps, a snapshot's `_nodes`,
 * the actor scope's `actionExecutor`, the system's inspection hook), so the engine names only what it uses.
 */
import type { AnyActorRef, EventObject } from 'xstate';

export type StateNodeType = 'atomic' | 'compound' | 'parallel' | 'final' | 'history';

export interface EngineInvokeDefinition {
  id: string;
  src: string;
  systemId?: string;
  input?: unknown;
  onSnapshot?: unknown;
}

export interface EngineTransition {
  target?: EngineStateNode[] | undefined;
  source: EngineStateNode;
  actions: unknown[];
  guard?: unknown;
  reenter: boolean;
  eventType: string | null;
}

export interface EngineStateNode {
  id: string;
  key: string;
  type: StateNodeType;
  order: number;
  parent?: EngineStateNode | undefined;
  states: Record<string, EngineStateNode>;
  entry: unknown[];
  exit: unknown[];
  invoke: EngineInvokeDefinition[];
  initial: { target: EngineStateNode[]; actions: unknown[] };
  always?: EngineTransition[] | undefined;
  transitions: Map<string, EngineTransition[]>;
  tags: string[];
  output?: unknown;
}

/** XState's `ProcessingStatus.Stopped` (an actor that was stopped before it could start is not started). */
export const processingStopped = 2;

/** XState's `ProcessingStatus.Running`: an actor's executor runs actions at once, not after its start. */
export const processingRunning = 1;

/** The child actors a snapshot holds, by id. */
export type Children = Record<string, AnyActorRef | undefined>;

export interface EngineSnapshot {
  status: 'active' | 'done' | 'error' | 'stopped';
  output: unknown;
  error: unknown;
  machine: EngineMachine;
  context: Record<string, unknown>;
  _nodes: readonly EngineStateNode[];
  value: unknown;
  tags: Set<string>;
  children: Children;
  historyValue: Record<string, unknown>;
  matches: unknown;
  hasTag: unknown;
  can: unknown;
  getMeta: unknown;
  toJSON: unknown;
}

export interface EngineMachine {
  id: string;
  root: EngineStateNode;
  options: { maxIterations?: number };
  implementations: {
    actors: Record<string, unknown>;
    actions: Record<string, unknown>;
    guards: Record<string, unknown>;
  };
  getStateNodeById(id: string): EngineStateNode & { config: { invoke?: unknown } };
}

export interface EngineAction {
  type: string;
  info: unknown;
  params: unknown;
  exec: ((info: unknown, params: unknown) => void) | undefined;
}

export interface EngineSystem {
  _sendInspectionEvent(event: Record<string, unknown>): void;
}

export interface EngineScope {
  self: AnyActorRef;
  system: EngineSystem;
  defer(fn: () => void): void;
  emit(event: unknown): void;
  actionExecutor(action: EngineAction): void;
}

export interface EngineEvent extends EventObject {
  input?: unknown;
}

/** XState's isDescendant: whether `child` lies strictly inside `parent` (everything does when `parent` is absent). */
export function isDescendant(child: EngineStateNode, parent: EngineStateNode | undefined): boolean {
  let marker = child;
  while (marker.parent && marker.parent !== parent) marker = marker.parent;
  return marker.parent === parent;
}

/** XState's getProperAncestors: the ancestors of `node` up to, not including, `until`. */
export function properAncestors(
  node: EngineStateNode,
  until: EngineStateNode | undefined,
): EngineStateNode[] {
  const ancestors: EngineStateNode[] = [];
  if (until === node) return ancestors;
  let marker = node.parent;
  while (marker && marker !== until) {
    ancestors.push(marker);
    marker = marker.parent;
  }
  return ancestors;
}
