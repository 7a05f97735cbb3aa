import { randomUUID } from 'node:crypto';
import { type Actor, type AnyActorRef, createActor, type SnapshotFrom } from 'xstate';
import type { Agent } from '../agent/define-agent.ts';
import { AsyncQueue } from '../core/async-queue.ts';
import { type Clock, systemClock } from '../core/clock.ts';
import { ConfigError, TroupeError, toErrorInfo } from '../core/errors.ts';
import { EventBus } from '../core/event-bus.ts';
import type { Phase, RunEvent } from '../core/events.ts';
import { validateHistory } from '../core/history.ts';
import type { JsonValue } from '../core/json.ts';
import { type Message, type RunInput, userMessage } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';
import { compileMachine } from '../engine/compiled-machine.ts';
import type { AgentMachine, AgentMachineInput, AgentMachineOutput } from '../machines/agent.ts';
import {
  type AgentDescriptor,
  defaultSupervision,
  type SessionContext,
  type SessionMachine,
  type SessionRestore,
  type SupervisionPolicy,
  sessionMachine,
} from '../machines/session.ts';
import {
  checkpointOf,
  restoreOf,
  type StoredCheckpoint,
  sessionRecord,
} from '../persistence/session-store.ts';
import { checkpointKey, type SnapshotStore, sessionKey } from '../persistence/store.ts';
import { createMemoryStore } from '../persistence/store-memory.ts';
import type { ResourceManager } from '../resources/resource-manager.ts';
import { attachResources, type RunResourceOptions } from '../resources/resource-run.ts';
import { type InspectObserver, redactingInspector, secretArguments } from '../run/inspect.ts';
import { type Delegator, onFatal, setDelegator, setScope, stopOrphans } from '../run/run-hooks.ts';
import { checkRunInput } from '../run/run-options.ts';
import { buildRunResult } from '../run/run-result.ts';
import { deltaForwarder, registerRuntime, unregisterRuntime } from '../run/run-runtime.ts';
import { runtimeAgentMachine } from '../run/runtime-agent-machine.ts';
import {
  hasSessionRuntime,
  registerSessionRuntime,
  sessionEffectsLogic,
  unregisterSessionRuntime,
} from './session-effects.ts';
import { subFailure, turnResult } from './session-result.ts';

export type SessionStatus = 'running' | 'idle' | 'closed' | 'failed';

export interface SessionOptions {
  /** The session id; defaults to a random UUID. Must be unique among the sessions running in this process. */
  id?: string;
  /** Aborting it stops the session: the turn in progress ends `aborted`. */
  signal?: AbortSignal;
  /** Earlier conversation; never mutated. */
  history?: readonly Message[];
  /** Overrides the entry agent's maxHandoffDepth / maxHandoffRevisits. */
  maxHandoffDepth?: number;
  maxHandoffRevisits?: number;
  /** What happens when an agent actor fails; default: restart twice with back-off, then escalate. */
  supervision?: Partial<SupervisionPolicy>;
  /** This session's budget (over all its turns and agents); see RunOptions.budget. */
  budget?: RunResourceOptions['budget'];
  /** Whose budgets this session draws on. Default 'default'. */
  tenant?: string;
  /** Session id of the run that started this one: its spend counts on that run's budgets too (R5). */
  parentScope?: string;
}

/** What a system gives each of its sessions. */
export interface SessionEnvironment {
  clock: Clock;
  store: SnapshotStore;
  inspect?: InspectObserver;
  /** Agents known by name (handoff targets given as strings). */
  agents: ReadonlyMap<string, Agent<unknown>>;
  supervision: SupervisionPolicy;
  /** Every event of the session, as it is emitted (the system's tagged stream). */
  onEvent?: (event: RunEvent) => void;
  onClose?: (session: Session) => void;
  /** Events kept for `events()` of the turn in progress (oldest dropped beyond it). Default 10,000. */
  maxBufferedEvents?: number;
  /** The resource manager every model call of the session asks first (budgets, quotas). */
  resources?: ResourceManager;
  /** Keep the session's record in the store after it closes (true for a store the user gave). Default false. */
  keepRecords?: boolean;
}

