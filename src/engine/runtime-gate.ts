/**
 * The check that decides whether the compiled interpreter may run on the xstate this process loaded. The compiled
 * interpreter re-implements XState's internal algorithm and reads members XState keeps private, so what it needs is
 * checked on the loaded code itself, not on a package.json (a bundle can inline one xstate beside another's
 * manifest): first the shape of exactly the private members src/engine uses, then a canary machine run on both
 * interpreters, which must take the same transitions, run the same actions and build snapshots of the same shape.
 */
import type { AnyActorRef, AnyStateMachine, EventObject } from 'xstate';

/** The parts of the xstate module the check uses: the loaded runtime, or a stand-in in tests. */
export interface XStateRuntime {
  Actor: { prototype: object };
  createMachine(config: never, implementations?: never): AnyStateMachine;
  createActor(logic: never, options?: never): AnyActorRef;
  assign(assignment: never): unknown;
  raise(event: never): unknown;
  spawnChild(src: never, options?: never): unknown;
  stopChild(actor: never): unknown;
  fromCallback(callback: never): unknown;
  sendTo(to: never, event: never, options?: never): unknown;
  emit(event: never): unknown;
  and(guards: never): unknown;
  or(guards: never): unknown;
  not(guard: never): unknown;
}

/** What the check found: `problems` is empty when the compiled interpreter may run. */
export interface RuntimeVerdict {
  accepted: boolean;
  /** Each private member missing or changed, and each way the canary ran differently on the two interpreters. */
  problems: string[];
  /** How long the check took, in microseconds. */
  costMicros: number;
}

/**
 * The private members src/engine relies on, each with how it is checked on a live actor of the loaded xstate. They
 * are the whole list: actor-links.ts (`_parent`, `_stop`, the system's `_relay`), resolve-actions.ts
 * (`_processingStatus`, `_actorScope`, the `to`, `event`, `id` and `delay` a `sendTo` action carries and the `event` of an `emit`),
 * guards.ts (the `guards` and `check` an `and`, `or` or `not` guard carries),
 * compiled-machine.ts
 * (the system's `_sendInspectionEvent`, a snapshot's `_nodes`, state nodes' `transitions` and `order`),
 * compiled-actor.ts (the members of an actor's scope, which its own scope gives a machine),
 * inspection-events.ts (observers get a copy of each inspection event, made when it is sent) and
 * xstate-build.ts (`Actor.prototype._send`).
 */
function structuralProblems(xstate: XStateRuntime): string[] {
  const problems: string[] = [];
  const require = (ok: boolean, member: string): void => {
    if (!ok) problems.push(`xstate no longer has ${member}`);
  };
  const sendMethod = (xstate.Actor.prototype as { _send?: unknown })._send;
  require(typeof sendMethod === 'function', 'Actor.prototype._send (a function)');
  // The usual send is resolved from these fields: a delay read as absent would send a delayed event at once.
  const ping = { type: 'ping' };
  const send = xstate.sendTo('child' as never, ping as never, { id: 'sent', delay: 5 } as never) as Record<
    string,
    unknown
  >;
  require(send?.to === 'child' &&
    send.event === ping &&
    send.id === 'sent' &&
    send.delay === 5, "a sendTo action's to, event, id and delay");
  // An emit is resolved from its event: read as absent, a command would be emitted as undefined.
  const emitted = xstate.emit(ping as never) as Record<string, unknown>;
  require(emitted?.type === 'xstate.emit' && emitted.event === ping, "an emit action's type and event");
  // `and`, `or` and `not` are evaluated from the guards they carry: read as absent, they would be XState's own.
  const inner = ['a', 'b'];
  const combined = [xstate.and(inner as never), xstate.or(inner as never)] as {
    guards?: unknown;
    check?: unknown;
  }[];
  const negated = xstate.not('a' as never) as { guards?: unknown[]; check?: unknown };
  require(combined.every((guard) => guard.guards === inner && typeof guard.check === 'function') &&
    Array.isArray(negated.guards) &&
    negated.guards.length === 1 &&
    negated.guards[0] === 'a' &&
    typeof negated.check === 'function', "an and, or or not guard's guards and check");
  const machine = xstate.createMachine({
    id: 'troupeGateShape',
    initial: 'a',
    invoke: { id: 'child', src: xstate.fromCallback((() => () => {}) as never) },
    states: { a: { on: { go: 'b' } }, b: {} },
  } as never);
  const actor = xstate.createActor(machine as never) as AnyActorRef & Record<string, unknown>;
  actor.start();
  try {
    const system = actor.system as unknown as Record<string, unknown> | undefined;
    require(typeof system?._relay === 'function', 'system._relay (a function)');
    require(typeof system?._sendInspectionEvent === 'function', 'system._sendInspectionEvent (a function)');
    require(typeof actor._stop === 'function', 'an actor’s _stop (a function)');
    require(actor._processingStatus === 1, 'an actor’s _processingStatus (a number, 1 when running)');
    require(typeof actor._actorScope === 'object' &&
      actor._actorScope !== null, 'an actor’s _actorScope (an object)');
    // The engine's own actor (compiled-actor.ts) gives a machine a scope of these members: one that XState's logic
    // would also use must be there too.
    if (typeof actor._actorScope === 'object' && actor._actorScope !== null)
      require(Object.keys(actor._actorScope).sort().join(', ') ===
        ownActorScopeMembers, `an actor’s _actorScope of members ${ownActorScopeMembers}`);
    if (typeof system?._sendInspectionEvent === 'function' && typeof system.inspect === 'function')
      problems.push(...inspectionCopyProblems(system));
    require('_parent' in actor && actor._parent === undefined, 'a root actor’s _parent (undefined)');
    const snapshot = actor.getSnapshot() as { _nodes?: unknown; children?: Record<string, unknown> };
    require(Array.isArray(snapshot._nodes), 'a snapshot’s _nodes (an array)');
    const child = snapshot.children?.child as Record<string, unknown> | undefined;
    const parent = child?._parent as { sessionId?: unknown } | undefined;
    require(parent?.sessionId === actor.sessionId, 'a child actor’s _parent (its parent)');
    const root = (machine as unknown as { root?: { transitions?: unknown; order?: unknown } }).root;
    require(root?.transitions instanceof Map, 'a state node’s transitions (a Map)');
    require(typeof root?.order === 'number', 'a state node’s order (a number)');
  } finally {
    try {
      actor.stop();
    } catch {
      // An actor that cannot stop lacks a member checked above: the problem is already listed.
    }
  }
  return problems;
}

