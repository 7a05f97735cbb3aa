import { randomUUID } from 'node:crypto';
import { type Actor, type AnyActorRef, createActor, type SnapshotFrom } from 'xstate';
import type { Agent } from '../agent/define-agent.ts';
import type { ApprovalDecision, ApprovalRecord, ApprovalRequest } from '../core/approvals.ts';
import { type Clock, systemClock } from '../core/clock.ts';
import { ConfigError, TroupeError, toErrorInfo } from '../core/errors.ts';
import { EventBus } from '../core/event-bus.ts';
import type { RunEvent } from '../core/events.ts';
import { validateHistory } from '../core/history.ts';
import type { JsonValue } from '../core/json.ts';
import { type Message, type RunInput, userMessage } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';
import { compileMachine } from '../engine/compiled-machine.ts';
import type { AgentMachine } from '../machines/agent.ts';
import {
  type AgentDescriptor,
  defaultSupervision,
  type SessionContext,
  type SessionMachine,
  type SessionMachineInput,
  type SupervisionOptions,
  type SupervisionPolicy,
  sessionMachine,
} from '../machines/session.ts';
import { createMemoryStore } from '../persistence/memory-store.ts';
import type {
  MaybePromise,
  SessionStore,
  StoredSession,
  StoredSessionState,
  StoredSessionStatus,
} from '../persistence/store.ts';
import { checkReachablePrices } from '../resources/priced-agents.ts';
import type { ResourceManager } from '../resources/resource-manager.ts';
import { attachResources, type RunResourceOptions } from '../resources/resource-run.ts';
import { type InspectObserver, redactingInspector, secretArguments } from '../run/inspect.ts';
import { onFatal, setDelegator } from '../run/run-hooks.ts';
import { checkRunInput } from '../run/run-options.ts';
import { deltaForwarder, registerRuntime, unregisterRuntime } from '../run/run-runtime.ts';
import { runtimeAgentMachine } from '../run/runtime-agent-machine.ts';
import { watchAgent } from './agent-watch.ts';
import { ApprovalError } from './approval-error.ts';
import { delegatorFor } from './delegation.ts';
import { agentCatalog, descriptorOf, supervisionOf } from './session-catalog.ts';
import { SessionDurability } from './session-durability.ts';
import {
  hasSessionRuntime,
  registerSessionRuntime,
  sessionEffectsLogic,
  unregisterSessionRuntime,
} from './session-effects.ts';
import { SessionLog } from './session-log.ts';
import { interruptedTurnResult, turnResult } from './session-result.ts';
import { Turn, type TurnOptions } from './session-turns.ts';

export { agentCatalog } from './session-catalog.ts';
export type { TurnOptions } from './session-turns.ts';

/**
 * Where a session stands: running a turn, awaiting people's decisions on tool calls, idle between turns, suspended
 * (the system shut down with `mode: 'suspend'`; `recover()` resumes it), closed (stopped) or failed (a failure
 * was escalated).
 */
export type SessionStatus = 'running' | 'awaiting' | 'idle' | 'suspended' | 'closed' | 'failed';

export interface SessionOptions {
  /** The session id; defaults to a random UUID. Must be unique among the sessions running in this process. */
  id?: string | undefined;
  /** Aborting it stops the session: the turn in progress ends `aborted`. */
  signal?: AbortSignal | undefined;
  /** Earlier conversation; never mutated. */
  history?: readonly Message[] | undefined;
  /** Overrides the entry agent's maxHandoffDepth / maxHandoffRevisits. */
  maxHandoffDepth?: number | undefined;
  maxHandoffRevisits?: number | undefined;
  /** What happens when an agent actor fails; default: restart twice with back-off, then escalate. */
  supervision?: SupervisionOptions | undefined;
  /** This session's budget (over all its turns and agents); see RunOptions.budget. */
  budget?: RunResourceOptions['budget'] | undefined;
  /** Whose budgets this session draws on. Default 'default'. */
  tenant?: string | undefined;
  /** Session id of the run that started this one: its spend counts on that run's budgets too. */
  parentScope?: string | undefined;
}

/** Which events `session.events()` gives. */
export interface SessionEventsOptions {
  /**
   * Every event with `seq > after`, across turns, as long as the session lives (give the last seq a client saw,
   * e.g. an SSE Last-Event-ID, to continue where it stopped, even after a crash and a recovery). Without it: the
   * latest turn's events, from its run_start to its run_end.
   */
  after?: number | undefined;
  /** Ends the iteration when aborted. */
  signal?: AbortSignal | undefined;
}