/** A conversation held by a session supervisor actor: one turn at a time, follow-ups continue the history. */
export interface Session<TOutput = unknown> {
  readonly id: string;
  readonly status: SessionStatus;
  /** The agent holding the conversation now. */
  readonly agent: string;
  /** The result of the latest turn (the first one until `send` is called). Never rejects. */
  readonly result: Promise<RunResult<TOutput>>;
  /** The latest turn's events, from its run_start to its run_end, replayed from the start. */
  events(): AsyncIterable<RunEvent>;
  /** A follow-up user message: the next turn continues the same history with the agent that answered last. */
  send(input: RunInput): Promise<RunResult<TOutput>>;
  /** Stops the session (the turn in progress ends `aborted`); resolves once every actor of the session has stopped. */
  stop(reason?: string): Promise<void>;
  /** Resolves once the session has closed (stopped, escalated a failure, or the system shut down). */
  readonly closed: Promise<void>;
}

/** A session that can no longer take messages. */
export class SessionClosedError extends TroupeError {
  constructor(sessionId: string, status: SessionStatus) {
    super('session_closed', `Session ${sessionId} is ${status}; start a new session to continue.`);
  }
}

/** The session machine with the real agent runtime and effects; built once (provide() is not free). */
const runtimeSessionMachine: SessionMachine = compileMachine(
  sessionMachine.provide({ actors: { agent: runtimeAgentMachine, sessionEffects: sessionEffectsLogic } }),
);

/** Every agent the entry can reach through handoffs given as agents, plus the environment's named agents. */
export function agentCatalog(
  entry: Agent<unknown>,
  known: ReadonlyMap<string, Agent<unknown>>,
): Map<string, Agent<unknown>> {
  const catalog = new Map<string, Agent<unknown>>();
  const visit = (agent: Agent<unknown>) => {
    const existing = catalog.get(agent.name);
    if (existing) {
      if (existing !== agent)
        throw new ConfigError(`Two different agents are named "${agent.name}"; agent names must be unique.`);
      return;
    }
    catalog.set(agent.name, agent);
    for (const target of agent.handoffs) {
      if (typeof target === 'string') {
        const named = known.get(target);
        if (!named)
          throw new ConfigError(
            `Agent "${agent.name}" hands off to "${target}", which this system does not know: define it and pass it in createAgentSystem({ agents }).`,
          );
        visit(named);
      } else visit(target as Agent<unknown>);
    }
  };
  visit(entry);
  return catalog;
}

function descriptorOf(agent: Agent<unknown>): AgentDescriptor {
  return {
    limits: agent.limits,
    toolNames: agent.tools.names,
    hasOutputSchema: agent.outputSchema !== undefined,
    handoffTools: { ...agent.handoffTools },
  };
}

function supervisionOf(
  base: SupervisionPolicy,
  given: Partial<SupervisionPolicy> | undefined,
): SupervisionPolicy {
  const policy = { ...base, ...given };
  if (!['restart', 'stop', 'escalate'].includes(policy.strategy))
    throw new ConfigError(
      `supervision.strategy must be restart, stop or escalate, got ${String(policy.strategy)}.`,
    );
  if (!['stop', 'escalate'].includes(policy.onExhausted))
    throw new ConfigError(`supervision.onExhausted must be stop or escalate.`);
  for (const key of ['maxRestarts', 'backoffMs', 'backoffFactor', 'maxBackoffMs'] as const) {
    const value = policy[key];
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      throw new ConfigError(`supervision.${key} must be a non-negative number, got ${String(value)}.`);
  }
  return policy;
}

/** The phase and sub-state of an agent snapshot, for `phase` events. */
function phaseOf(value: SnapshotFrom<AgentMachine>['value']): [Phase, string] {
  if (typeof value === 'string') return [value as Phase, value];
  const running = (value as { running?: unknown }).running;
  if (typeof running === 'string') return [running === 'finalOutput' ? 'finalOutput' : 'toolUse', running];
  const inner = running as Record<string, string>;
  if ('finalOutput' in inner) return ['finalOutput', inner.finalOutput ?? ''];
  return ['toolUse', inner.toolUse ?? ''];
}

interface Turn<TOutput> {
  result: Promise<RunResult<TOutput>>;
  resolve: (result: RunResult<TOutput>) => void;
  events: RunEvent[];
  listeners: Set<AsyncQueue<RunEvent>>;
  ended: boolean;
}