/** The members of XState's actor scope, which the engine's own actor's scope has too (sorted). */
const ownActorScopeMembers = 'actionExecutor, defer, emit, id, logger, self, sessionId, stopChild, system';

/** The interpreter's own inspection events are reused objects: observers must get a copy, made at once. */
function inspectionCopyProblems(system: Record<string, unknown>): string[] {
  const seen: unknown[] = [];
  const subscription = (system.inspect as (observer: (event: unknown) => void) => { unsubscribe(): void })(
    (event) => seen.push(event),
  );
  const probe = { type: '@troupe.probe' };
  Object.defineProperty(probe, 'lazy', { enumerable: true, get: () => 'read' });
  (system._sendInspectionEvent as (event: object) => void)(probe);
  subscription.unsubscribe();
  const copy = seen.find((event) => (event as { type?: unknown }).type === '@troupe.probe');
  const copied =
    typeof copy === 'object' &&
    copy !== null &&
    copy !== probe &&
    Object.getOwnPropertyDescriptor(copy, 'lazy')?.value === 'read';
  return copied
    ? []
    : ['xstate no longer has system._sendInspectionEvent that gives observers a copy of the event'];
}

interface CanaryTrace {
  steps: unknown[];
  actions: string[];
}

// Stryker disable all: a mutant of the canary's definition changes the machine both interpreters run alike, so it
// cannot change the verdict (test/engine/runtime-gate.test.ts shows the canary tells interpreters apart).
/** Events the canary is sent, in order: they take every kind of transition the compiled interpreter computes. */
const canaryEvents: readonly EventObject[] = [
  { type: 'ignored' },
  { type: 'next' },
  { type: 'bump' },
  { type: 'bump' },
  { type: 'spawn' },
  { type: 'ping' },
  { type: 'drop' },
  { type: 'next' },
  { type: 'finish' },
];

/**
 * The canary: entry, exit and transition actions in XState's order, guards, an eventless transition, a raised event,
 * assign, an invoked callback actor that answers with `sendBack`, a spawned and a stopped child, a nested final state
 * with its done event, tags, and a final root with output.
 */