/** What a system gives each of its sessions. */
export interface SessionEnvironment {
  clock: Clock;
  store: SessionStore;
  inspect?: InspectObserver | undefined;
  /** Agents known by name (handoff targets given as strings, recovered sessions' agents). */
  agents: ReadonlyMap<string, Agent<unknown>>;
  supervision: SupervisionPolicy;
  /** Every committed event of the session (the system's tagged stream). */
  onEvent?: ((event: RunEvent) => void) | undefined;
  onClose?: ((session: Session) => void) | undefined;
  /** Committed events kept in memory for readers (older ones are read back from the store). Default 10,000. */
  maxBufferedEvents?: number | undefined;
  /** The resource manager every model call of the session asks first (budgets, quotas). */
  resources?: ResourceManager | undefined;
  /** Keep the session's record in the store after it closes (true for a store the user gave). Default false. */
  keepRecords?: boolean | undefined;
  /** How often a session waiting for approvals looks for decisions other processes stored. Default 1,000 ms. */
  approvalPollMs?: number | undefined;
  /** False once the system drains or shuts down: sessions take no new messages. */
  accepting?: (() => boolean) | undefined;
}

/** A conversation held by a session supervisor actor: one turn at a time, follow-ups continue the history. */
export interface Session<TOutput = unknown> {
  readonly id: string;
  readonly status: SessionStatus;
  /** The agent holding the conversation now. */
  readonly agent: string;
  /** The result of the turn in progress, or of the last one that finished. Never rejects. */
  readonly result: Promise<RunResult<TOutput>>;
  /** The latest turn's events (run_start to run_end), or with `after`, every event after that seq (see options). */
  events(options?: SessionEventsOptions): AsyncIterable<RunEvent>;
  /**
   * A follow-up user message: the next turn continues the same history with the agent that answered last. Sent
   * while a turn runs, it is queued (and stored, so a crash loses none) and starts when that turn ends.
   */
  send(input: RunInput, options?: TurnOptions): Promise<RunResult<TOutput>>;
  /** Tool calls of this session waiting for a person. */
  pendingApprovals(): ApprovalRequest[];
  /** Approves a waiting call: it runs once every waiting call of its batch is decided. Resolves once stored. */
  approve(callId: string): Promise<void>;
  /** Rejects a waiting call (or declines a question): the model gets the reason. Resolves once stored. */
  reject(callId: string, reason: string): Promise<void>;
  /** Answers a question asked through the `askHuman` tool. Resolves once stored. */
  answer(callId: string, text: string): Promise<void>;
  /** Stops the session (the turn in progress ends `aborted`); resolves once every actor of the session has stopped. */
  stop(reason?: string): Promise<void>;
  /** Resolves once the session has closed (stopped, escalated a failure, suspended, or the system shut down). */
  readonly closed: Promise<void>;
}

/** A session that can no longer take messages. */
export class SessionClosedError extends TroupeError {
  constructor(sessionId: string, status: SessionStatus) {
    super('session_closed', `Session ${sessionId} is ${status}; start a new session to continue.`);
  }
}

/** What the system can do to a session beyond its public interface. */
export interface SessionControl<TOutput = unknown> extends Session<TOutput> {
  /** Stops every actor without ending the turn in progress; the store keeps it resumable. */
  suspend(): Promise<void>;
  /** Resolves once the turn in progress and every queued one have finished (or the session closed). */
  drained(): Promise<void>;
  /** Applies decisions other processes stored for this session's waiting calls. */
  syncDecisions(records: readonly ApprovalRecord[]): void;
}

/** The session machine with the real agent runtime and effects; built once (provide() is not free). */
const runtimeSessionMachine: SessionMachine = compileMachine(
  sessionMachine.provide({ actors: { agent: runtimeAgentMachine, sessionEffects: sessionEffectsLogic } }),
);

/** How a session starts: fresh, resuming an interrupted turn, or continuing a finished session with new input. */
export type SessionStart =
  | { kind: 'fresh' }
  | { kind: 'resume'; stored: StoredSessionState; extraInput?: RunInput | undefined }
  | { kind: 'continue'; stored: StoredSessionState };

/**
 * Starts a session: a session supervisor machine as its own root actor, the entry agent as its child, write-ahead
 * checkpoints before every model and tool call, and the session's event log. Throws a ConfigError for a bad agent,
 * input or history, before anything runs.
 */
