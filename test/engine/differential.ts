import { expect } from 'vitest';
import {
  type AnyActorLogic,
  type AnyActorRef,
  type AnyStateMachine,
  type AnyStateNode,
  createActor,
  type EventObject,
  type InspectionEvent,
  SimulatedClock,
} from 'xstate';
import { compileMachine, isCompiledMachine } from '../../src/engine/compiled-machine.ts';

/**
 * A differential harness for the compiled interpreter (src/engine): the same machine, input, provided actors and
 * steps are run once on XState's own interpreter and once on `compileMachine(machine)`, each in its own actor
 * system with its own inspection observer, simulated clock and logger. After the start and after every step, each
 * run is observed (snapshot fields, persisted snapshot, `can` of the next event, the inspection events,
 * custom-action records, emitted events, log lines, observer calls and XState's development warnings since the
 * last observation); the two lists of observations must be equal. Steps are a list, or a tree of them (StepTree).
 *
 * Actor session ids (`x:0`, `x:1`, ...) come from one counter shared by every system, so they differ between the
 * two runs: every actor is renamed `#n` after its creation order in its own system, in every string and key.
 */

/** A step of a run: an event sent to the root actor, a clock advance, a flush of pending promises, or any action. */
export type Step =
  | (EventObject & Record<string, unknown>)
  | { advance: number }
  | { flush: true }
  | { label: string; act: (actor: AnyActorRef) => void };

export interface DiffSetup {
  input?: unknown;
  /** Provided to the machine (machine.provide({ actors })) before it is compiled. */
  actors?: Record<string, AnyActorLogic>;
  /** A persisted snapshot both actors start from (createActor(machine, { snapshot })). */
  snapshot?: unknown;
  /** The compiled machine to run instead of compileMachine(machine) (e.g. one built with .provide()). */
  compiled?: AnyStateMachine;
  /** Events whose `snapshot.can(event)` is observed at every checkpoint (the next event of a step always is). */
  probes?: EventObject[];
  /** Whether the actor is stopped after the last step (observed too); default true. */
  stopAtEnd?: boolean;
}

/** What custom actions, guards and actors of test machines record during a run (reset at each run's start). */
const records: unknown[] = [];

export function record(entry: unknown): void {
  records.push(entry);
}

export interface Observation {
  step: string;
  status: unknown;
  value: unknown;
  context: unknown;
  output: unknown;
  error: unknown;
  children: string[];
  tags: string[];
  nodes: string[];
  persisted: string;
  meta: string;
  json: string;
  can: Record<string, unknown>;
  /** Whether the actor's snapshot is the very object it was at the previous observation. */
  sameSnapshot: boolean;
  inspection: unknown[];
  records: unknown[];
  emitted: unknown[];
  logs: unknown[];
  observer: unknown[];
  /** XState's development warnings (console.warn), e.g. an event sent to a stopped actor. */
  warnings: unknown[];
}

interface Run {
  observations: Observation[];
  /** Whether every actor of the run ran on a compiled machine. */
  compiled: boolean;
}

type Ids = Map<string, string>;

function isActorRef(value: object): value is AnyActorRef {
  return (
    'sessionId' in value &&
    'send' in value &&
    typeof (value as { getSnapshot?: unknown }).getSnapshot === 'function'
  );
}

function renameIds(text: string, ids: Ids): string {
  if (!text.includes('x:')) return text;
  return text.replace(/\bx:\d+\b/g, (id) => ids.get(id) ?? `?${id}`);
}

/** Comparable data: actors by renamed id, errors by name and message, machines and state nodes by id. */
export function normalise(value: unknown, ids: Ids, depth = 0, cache?: WeakMap<object, unknown>): unknown {
  if (cache && value !== null && typeof value === 'object') {
    const known = cache.get(value);
    if (known !== undefined) return known;
    const result = normaliseObject(value, ids, depth, cache);
    cache.set(value, result);
    return result;
  }
  if (value !== null && typeof value === 'object') return normaliseObject(value, ids, depth, cache);
  if (typeof value === 'string') return renameIds(value, ids);
  if (typeof value === 'function') return '<fn>';
  return value;
}