/**
 * Starts a session: a session supervisor machine as its own root actor (ARCHITECTURE rule 8), the entry agent as
 * its child, the abort and timeout wiring, checkpoints to the store after every completed step. Throws a
 * ConfigError for a bad agent, input or history, before anything runs.
 */
export function startSession<TOutput>(
  entry: Agent<TOutput>,
  input: RunInput,
  options: SessionOptions,
  environment: SessionEnvironment,
  restore?: SessionRestore,
): Session<TOutput> {
  if (entry?.kind !== 'agent')
    throw new ConfigError('spawn(): the first argument must be an agent from defineAgent().');
  checkRunInput(input, 'spawn()');
  const callerHistory = options.history ?? [];
  validateHistory(callerHistory);
  const sessionId = options.id ?? randomUUID();
  if (hasSessionRuntime(sessionId))
    throw new ConfigError(`A session with id "${sessionId}" is already running.`);
  const agents = agentCatalog(entry as Agent<unknown>, environment.agents);
  const supervision = supervisionOf(environment.supervision, options.supervision);
  const count = (value: number | undefined, fallback: number, key: string) => {
    if (value === undefined) return fallback;
    if (!Number.isInteger(value) || value < 0) throw new ConfigError(`${key} must be an integer >= 0.`);
    return value;
  };
  const handoffLimits = {
    maxDepth: count(options.maxHandoffDepth, entry.maxHandoffDepth, 'maxHandoffDepth'),
    maxRevisits: count(options.maxHandoffRevisits, entry.maxHandoffRevisits, 'maxHandoffRevisits'),
  };
  const { clock, store } = environment;
  const bus = new EventBus(sessionId, clock);
  const maxBuffered = environment.maxBufferedEvents ?? 10_000;
  const disposers: (() => void)[] = [];

  let turn: Turn<TOutput> = newTurn();
  let resolvedTurns = 0;
  let status: SessionStatus = 'running';
  if (restore && !agents.has(restore.current))
    throw new ConfigError(
      `restore: the stored session was held by "${restore.current}", which ${entry.name} cannot reach.`,
    );
  let current = restore?.current ?? entry.name;
  let closeResolve: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => {
    closeResolve = resolve;
  });

  disposers.push(
    bus.subscribe((event) => {
      if (!turn.ended) {
        turn.events.push(event);
        if (turn.events.length > maxBuffered) turn.events.shift();
        for (const queue of turn.listeners) queue.push(event);
      }
      environment.onEvent?.(event);
    }),
  );

  // Budgets and quotas (the resource helper's manager): every model call of every agent of the session asks it.
  const resourceOptions: RunResourceOptions = {};
  if (environment.resources) resourceOptions.resources = environment.resources;
  if (options.budget) resourceOptions.budget = options.budget;
  if (options.tenant !== undefined) resourceOptions.tenant = options.tenant;
  if (options.parentScope !== undefined) resourceOptions.parentScope = options.parentScope;
  const detachResources = attachResources(resourceOptions, {
    sessionId,
    agent: entry.name,
    provider: entry.model.provider,
    model: entry.model.model,
    clock,
    bus,
  });
  if (detachResources) disposers.push(detachResources);
  registerSessionRuntime({ agents, store, sessionId });
  const descriptors: Record<string, AgentDescriptor> = {};
  for (const [name, agent] of agents) {
    descriptors[name] = descriptorOf(agent);
    const key = `${sessionId}/${name}`;
    registerRuntime(key, { agent, bus, clock, onDelta: deltaForwarder(bus, name) });
    disposers.push(() => unregisterRuntime(key));
    disposers.push(onFatal(key, (error) => crash(name, error)));
    disposers.push(setDelegator(key, delegatorFor(key)));
  }

  // agentTool calls of the session's agents run their sub-agent as a child of this session's actor (M3).
  let subSeq = 0;
  function delegatorFor(callerKey: string): Delegator {
    return async (request) => {
      // Leave the caller's call stack first: the tool may have been started inside a transition of this system.
      await Promise.resolve();
      const { agent } = request;
      if (finished) return subFailure(sessionId, agent.name, request.input, 'the session has closed');
      const id = `sub-${++subSeq}`;
      const key = `${callerKey}>${request.callId}`;
      const timeoutMs = agent.limits.timeoutMs;
      const undo: (() => void)[] = [
        () => unregisterRuntime(key),
        setDelegator(key, delegatorFor(key)),
        setScope(key, {
          deadline: timeoutMs === null ? null : clock.now() + timeoutMs,
          ...(environment.inspect ? { inspect: environment.inspect } : {}),
        }),
      ];
      registerRuntime(key, { agent, bus, clock, onDelta: deltaForwarder(bus, agent.name) });
      const input: AgentMachineInput = {
        sessionId: key,
        agent: agent.name,
        limits: agent.limits,
        toolNames: agent.tools.names,
        hasOutputSchema: agent.outputSchema !== undefined,
        history: [userMessage(request.input)],
        baseLength: 0,
      };
      return new Promise<RunResult<unknown>>((resolve) => {
        let settled = false;
        let timer: unknown;
        let child: AnyActorRef | undefined;
        let subscription: { unsubscribe(): void } | undefined;
        const onAbort = () => child?.send({ type: 'abort', reason: 'the calling agent stopped' });
        const settle = (output: AgentMachineOutput | undefined, why = 'the sub-agent was stopped') => {
          if (settled) return;
          settled = true;
          subscription?.unsubscribe();
          if (timer !== undefined) clock.clearTimeout(timer);
          request.signal.removeEventListener('abort', onAbort);
          for (const step of undo) step();
          // Done children stay in the parent's snapshot until stopped (pitfall 7).
          if (!finished && child) actor.send({ type: 'delegate.end', id });
          resolve(
            output
              ? { ...buildRunResult<unknown>(output), sessionId }
              : subFailure(sessionId, agent.name, request.input, why),
          );
        };
        actor.send({ type: 'delegate.start', id, input });
        child = actor.getSnapshot().children[id] as AnyActorRef | undefined;
        if (!child) return settle(undefined, 'the session is not running');
        const started = child;
        subscription = started.subscribe({
          next: (snapshot: SnapshotFrom<AgentMachine>) => {
            if (snapshot.status === 'done') settle(snapshot.output);
          },
          error: (error: unknown) => {
            stopOrphans(started);
            settle(undefined, `the sub-agent failed: ${toErrorInfo(error).message}`);
          },
          complete: () => settle(undefined),
        });
        const now = started.getSnapshot() as SnapshotFrom<AgentMachine>;
        if (now.status === 'done') return settle(now.output);
        // A fatal tool of the sub-agent fails the sub-run: the caller's model gets the error.
        undo.push(onFatal(key, (error) => settle(undefined, `the sub-agent failed: ${error.message}`)));
        if (timeoutMs !== null) timer = clock.setTimeout(() => started.send({ type: 'timeout' }), timeoutMs);
        request.signal.addEventListener('abort', onAbort, { once: true });
        if (request.signal.aborted) onAbort();
      });
    };
  }

  const secretKeys = [...agents.values()].flatMap((agent) => secretArguments(agent));
  const actor: Actor<SessionMachine> = createActor(runtimeSessionMachine, {
    // The root actor is named after the session: that is the name the inspector shows for it.
    id: sessionId,
    input: {
      sessionId,
      entry: entry.name,
      agents: descriptors,
      history: [...callerHistory, userMessage(input)],
      handoffLimits,
      supervision,
      ...(restore ? { restore } : {}),
    },
    clock,
    ...(environment.inspect ? { inspect: redactingInspector(environment.inspect, secretKeys) } : {}),
  });

  /** A fatal tool of the agent `name` failed: tell the supervisor, if that agent is the active child. */
  function crash(name: string, error: ReturnType<typeof toErrorInfo>) {
    const context = actor.getSnapshot().context;
    if (context.current === name && context.activeId !== null)
      actor.send({ type: 'agent.crashed', id: context.activeId, error });
  }

  // The active agent child: phase events, checkpoints after each completed step, its own timeout.
  let watched: { id: string; stop: () => void } | undefined;
  const watch = (id: string | null, context: SessionContext) => {
    if (watched?.id === id) return;
    watched?.stop();
    watched = undefined;
    if (id === null) return;
    const child = actor.getSnapshot().children[id] as AnyActorRef | undefined;
    if (!child) return;
    const name = context.current;
    const segment = context.segment;
    const agent = agents.get(name);
    let lastPhase = '';
    let savedAt = '';
    const onSnapshot = (snapshot: SnapshotFrom<AgentMachine>) => {
      const [phase, state] = phaseOf(snapshot.value);
      const key = `${phase}.${state}`;
      if (key !== lastPhase) {
        lastPhase = key;
        bus.emit(name, 'phase', {
          phase,
          state,
          step: snapshot.context.step,
          retryCount: snapshot.context.retryCount,
        });
      }
      // Quiescent points: a model call about to be made, or tools about to run (the model's answer is kept).
      if (state === 'callingModel' || state === 'runningTools') {
        const mark = `${snapshot.context.modelCalls}:${state}`;
        if (mark !== savedAt) {
          savedAt = mark;
          const record: StoredCheckpoint = {
            agent: name,
            segment,
            checkpoint: checkpointOf(snapshot.context),
            session: restoreOf(context),
          };
          persist(name, () => store.set(checkpointKey(sessionId), record as unknown as JsonValue));
        }
      }
    };
    // The supervisor hears of the failure through xstate.error.actor.*; here we only clean up after it.
    const subscription = child.subscribe({ next: onSnapshot, error: () => stopOrphans(child) });
    onSnapshot(child.getSnapshot());
    let timer: unknown;
    const timeoutMs = agent?.limits.timeoutMs ?? null;
    if (timeoutMs !== null) timer = clock.setTimeout(() => child.send({ type: 'timeout' }), timeoutMs);
    const clearScope = setScope(`${sessionId}/${name}`, {
      deadline: timeoutMs === null ? null : clock.now() + timeoutMs,
      ...(environment.inspect ? { inspect: environment.inspect } : {}),
    });
    watched = {
      id,
      stop: () => {
        clearScope();
        subscription.unsubscribe();
        if (timer !== undefined) clock.clearTimeout(timer);
      },
    };
  };

  const emitRunStart = (turnInput: RunInput, historyLength: number) => {
    const agent = agents.get(current) ?? entry;
    bus.emit(current, 'run_start', {
      input: turnInput as JsonValue,
      historyLength,
      model: agent.model.model,
      provider: agent.model.provider,
    });
  };

  const finishTurn = (result: RunResult<TOutput>) => {
    if (turn.ended) return;
    bus.emit(result.agent, 'run_end', {
      status: result.status,
      stopReason: result.stopReason,
      iterationsUsed: result.iterationsUsed,
      toolCalls: result.toolCalls,
      usage: result.usage,
    });
    turn.ended = true;
    for (const queue of turn.listeners) queue.end();
    turn.listeners.clear();
    turn.resolve(result);
  };

  // Store writes of this session, in order (a checkpoint saved late must not land after the closing delete).
  let writes: Promise<void> = Promise.resolve();
  const persist = (agent: string, write: () => unknown, closing = false) => {
    if (finished && !closing) return;
    writes = writes
      .then(() => write())
      .then(
        () => undefined,
        (error: unknown) => {
          const info = toErrorInfo(error);
          if (!finished)
            bus.emit(agent, 'error', {
              message: `store: ${info.message}`,
              type: info.name,
              code: 'store_failed',
            });
        },
      );
  };

  let finished = false;
  const close = (context: SessionContext | undefined, internalError?: unknown) => {
    if (finished) return;
    finished = true;
    if (!turn.ended) {
      const result: RunResult<TOutput> = context
        ? turnResult<TOutput>(context)
        : turnResult<TOutput>({ ...lastContext, lastTurn: null } as SessionContext);
      if (internalError !== undefined || !context || context.turns <= resolvedTurns) {
        result.status = internalError === undefined ? 'stopped' : 'failed';
        result.stopReason = internalError === undefined ? 'aborted' : 'error';
        result.error =
          internalError === undefined
            ? { name: 'RunStopped', code: 'aborted', message: 'the session was stopped' }
            : { name: 'InternalError', code: 'internal', message: toErrorInfo(internalError).message };
      }
      finishTurn(result);
    }
    status =
      context?.lastTurn?.status === 'failed' && actor.getSnapshot().value === 'failed' ? 'failed' : 'closed';
    watched?.stop();
    watched = undefined;
    for (const dispose of disposers) dispose();
    unregisterSessionRuntime(sessionId);
    options.signal?.removeEventListener('abort', onAbort);
    // A closed session never restarts: its checkpoint goes. Its record stays only in a store the user gave us, so
    // the default in-memory store does not grow with every session a long-lived system has ever run.
    const final = context ?? lastContext;
    persist(final.current, () => store.delete(checkpointKey(sessionId)), true);
    persist(
      final.current,
      () =>
        environment.keepRecords
          ? store.set(sessionKey(sessionId), sessionRecord(final))
          : store.delete(sessionKey(sessionId)),
      true,
    );
    environment.onClose?.(session as Session);
    // `closed` resolves once the store has everything: a new process can restore from it right after.
    void writes.then(() => {
      bus.clear();
      closeResolve();
    });
  };

  let lastContext: SessionContext = actor.getSnapshot().context;
  actor.subscribe({
    next: (snapshot) => {
      lastContext = snapshot.context;
      current = snapshot.context.current;
      watch(snapshot.context.activeId, snapshot.context);
      if (snapshot.context.turns > resolvedTurns) {
        resolvedTurns = snapshot.context.turns;
        const result = turnResult<TOutput>(snapshot.context);
        const record = sessionRecord(snapshot.context);
        persist(snapshot.context.current, () => store.set(sessionKey(sessionId), record));
        if (snapshot.status !== 'done') status = 'idle';
        finishTurn(result);
      }
      if (snapshot.status === 'done') close(snapshot.context);
    },
    // Pitfall 17: a root actor without an error observer crashes the process. Ours turns it into a result.
    error: (error) => close(undefined, error),
  });
  for (const emitted of ['handoff', 'supervisor'] as const) {
    actor.on(emitted, (event) => {
      if (event.type === 'handoff') bus.emit(event.agent, 'handoff', event.data);
      else if (event.type === 'supervisor') bus.emit(event.agent, 'supervisor', event.data);
    });
  }

  const onAbort = () => {
    void session.stop(abortReason(options.signal));
  };

  const session: Session<TOutput> = {
    id: sessionId,
    get status() {
      return status;
    },
    get agent() {
      return current;
    },
    get result() {
      return turn.result;
    },
    closed,
    events() {
      const queue = new AsyncQueue<RunEvent>();
      for (const event of turn.events) queue.push(event);
      if (turn.ended) queue.end();
      else turn.listeners.add(queue);
      return queue;
    },
    send(next: RunInput) {
      try {
        checkRunInput(next, 'send()');
      } catch (error) {
        return Promise.reject(error);
      }
      const previous = turn.result;
      return previous.then(() => {
        if (status === 'closed' || status === 'failed') throw new SessionClosedError(sessionId, status);
        turn = newTurn();
        status = 'running';
        emitRunStart(next, lastContext.transcript.length);
        actor.send({ type: 'user.message', message: userMessage(next) });
        return turn.result;
      });
    },
    stop(reason?: string) {
      if (!finished) actor.send(reason === undefined ? { type: 'stop' } : { type: 'stop', reason });
      return closed;
    },
  };

  emitRunStart(input, callerHistory.length);
  options.signal?.addEventListener('abort', onAbort, { once: true });
  actor.start();
  if (options.signal?.aborted) onAbort();
  return session;
}

function newTurn<TOutput>(): Turn<TOutput> {
  let resolve: (result: RunResult<TOutput>) => void = () => undefined;
  const result = new Promise<RunResult<TOutput>>((done) => {
    resolve = done;
  });
  return { result, resolve, events: [], listeners: new Set(), ended: false };
}

function abortReason(signal: AbortSignal | undefined): string {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error && reason.name !== 'AbortError')
    return `the session was aborted: ${reason.message}`;
  if (typeof reason === 'string') return `the session was aborted: ${reason}`;
  return 'the session was aborted';
}

/** Defaults for a session started outside a system (run() of an agent with handoffs). */
export function defaultEnvironment(clock: Clock = systemClock): SessionEnvironment {
  return { clock, store: createMemoryStore(), agents: new Map(), supervision: defaultSupervision };
}