export function startSession<TOutput>(
  entry: Agent<TOutput>,
  input: RunInput,
  options: SessionOptions,
  environment: SessionEnvironment,
  start: SessionStart = { kind: 'fresh' },
): SessionControl<TOutput> {
  if (entry?.kind !== 'agent')
    throw new ConfigError('spawn(): the first argument must be an agent from defineAgent().');
  checkRunInput(input, 'spawn()');
  const stored = start.kind === 'fresh' ? undefined : start.stored;
  const callerHistory = stored ? stored.session.transcript : (options.history ?? []);
  validateHistory(callerHistory);
  const sessionId = stored?.session.id ?? options.id ?? randomUUID();
  if (hasSessionRuntime(sessionId))
    throw new ConfigError(`A session with id "${sessionId}" is already running.`);
  const agents = agentCatalog(entry as Agent<unknown>, environment.agents);
  const supervision = supervisionOf(
    environment.supervision,
    stored?.session.options.supervision ?? options.supervision,
  );
  const handoffLimits = {
    maxDepth: count(
      stored?.session.options.maxHandoffDepth ?? options.maxHandoffDepth,
      entry.maxHandoffDepth,
      'maxHandoffDepth',
    ),
    maxRevisits: count(
      stored?.session.options.maxHandoffRevisits ?? options.maxHandoffRevisits,
      entry.maxHandoffRevisits,
      'maxHandoffRevisits',
    ),
  };
  const resumedTurn = start.kind === 'resume' ? start.stored.session.turn : null;
  if (resumedTurn?.agent && !agents.has(resumedTurn.session.current))
    throw new ConfigError(
      `restore: session "${sessionId}" was held by "${resumedTurn.session.current}", which ${entry.name} cannot reach.`,
    );
  const { clock, store } = environment;
  const lastSeq = stored?.lastSeq ?? -1;
  const bus = new EventBus(sessionId, clock, lastSeq + 1);
  const log = new SessionLog(lastSeq, environment.maxBufferedEvents ?? 10_000, (after) =>
    store.readEvents(sessionId, after),
  );
  const disposers: (() => void)[] = [];
  const routes = new Map<string, AnyActorRef>();
  let childSeq = 0;
  let finished = false;
  let status: SessionStatus = 'running';

  // Turns: the one running (or the latest finished) and those sent meanwhile.
  const firstInput = resumedTurn ? resumedTurn.input : input;
  let turn = new Turn<TOutput>(firstInput);
  const queue: Turn<TOutput>[] = [];
  if (start.kind === 'resume') {
    for (const queued of start.stored.session.queued) queue.push(new Turn<TOutput>(queued));
    if (start.extraInput !== undefined) queue.push(new Turn<TOutput>(start.extraInput));
  }
  let resolvedTurns = 0;

  const storedOptions: StoredSession['options'] = stored?.session.options ?? {
    maxHandoffDepth: handoffLimits.maxDepth,
    maxHandoffRevisits: handoffLimits.maxRevisits,
    supervision,
    ...(options.tenant !== undefined ? { tenant: options.tenant } : {}),
    ...(options.parentScope !== undefined ? { parentScope: options.parentScope } : {}),
    ...(options.budget !== undefined ? { budget: options.budget } : {}),
  };
  const row: StoredSession = stored?.session ?? {
    id: sessionId,
    status: 'running',
    entry: entry.name,
    agent: entry.name,
    turns: 0,
    transcript: [...callerHistory],
    turn: null,
    queued: [],
    options: storedOptions,
    updatedAt: clock.now(),
  };

  let actor: Actor<SessionMachine>;
  const durability = new SessionDurability({
    store,
    sessionId,
    clock,
    log,
    row,
    runs: stored?.runs ?? new Map(),
    journal: stored?.journal ?? new Map(),
    approvals: stored?.approvals ?? [],
    session: () => actor.getSnapshot().context,
    turnInput: firstInput,
    firstSeq: resumedTurn?.firstSeq ?? lastSeq + 1,
    onFlushError: (error) => reportStoreError(error),
  });
  const reportStoreError = (error: unknown) => {
    const info = toErrorInfo(error);
    bus.emit(current, 'error', { message: `store: ${info.message}`, type: info.name, code: 'store_failed' });
  };

  // Every event is logged; readers (events(), the system's stream) get it once it is committed.
  disposers.push(
    bus.subscribe((event) => {
      log.append(event);
      durability.scheduleFlush();
    }),
  );
  log.onCommitted = environment.onEvent;

  // Budgets and quotas: every model call of every agent of the session asks the manager.
  const resourceOptions: RunResourceOptions = {};
  if (environment.resources) resourceOptions.resources = environment.resources;
  const budget = storedOptions.budget;
  if (budget) resourceOptions.budget = budget;
  if (storedOptions.tenant !== undefined) resourceOptions.tenant = storedOptions.tenant;
  if (storedOptions.parentScope !== undefined) resourceOptions.parentScope = storedOptions.parentScope;
  checkReachablePrices([entry as Agent<unknown>], resourceOptions, { sessionId, known: environment.agents });
  const detachResources = attachResources(resourceOptions, {
    sessionId,
    agent: entry.name,
    provider: entry.model.provider,
    model: entry.model.model,
    clock,
    bus,
  });
  if (detachResources) disposers.push(detachResources);

  registerSessionRuntime({
    agents,
    sessionId,
    checkpoint: (agent, segment) => durability.topCheckpoint(agent, segment),
  });
  const delegationHost = {
    sessionId,
    actor: () => actor,
    bus,
    clock,
    inspect: environment.inspect,
    durability,
    turn: () => actor.getSnapshot().context.turns + 1,
    finished: () => finished,
    routes,
    nextChildId: () => `sub-${++childSeq}`,
  };
  const descriptors: Record<string, AgentDescriptor> = {};
  for (const [name, agent] of agents) {
    descriptors[name] = descriptorOf(agent);
    const key = `${sessionId}/${name}`;
    registerRuntime(key, {
      agent,
      bus,
      clock,
      onDelta: deltaForwarder(bus, name),
      sessionId,
      route: name,
      get turn() {
        return actor.getSnapshot().context.turns + 1;
      },
      callPath: '',
      durable: durability.runFor({ route: name, nested: false }),
    });
    disposers.push(() => unregisterRuntime(key));
    disposers.push(onFatal(key, (error) => crash(name, error)));
    disposers.push(setDelegator(key, delegatorFor(delegationHost, key)));
  }

  const machineInput: SessionMachineInput = {
    sessionId,
    entry: resumedTurn?.agent ? resumedTurn.session.current : stored ? stored.session.agent : entry.name,
    agents: descriptors,
    history: [...callerHistory, userMessage(firstInput)],
    handoffLimits,
    supervision,
    turns: stored?.session.turns ?? 0,
  };
  if (resumedTurn?.agent) machineInput.restore = resumedTurn.session;
  let current = machineInput.entry;

  const secretKeys = [...agents.values()].flatMap((agent) => secretArguments(agent));
  actor = createActor(runtimeSessionMachine, {
    // The root actor is named after the session: that is the name the inspector shows for it.
    id: sessionId,
    input: machineInput,
    clock,
    ...(environment.inspect ? { inspect: redactingInspector(environment.inspect, secretKeys) } : {}),
  });

  /** A fatal tool of the agent `name` failed: tell the supervisor, if that agent is the active child. */
  function crash(name: string, error: ReturnType<typeof toErrorInfo>) {
    const context = actor.getSnapshot().context;
    if (context.current !== name || context.activeId === null) return;
    const child = actor.getSnapshot().children[context.activeId] as AnyActorRef | undefined;
    const history = (child?.getSnapshot() as SnapshotFrom<AgentMachine> | undefined)?.context.history;
    actor.send({ type: 'agent.crashed', id: context.activeId, error, ...(history ? { history } : {}) });
  }

  // The active agent: its phase events and timeout; approvals reach it by its route.
  let watched: { id: string; stop: () => void } | undefined;
  const watch = (context: SessionContext) => {
    const id = context.activeId;
    if (watched?.id === id) return;
    watched?.stop();
    watched = undefined;
    routes.delete(current);
    if (id === null) return;
    const child = actor.getSnapshot().children[id] as AnyActorRef | undefined;
    const agent = agents.get(context.current);
    if (!child || !agent) return;
    routes.set(context.current, child);
    const stopWatching = watchAgent({
      child,
      agent,
      runtimeKey: `${sessionId}/${context.current}`,
      bus,
      clock,
      inspect: environment.inspect,
    });
    // Decisions stored while the session was down (or by another process) reach the agent once it waits.
    // (An observer without an error handler would make XState report the child's failure as uncaught.)
    const subscription = child.subscribe({
      next: (snapshot: SnapshotFrom<AgentMachine>) => {
        if (snapshot.context.approvals) applyStoredDecisions();
      },
      error: () => undefined,
    });
    if ((child.getSnapshot() as SnapshotFrom<AgentMachine>).context.approvals) applyStoredDecisions();
    if (turnTimedOut) child.send({ type: 'timeout' });
    watched = {
      id,
      stop: () => {
        stopWatching();
        subscription.unsubscribe();
      },
    };
  };

  // Per-turn options: a signal that aborts the turn only, a timeout for the whole turn.
  let turnTimedOut = false;
  let clearTurnOptions: (() => void) | undefined;
  const activeChild = (): AnyActorRef | undefined => {
    const context = actor.getSnapshot().context;
    return context.activeId === null
      ? undefined
      : (actor.getSnapshot().children[context.activeId] as AnyActorRef | undefined);
  };
  const applyTurnOptions = (options: TurnOptions) => {
    clearTurnOptions?.();
    clearTurnOptions = undefined;
    turnTimedOut = false;
    const undo: (() => void)[] = [];
    if (options.signal) {
      const signal = options.signal;
      const onAbort = () => activeChild()?.send({ type: 'abort', reason: abortReason(signal, 'turn') });
      signal.addEventListener('abort', onAbort, { once: true });
      undo.push(() => signal.removeEventListener('abort', onAbort));
      if (signal.aborted) queueMicrotask(onAbort);
    }
    if (options.timeoutMs !== undefined) {
      const timer = clock.setTimeout(() => {
        turnTimedOut = true;
        activeChild()?.send({ type: 'timeout' });
      }, options.timeoutMs);
      undo.push(() => clock.clearTimeout(timer));
    }
    clearTurnOptions = () => {
      for (const step of undo) step();
    };
  };

  const emitRunStart = (turnInput: RunInput, historyLength: number): number => {
    const agent = agents.get(current) ?? entry;
    const firstSeq = bus.nextSeq;
    bus.emit(current, 'run_start', {
      input: turnInput as JsonValue,
      historyLength,
      model: agent.model.model,
      provider: agent.model.provider,
    });
    return firstSeq;
  };

  const emitRunEnd = (result: RunResult<TOutput>) =>
    bus.emit(result.agent, 'run_end', {
      status: result.status,
      stopReason: result.stopReason,
      iterationsUsed: result.iterationsUsed,
      toolCalls: result.toolCalls,
      usage: result.usage,
    });

  /** Runs `then` once a commit that may be asynchronous is done; a failed commit is reported, not thrown. */
  const afterCommit = (commit: () => MaybePromise<void>, then: () => void) => {
    let result: MaybePromise<void>;
    try {
      result = commit();
    } catch (error) {
      reportStoreError(error);
      then();
      return;
    }
    if (result instanceof Promise)
      result.then(then, (error: unknown) => {
        reportStoreError(error);
        then();
      });
    else then();
  };

  /** A turn ended: its run_end, the next queued turn's run_start, one commit, then the result. */
  const endTurn = (context: SessionContext, done: boolean) => {
    const result = turnResult<TOutput>(context);
    const ending = turn;
    emitRunEnd(result);
    clearTurnOptions?.();
    clearTurnOptions = undefined;
    const next = done ? undefined : queue.shift();
    const storedStatus: StoredSessionStatus = done
      ? actor.getSnapshot().value === 'failed'
        ? 'failed'
        : 'closed'
      : 'idle';
    let nextStart: { input: RunInput; queued: RunInput[]; firstSeq: number } | undefined;
    if (next) {
      turn = next;
      const firstSeq = emitRunStart(next.input, context.transcript.length);
      next.markStarted(firstSeq);
      nextStart = { input: next.input, queued: queue.map((queued) => queued.input), firstSeq };
    }
    status = next ? 'running' : done ? status : 'idle';
    afterCommit(
      () => durability.turnEnded(context, storedStatus, nextStart),
      () => {
        ending.finish(result);
        if (next && !finished) {
          applyTurnOptions(next.options);
          actor.send({ type: 'user.message', message: userMessage(next.input) });
        }
        if (!next) for (const wake of idleWaiters.splice(0)) wake();
      },
    );
  };

  const idleWaiters: (() => void)[] = [];
  let closeResolve: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => {
    closeResolve = resolve;
  });

  const cleanUp = () => {
    watched?.stop();
    watched = undefined;
    clearTurnOptions?.();
    stopPolling();
    for (const dispose of disposers) dispose();
    unregisterSessionRuntime(sessionId);
    options.signal?.removeEventListener('abort', onAbort);
  };

  /** Ends every turn still open (the session can run none of them now). */
  const settleOpenTurns = (context: SessionContext, stopReason: 'aborted' | 'suspended', message: string) => {
    for (const open of [turn, ...queue.splice(0)]) {
      if (open.ended) continue;
      const result = interruptedTurnResult<TOutput>(context, 'stopped', stopReason, {
        name: 'RunStopped',
        code: stopReason,
        message,
      });
      if (open === turn && open.firstSeq !== undefined) emitRunEnd(result);
      open.finish(result);
    }
  };

  const close = (context: SessionContext | undefined, internalError?: unknown) => {
    if (finished) return;
    finished = true;
    const final = context ?? lastContext;
    if (internalError !== undefined) {
      const result = interruptedTurnResult<TOutput>(final, 'failed', 'error', {
        name: 'InternalError',
        code: 'internal',
        message: toErrorInfo(internalError).message,
      });
      emitRunEnd(result);
      turn.finish(result);
    }
    settleOpenTurns(final, 'aborted', 'the session was stopped');
    status = actor.getSnapshot().value === 'failed' ? 'failed' : 'closed';
    cleanUp();
    // A closed session never restarts. Its record stays in a store the user gave; the default in-memory store
    // does not grow with every session a long-lived system has ever run.
    const finalCommit = environment.keepRecords
      ? () =>
          durability.close({
            session: durability.rowWith({ status, turn: null, queued: [] }),
            clearTurn: true,
          })
      : () => {
          durability.close();
          return store.delete(sessionId);
        };
    afterCommit(finalCommit, () => {
      log.close();
      environment.onClose?.(session as Session);
      bus.clear();
      closeResolve();
    });
  };

  let lastContext: SessionContext = actor.getSnapshot().context;
  // A restored session counts on from the turns it had finished.
  resolvedTurns = lastContext.turns;
  actor.subscribe({
    next: (snapshot) => {
      lastContext = snapshot.context;
      current = snapshot.context.current;
      watch(snapshot.context);
      if (snapshot.context.turns > resolvedTurns) {
        resolvedTurns = snapshot.context.turns;
        endTurn(snapshot.context, snapshot.status === 'done');
      }
      if (snapshot.status === 'done') close(snapshot.context);
    },
    // A root actor without an error observer crashes the process. Ours turns it into a result.
    error: (error) => close(undefined, error),
  });
  for (const emitted of ['handoff', 'supervisor'] as const) {
    actor.on(emitted, (event) => {
      if (event.type === 'handoff') bus.emit(event.agent, 'handoff', event.data);
      else if (event.type === 'supervisor') {
        if (event.data.decision === 'restart')
          afterCommit(
            () => durability.forgetAnswersAfterCheckpoint(event.agent, actor.getSnapshot().context.segment),
            () => undefined,
          );
        bus.emit(event.agent, 'supervisor', event.data);
      }
    });
  }

  // Approvals: decisions are stored first, then sent to the agent that waits for them.
  const awaitingApprovals = () => durability.pendingApprovals().length > 0;
  const applyStoredDecisions = () => {
    for (const [route, child] of routes) {
      const context = (child.getSnapshot() as SnapshotFrom<AgentMachine>).context;
      const state = context.approvals;
      if (!state) continue;
      for (const pending of state.pending) {
        if (state.decided.some((entry) => entry.callId === pending.callId)) continue;
        const record = durability.approval(pending.callId);
        if (!record?.decision || record.route !== route) continue;
        bus.emit(record.agent, 'approval_decided', {
          callId: record.callId,
          tool: record.tool,
          decision: record.decision,
        });
        child.send({ type: 'approval.decided', callId: record.callId, decision: record.decision });
      }
    }
  };
  const decide = (callId: string, decision: ApprovalDecision): Promise<void> => {
    if (typeof callId !== 'string') return Promise.reject(new ConfigError('callId must be a string.'));
    const record = durability.approval(callId);
    if (record?.status !== 'pending')
      return Promise.reject(
        new ApprovalError(
          sessionId,
          callId,
          record ? `it was already ${record.status}` : 'no call waits under this id',
        ),
      );
    if (decision.type === 'answer' && record.kind !== 'question')
      return Promise.reject(
        new ApprovalError(
          sessionId,
          callId,
          'it waits for an approval, not an answer: use approve() or reject()',
        ),
      );
    if (decision.type === 'approve' && record.kind === 'question')
      return Promise.reject(
        new ApprovalError(sessionId, callId, 'it is a question: use answer() or reject()'),
      );
    return new Promise<void>((resolve, reject) => {
      let result: MaybePromise<void>;
      try {
        result = durability.decide(callId, decision);
      } catch (error) {
        reject(error);
        return;
      }
      const apply = () => {
        applyStoredDecisions();
        resolve();
      };
      if (result instanceof Promise) result.then(apply, reject);
      else apply();
    });
  };

  // A session waiting for people looks for decisions other processes stored.
  let pollTimer: unknown;
  const pollMs = environment.approvalPollMs ?? 1_000;
  const stopPolling = () => {
    if (pollTimer !== undefined) clock.clearTimeout(pollTimer);
    pollTimer = undefined;
  };
  const poll = () => {
    pollTimer = undefined;
    if (finished) return;
    if (awaitingApprovals()) {
      void Promise.resolve()
        .then(() => store.approvals({ sessionId }))
        .then(
          (records) => session.syncDecisions(records),
          () => undefined,
        );
    }
    pollTimer = clock.setTimeout(poll, pollMs);
    (pollTimer as { unref?: () => void } | undefined)?.unref?.();
  };

  const onAbort = () => {
    void session.stop(abortReason(options.signal, 'session'));
  };

  const session: SessionControl<TOutput> = {
    id: sessionId,
    get status() {
      return status === 'running' && awaitingApprovals() ? 'awaiting' : status;
    },
    get agent() {
      return current;
    },
    get result() {
      return turn.result;
    },
    closed,
    events(eventOptions: SessionEventsOptions = {}) {
      const signal = eventOptions.signal;
      if (eventOptions.after !== undefined) {
        if (!Number.isInteger(eventOptions.after) || eventOptions.after < -1)
          throw new ConfigError('events(): after must be an integer seq >= -1.');
        return log.read({ after: eventOptions.after, signal });
      }
      const latest = queue.at(-1) ?? turn;
      return latestTurnEvents(latest, log, signal);
    },
    send(next: RunInput, turnOptions: TurnOptions = {}) {
      try {
        checkRunInput(next, 'send()');
      } catch (error) {
        return Promise.reject(error);
      }
      if (finished || status === 'closed' || status === 'failed' || status === 'suspended')
        return Promise.reject(new SessionClosedError(sessionId, status));
      if (environment.accepting && !environment.accepting())
        return Promise.reject(new SessionClosedError(sessionId, 'closed'));
      const created = new Turn<TOutput>(next, turnOptions);
      if (!turn.ended || queue.length > 0) {
        queue.push(created);
        try {
          const committed = durability.queuedChanged(queue.map((queued) => queued.input));
          if (committed instanceof Promise) committed.catch(reportStoreError);
        } catch (error) {
          queue.pop();
          return Promise.reject(error);
        }
        return created.result;
      }
      const firstSeq = emitRunStart(next, lastContext.transcript.length);
      turn = created;
      created.markStarted(firstSeq);
      status = 'running';
      return new Promise<void>((resolve, reject) => {
        let result: MaybePromise<void>;
        try {
          result = durability.turnStarted(next, [], firstSeq);
        } catch (error) {
          reject(error);
          return;
        }
        if (result instanceof Promise) result.then(resolve, reject);
        else resolve();
      }).then(() => {
        applyTurnOptions(turnOptions);
        actor.send({ type: 'user.message', message: userMessage(next) });
        return created.result;
      });
    },
    pendingApprovals: () =>
      durability
        .pendingApprovals()
        .map(({ status: _status, decision: _d, decidedAt: _at, ...request }) => request),
    approve: (callId) => decide(callId, { type: 'approve' }),
    reject: (callId, reason) => {
      if (typeof reason !== 'string' || reason.trim() === '')
        return Promise.reject(new ConfigError('reject(): give the reason; the model reads it.'));
      return decide(callId, { type: 'reject', reason });
    },
    answer: (callId, text) => {
      if (typeof text !== 'string')
        return Promise.reject(new ConfigError('answer(): text must be a string.'));
      return decide(callId, { type: 'answer', text });
    },
    stop(reason?: string) {
      if (!finished) actor.send(reason === undefined ? { type: 'stop' } : { type: 'stop', reason });
      return closed;
    },
    suspend() {
      if (finished) return closed;
      finished = true;
      const context = actor.getSnapshot().context;
      const inTurn = !turn.ended;
      status = inTurn ? 'suspended' : status;
      actor.stop();
      settleOpenTurns(
        context,
        'suspended',
        'the system was suspended; recover() resumes this turn from its last checkpoint',
      );
      cleanUp();
      const stillRunning = durability.row.status === 'running' || durability.row.status === 'awaiting';
      afterCommit(
        () =>
          durability.close(
            stillRunning || inTurn ? { session: durability.rowWith({ status: 'suspended' }) } : undefined,
          ),
        () => {
          log.close();
          environment.onClose?.(session as Session);
          bus.clear();
          closeResolve();
        },
      );
      return closed;
    },
    drained() {
      if (finished || (turn.ended && queue.length === 0)) return Promise.resolve();
      return new Promise<void>((resolve) => {
        idleWaiters.push(resolve);
        void closed.then(resolve);
      });
    },
    syncDecisions(records) {
      for (const record of records) {
        const known = durability.approval(record.callId);
        if (known?.status === 'pending' && record.status !== 'pending') durability.adopt(record);
      }
      applyStoredDecisions();
    },
  };

  // The turn starts: committed (with its run_start) before the agent does anything, so a crash loses no turn.
  if (resumedTurn) {
    turn.markStarted(resumedTurn.firstSeq ?? lastSeq + 1);
    bus.emit(current, 'resumed', {
      turn: resumedTurn.number,
      from:
        stored?.session.status === 'awaiting'
          ? 'awaiting'
          : stored?.session.status === 'suspended'
            ? 'suspended'
            : 'running',
      agent: current,
    });
    if (!resumedTurn.agent) {
      const firstSeq = resumedTurn.firstSeq ?? lastSeq + 1;
      durabilityCommitOrThrow(() =>
        durability.turnStarted(
          firstInput,
          queue.map((queued) => queued.input),
          firstSeq,
        ),
      );
    } else if (start.kind === 'resume' && start.extraInput !== undefined) {
      durabilityCommitOrThrow(() => durability.queuedChanged(queue.map((queued) => queued.input)));
    }
  } else {
    const firstSeq = emitRunStart(firstInput, callerHistory.length);
    turn.markStarted(firstSeq);
    durabilityCommitOrThrow(() => durability.turnStarted(firstInput, [], firstSeq));
  }
  options.signal?.addEventListener('abort', onAbort, { once: true });
  actor.start();
  poll();
  if (options.signal?.aborted) onAbort();
  return session;

  /** Commits at start-up: a synchronous store failure is the caller's error (nothing has run). */
  function durabilityCommitOrThrow(commit: () => MaybePromise<void>): void {
    let result: MaybePromise<void>;
    try {
      result = commit();
    } catch (error) {
      cleanUp();
      throw error;
    }
    if (result instanceof Promise) result.catch(reportStoreError);
  }
}

/** The events of `turn`, from its run_start to its run_end (waits for the turn to start). */
async function* latestTurnEvents<TOutput>(
  turn: Turn<TOutput>,
  log: SessionLog,
  signal: AbortSignal | undefined,
): AsyncIterable<RunEvent> {
  await turn.started;
  if (turn.firstSeq === undefined) return;
  yield* log.read({
    after: turn.firstSeq - 1,
    signal,
    until: (event) => event.type === 'run_end' && event.depth === 0,
  });
}

function count(value: number | undefined, fallback: number, key: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0) throw new ConfigError(`${key} must be an integer >= 0.`);
  return value;
}

function abortReason(signal: AbortSignal | undefined, what: 'session' | 'turn'): string {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error && reason.name !== 'AbortError')
    return `the ${what} was aborted: ${reason.message}`;
  if (typeof reason === 'string') return `the ${what} was aborted: ${reason}`;
  return `the ${what} was aborted`;
}

/** Defaults for a session started outside a system (run() of an agent with handoffs). */
export function defaultEnvironment(clock: Clock = systemClock): SessionEnvironment {
  return { clock, store: createMemoryStore(), agents: new Map(), supervision: defaultSupervision };
}