function canaryMachine(xstate: XStateRuntime, log: string[]): AnyStateMachine {
  const note = (name: string) => () => {
    log.push(name);
  };
  return xstate.createMachine(
    {
      id: 'troupeGateCanary',
      context: { count: 0, echoes: 0 },
      initial: 'idle',
      entry: 'rootEntry',
      states: {
        idle: { tags: ['waiting'], entry: 'idleEntry', exit: 'idleExit', on: { next: 'working' } },
        working: {
          initial: 'counting',
          entry: 'workingEntry',
          exit: 'workingExit',
          invoke: {
            id: 'echo',
            src: xstate.fromCallback((({ sendBack, receive }: never) => {
              (receive as (listener: (event: EventObject) => void) => void)((event) => {
                if (event.type === 'ping') (sendBack as (event: EventObject) => void)({ type: 'pong' });
              });
            }) as never),
          },
          on: {
            pong: {
              actions: [
                xstate.assign({
                  echoes: ({ context }: never) => (context as { echoes: number }).echoes + 1,
                } as never),
                'pongSeen',
              ],
            },
            ping: {
              actions: ({ self }: { self: AnyActorRef }) =>
                self.getSnapshot().children.echo?.send({ type: 'ping' }),
            },
            spawn: {
              actions: xstate.spawnChild(
                xstate.fromCallback((() => {}) as never) as never,
                { id: 'extra' } as never,
              ),
            },
            drop: { actions: xstate.stopChild('extra' as never) },
            finish: '.wrapping',
          },
          onDone: { target: 'done', actions: 'workingDone' },
          states: {
            counting: {
              tags: ['busy'],
              on: {
                bump: [
                  {
                    guard: ({ context }: { context: { count: number } }) => context.count >= 1,
                    target: 'checked',
                    actions: [
                      xstate.assign({
                        count: ({ context }: never) => (context as { count: number }).count + 1,
                      } as never),
                      'bumpLast',
                    ],
                  },
                  {
                    actions: [
                      xstate.assign({
                        count: ({ context }: never) => (context as { count: number }).count + 1,
                      } as never),
                      'bumpFirst',
                    ],
                  },
                ],
              },
            },
            checked: {
              always: { target: 'raised', actions: 'alwaysTaken' },
              exit: 'checkedExit',
            },
            raised: {
              entry: [xstate.raise({ type: 'internal' } as never), 'raisedEntry'],
              on: { internal: { actions: 'internalSeen' } },
            },
            wrapping: { type: 'final', entry: 'wrappingEntry' },
          },
        },
        done: {
          type: 'final',
          entry: 'doneEntry',
        },
      },
      output: ({ context }: { context: unknown }) => ({ result: context }),
    } as never,
    {
      actions: Object.fromEntries(
        [
          'rootEntry',
          'idleEntry',
          'idleExit',
          'workingEntry',
          'workingExit',
          'pongSeen',
          'workingDone',
          'bumpLast',
          'bumpFirst',
          'alwaysTaken',
          'checkedExit',
          'raisedEntry',
          'internalSeen',
          'wrappingEntry',
          'doneEntry',
        ].map((name) => [name, note(name)]),
      ),
    } as never,
  );
}

// Stryker restore all

/** What an observer of the actor sees after each event: the snapshot's state, data and shape, and its children. */
function traceOf(xstate: XStateRuntime, compile: (machine: AnyStateMachine) => AnyStateMachine): CanaryTrace {
  const actions: string[] = [];
  const steps: unknown[] = [];
  const actor = xstate.createActor(compile(canaryMachine(xstate, actions)) as never);
  const record = (): void => {
    const snapshot = actor.getSnapshot() as Record<string, unknown> & {
      tags: Set<string>;
      children: Record<string, unknown>;
    };
    steps.push({
      value: snapshot.value,
      status: snapshot.status,
      context: snapshot.context,
      output: snapshot.output,
      error: snapshot.error === undefined ? undefined : String(snapshot.error),
      tags: [...snapshot.tags].sort(),
      children: Object.keys(snapshot.children).sort(),
      shape: Object.keys(snapshot).sort(),
      actions: actions.length,
    });
  };
  actor.start();
  record();
  for (const event of canaryEvents) {
    actor.send(event);
    record();
  }
  actor.stop();
  return { steps, actions };
}

/** Each way the canary ran differently when compiled; a throw on either interpreter is a difference too. */
function canaryProblems(
  xstate: XStateRuntime,
  compile: (machine: AnyStateMachine) => AnyStateMachine,
): string[] {
  let expected: CanaryTrace;
  let actual: CanaryTrace;
  try {
    expected = traceOf(xstate, (machine) => machine);
  } catch (error) {
    return [`the canary machine failed on XState's interpreter: ${String(error)}`];
  }
  try {
    actual = traceOf(xstate, compile);
  } catch (error) {
    return [`the canary machine failed on the compiled interpreter: ${String(error)}`];
  }
  const problems: string[] = [];
  if (JSON.stringify(actual.actions) !== JSON.stringify(expected.actions))
    problems.push(
      `the canary ran actions [${actual.actions.join(', ')}] compiled, [${expected.actions.join(', ')}] on XState's interpreter`,
    );
  for (let index = 0; index < expected.steps.length; index++) {
    const want = JSON.stringify(expected.steps[index]);
    const got = JSON.stringify(actual.steps[index]);
    if (want !== got) {
      const after = index === 0 ? 'at start' : `after '${canaryEvents[index - 1]?.type}'`;
      problems.push(`the canary's snapshot ${after} is ${got} compiled, ${want} on XState's interpreter`);
      break;
    }
  }
  return problems;
}

/**
 * Checks the loaded xstate for the compiled interpreter: the private members it uses, then the canary on both
 * interpreters (only when the members are all there: the compiled interpreter would fail without them). Runs in a
 * few milliseconds; the process runs it once (interpreter-choice.ts).
 */
export function assessRuntime(
  xstate: XStateRuntime,
  compile: (machine: AnyStateMachine) => AnyStateMachine,
): RuntimeVerdict {
  const started = performance.now();
  let problems: string[];
  try {
    problems = structuralProblems(xstate);
    if (problems.length === 0) problems = canaryProblems(xstate, compile);
  } catch (error) {
    problems = [`checking xstate's members failed: ${String(error)}`];
  }
  return {
    accepted: problems.length === 0,
    problems,
    costMicros: Math.round((performance.now() - started) * 1000),
  };
}