function normaliseObject(value: object, ids: Ids, depth: number, cache?: WeakMap<object, unknown>): unknown {
  if (depth > 24) return '<deep>';
  if (isActorRef(value)) return { '@actor': renameIds(value.id, ids) };
  if (value instanceof Error) return { '@error': value.name, message: renameIds(value.message, ids) };
  if ('root' in value && 'implementations' in value && 'id' in value) return { '@machine': value.id };
  if ('machine' in value && 'parent' in value && 'key' in value && 'id' in value)
    return { '@node': (value as { id: string }).id };
  if ('machine' in value && '_nodes' in value && 'value' in value) {
    const snapshot = value as unknown as { value: unknown; status: unknown; context: unknown };
    return {
      '@snapshot': normalise(snapshot.value, ids, depth + 1, cache),
      status: snapshot.status,
      context: normalise(snapshot.context, ids, depth + 1, cache),
    };
  }
  if (value instanceof Set)
    return { '@set': [...value].map((item) => normalise(item, ids, depth + 1, cache)) };
  if (value instanceof Map)
    return { '@map': [...value].map((entry) => normalise(entry, ids, depth + 1, cache)) };
  if (Array.isArray(value)) return value.map((item) => normalise(item, ids, depth + 1, cache));
  const result: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value))
    result[renameIds(key, ids)] = normalise(inner, ids, depth + 1, cache);
  return result;
}

type InspectedSnapshot = {
  value?: unknown;
  status?: unknown;
  context?: unknown;
};

/** A transition's position among its source's candidates for its event type (or among its eventless ones). */
function transitionIndex(transition: { source: AnyStateNode; eventType: string }): number {
  const { source, eventType } = transition;
  const list = (eventType === '' ? source.always : source.transitions.get(eventType)) ?? [];
  return (list as unknown[]).indexOf(transition);
}

/** The transitions the microsteps of some observations took, as `source|eventType|index`. */
export function takenTransitions(
  observations: readonly Observation[],
  into = new Set<string>(),
): Set<string> {
  for (const observation of observations)
    for (const event of observation.inspection as {
      type: string;
      transitions?: { source: string; eventType: string; index: number }[];
    }[])
      if (event.type === '@xstate.microstep')
        for (const t of event.transitions ?? []) into.add(`${t.source}|${t.eventType}|${t.index}`);
  return into;
}

/** Every transition of a machine definition (event-driven and eventless), as `source|eventType|index`. */
export function definedTransitions(machine: AnyStateMachine): string[] {
  const names: string[] = [];
  const visit = (node: AnyStateNode) => {
    for (const [eventType, list] of node.transitions)
      list.forEach((_, index) => {
        names.push(`${node.id}|${eventType}|${index}`);
      });
    (node.always ?? []).forEach((_, index) => {
      names.push(`${node.id}||${index}`);
    });
    for (const child of Object.values(node.states)) visit(child);
  };
  visit(machine.root);
  return names;
}

function inspected(event: InspectionEvent, ids: Ids, norm: (value: unknown) => unknown): unknown {
  const actor = renameIds(event.actorRef.sessionId, ids);
  switch (event.type) {
    case '@xstate.actor':
      return { type: event.type, actor };
    case '@xstate.event':
      return {
        type: event.type,
        actor,
        source: event.sourceRef ? renameIds(event.sourceRef.sessionId, ids) : null,
        event: norm(event.event),
      };
    case '@xstate.action':
      return {
        type: event.type,
        actor,
        action: event.action.type,
        params: norm(event.action.params),
      };
    case '@xstate.microstep':
    case '@xstate.snapshot': {
      const snapshot = event.snapshot as InspectedSnapshot;
      const state = {
        type: event.type,
        actor,
        event: renameIds(event.event.type, ids),
        value: snapshot.value,
        status: snapshot.status,
      };
      if (event.type === '@xstate.snapshot') return state;
      return {
        ...state,
        context: norm(snapshot.context),
        transitions: event._transitions.map((transition) => ({
          source: transition.source.id,
          eventType: transition.eventType,
          index: transitionIndex(transition),
          target: transition.target?.map((node) => node.id),
        })),
      };
    }
    default:
      return { type: (event as { type: string }).type, actor };
  }
}

function stepName(step: Step | undefined): string {
  if (step === undefined) return 'start';
  if ('type' in step) return `send ${step.type}`;
  if ('advance' in step) return `advance ${step.advance} ms`;
  if ('flush' in step) return 'flush';
  return step.label;
}

function attempt(fn: () => unknown): unknown {
  try {
    return fn();
  } catch (error) {
    return { threw: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * A persisted or JSON form of a snapshot with its context replaced by a marker when it is the snapshot's context
 * itself (compared on its own): most of an observation's size otherwise.
 */
function withoutContext(form: unknown, snapshot: MachineSnapshotLike): unknown {
  if (form && typeof form === 'object' && 'context' in form && form.context === snapshot.context)
    return { ...form, context: '<the snapshot context>' };
  return form;
}

type MachineSnapshotLike = {
  status?: unknown;
  value?: unknown;
  context?: unknown;
  output?: unknown;
  error?: unknown;
  children?: Record<string, unknown>;
  tags?: Set<string>;
  _nodes?: { id: string }[];
  getMeta?: () => unknown;
  toJSON?: () => unknown;
  can?: (event: EventObject) => boolean;
};

/**
 * A tree of steps: each node's step is taken from the state its parent left. The first branch of a node goes on
 * with the same actor; every other branch starts from an actor restored from the node's persisted snapshot (each
 * interpreter from its own). A list of paths sharing prefixes replays as one tree, each shared step taken once.
 */
export interface StepTree {
  step: Step;
  next: StepTree[];
}

/** The tree of a list of step lists: steps with the same key at the same position share a node. */
export function stepTree(
  paths: readonly (readonly Step[])[],
  key: (step: Step) => string = stepKey,
): StepTree[] {
  const roots: StepTree[] = [];
  const index = new Map<StepTree[], Map<string, StepTree>>();
  for (const path of paths) {
    let level = roots;
    for (const step of path) {
      let byKey = index.get(level);
      if (!byKey) {
        byKey = new Map();
        index.set(level, byKey);
      }
      const k = key(step);
      let node = byKey.get(k);
      if (!node) {
        node = { step, next: [] };
        byKey.set(k, node);
        level.push(node);
      }
      level = node.next;
    }
  }
  return roots;
}

function stepKey(step: Step): string {
  if ('act' in step) return `act:${step.label}`;
  return JSON.stringify(step, (_, value) =>
    value instanceof Error ? { error: value.name, message: value.message } : value,
  );
}

/** A copy of the arrays and plain objects of a value; anything else (errors, actor logic) is shared. */
function copyPlain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(copyPlain);
  if (value === null || typeof value !== 'object') return value;
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) copy[key] = copyPlain(inner);
  return copy;
}

function chain(steps: readonly Step[]): StepTree[] {
  const roots: StepTree[] = [];
  let level = roots;
  for (const step of steps) {
    const node: StepTree = { step, next: [] };
    level.push(node);
    level = node.next;
  }
  return roots;
}

async function runOnce(machine: AnyStateMachine, setup: DiffSetup, tree: readonly StepTree[]): Promise<Run> {
  records.length = 0;
  const ids: Ids = new Map();
  const cache = new WeakMap<object, unknown>();
  const norm = (value: unknown) => normalise(value, ids, 0, cache);
  const inspection: unknown[] = [];
  const emitted: unknown[] = [];
  const logs: unknown[] = [];
  const observer: unknown[] = [];
  const warnings: unknown[] = [];
  const clock = new SimulatedClock();
  const observations: Observation[] = [];
  let compiled = true;

  const start = (snapshot: unknown) => {
    const actor = createActor(machine, {
      input: setup.input,
      clock,
      logger: (...args: unknown[]) => logs.push(norm(args)),
      inspect: (event) => {
        if (event.type === '@xstate.actor') ids.set(event.actorRef.sessionId, `#${ids.size}`);
        inspection.push(inspected(event, ids, norm));
      },
      ...(snapshot !== undefined ? { snapshot: snapshot as never } : {}),
    });
    compiled &&= isCompiledMachine(actor.logic);
    actor.on('*', (event) => emitted.push(norm(event)));
    actor.subscribe({
      next: (next) => {
        const s = next as MachineSnapshotLike;
        observer.push(['next', s.status, s.value]);
      },
      error: (error) => observer.push(['error', norm(error)]),
      complete: () => observer.push(['complete']),
    });
    actor.start();
    return actor;
  };

  let previous: unknown;
  /** Observes the actor; returns its persisted snapshot (a fork restores copies of it). */
  const observe = (actor: AnyActorRef, label: string, next: Step | undefined, stopped = false): unknown => {
    const snapshot = actor.getSnapshot() as MachineSnapshotLike;
    // A stopped actor is observed by what stopping it did (XState's own code stops either machine).
    const persisted = stopped ? undefined : attempt(() => actor.getPersistedSnapshot());
    const probes = [...(setup.probes ?? []), ...(next && 'type' in next ? [next] : [])];
    const can: Record<string, unknown> = {};
    for (const probe of probes) can[JSON.stringify(norm(probe))] = attempt(() => snapshot.can?.(probe));
    observations.push({
      step: label,
      status: snapshot.status,
      value: norm(snapshot.value),
      context: stopped ? undefined : norm(snapshot.context),
      output: norm(snapshot.output),
      error: norm(snapshot.error),
      children: Object.keys(snapshot.children ?? {}).map((id) => renameIds(id, ids)),
      tags: [...(snapshot.tags ?? [])],
      nodes: (snapshot._nodes ?? []).map((node) => node.id).sort(),
      persisted: stopped ? '' : JSON.stringify(norm(withoutContext(persisted, snapshot))),
      meta: JSON.stringify(attempt(() => snapshot.getMeta?.())),
      json: JSON.stringify(
        norm(
          withoutContext(
            attempt(() => snapshot.toJSON?.()),
            snapshot,
          ),
        ),
      ),
      can,
      sameSnapshot: snapshot === previous,
      inspection: inspection.splice(0),
      records: norm(records.splice(0)) as unknown[],
      emitted: emitted.splice(0),
      logs: logs.splice(0),
      observer: observer.splice(0),
      warnings: warnings.splice(0),
    });
    previous = snapshot;
    return persisted;
  };

  const walk = async (first: AnyActorRef, persisted: unknown, nodes: readonly StepTree[]): Promise<void> => {
    if (nodes.length === 0) {
      if (setup.stopAtEnd !== false) {
        first.stop();
        observe(first, 'stop', undefined, true);
      }
      return;
    }
    for (let index = 0; index < nodes.length; index++) {
      const { step, next } = nodes[index] as StepTree;
      let actor = first;
      // A copy each time: restoring revives actor references in the persisted context in place. The restored
      // actor is observed with the step taken from it (what its start did is reported there).
      if (index > 0) actor = start(copyPlain(persisted));
      if ('type' in step) actor.send(step);
      else if ('advance' in step) clock.increment(step.advance);
      else if ('flush' in step) await new Promise((resolve) => setImmediate(resolve));
      else step.act(actor);
      const after = observe(actor, stepName(step), next[0]?.step);
      await walk(actor, after, next);
    }
  };

  const warn = console.warn;
  console.warn = (...args: unknown[]) => warnings.push(norm(args));
  try {
    const actor = start(setup.snapshot);
    const persisted = observe(actor, 'start', tree[0]?.step);
    await walk(actor, persisted, tree);
  } finally {
    console.warn = warn;
  }
  return { observations, compiled };
}

/** The machine both runs use (with the setup's actors provided) and its compiled twin. */
export function machines(
  machine: AnyStateMachine,
  setup: DiffSetup = {},
): [AnyStateMachine, AnyStateMachine] {
  const stock = setup.actors ? machine.provide({ actors: setup.actors }) : machine;
  return [stock, setup.compiled ?? compileMachine(stock)];
}

/** Runs both interpreters on the same steps (a list, or a tree of them). */
export async function runBoth(
  machine: AnyStateMachine,
  setup: DiffSetup,
  steps: readonly Step[] | { tree: readonly StepTree[] },
): Promise<{ stock: Observation[]; compiled: Observation[] }> {
  const [stock, compiled] = machines(machine, setup);
  const tree = 'tree' in steps ? steps.tree : chain(steps);
  const expected = await runOnce(stock, setup, tree);
  const actual = await runOnce(compiled, setup, tree);
  return { stock: expected.observations, compiled: actual.compiled ? actual.observations : [] };
}

/** Pairs of (normalised, immutable) objects already found equal: a shared context is compared once. */
const equalPairs = new WeakMap<object, WeakSet<object>>();

/** Deep equality of normalised data (plain objects, arrays, primitives), with `undefined` properties ignored. */
function sameData(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (equalPairs.get(a)?.has(b)) return true;
  let equal: boolean;
  if (Array.isArray(a) || Array.isArray(b)) {
    equal =
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((item, index) => sameData(item, b[index]));
  } else {
    const x = a as Record<string, unknown>;
    const y = b as Record<string, unknown>;
    const keys = new Set([...Object.keys(x), ...Object.keys(y)]);
    equal = true;
    for (const key of keys) {
      if (!sameData(x[key], y[key])) {
        equal = false;
        break;
      }
    }
  }
  if (equal) {
    let seen = equalPairs.get(a);
    if (!seen) {
      seen = new WeakSet();
      equalPairs.set(a, seen);
    }
    seen.add(b);
  }
  return equal;
}

/**
 * Runs both interpreters and requires the same observation after the start and after every step. Returns XState's
 * observations so that a test can also check what the machine was meant to do.
 */
export async function expectSameBehaviour(
  machine: AnyStateMachine,
  setup: DiffSetup,
  steps: readonly Step[] | { tree: readonly StepTree[] },
  label = machine.id,
): Promise<Observation[]> {
  const { stock, compiled } = await runBoth(machine, setup, steps);
  expect(compiled.length, `${label}: the compiled run did not run on a compiled machine`).toBe(stock.length);
  for (let index = 0; index < stock.length; index++) {
    // A fast comparison first; toEqual decides when it finds a difference (and shows it).
    if (sameData(compiled[index], stock[index])) continue;
    expect(compiled[index], `${label}: observation ${index} (${stock[index]?.step})`).toEqual(stock[index]);
  }
  return stock;
}
