import { type Actor, type AnyActorRef, createActor, type SnapshotFrom } from 'xstate';
import type { Agent } from '../agent/define-agent.ts';
import { abortReason } from '../core/abort.ts';
import { turnEndedReason } from '../core/approvals.ts';
import type { Clock } from '../core/clock.ts';
import { ConfigError, type ErrorInfo, toErrorInfo } from '../core/errors.ts';
import { EventBus } from '../core/event-bus.ts';
import type { RunEvent } from '../core/events.ts';
import type { JsonValue } from '../core/json.ts';
import { type RunInput, userMessage } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';
import { ResourceHoldings } from '../core/session-resources.ts';
import { compileMachine } from '../engine/compiled-machine.ts';
import type { AgentMachine } from '../machines/agent.ts';
import {
  type SessionContext,
  type SessionMachine,
  type SessionMachineInput,
  sessionMachine,
} from '../machines/session.ts';
import type { MaybePromise, StoredSessionStatus } from '../persistence/store.ts';
import { attachPii, inspectorMasking, piiOf } from '../pii/pii-run.ts';
import { checkReachablePrices } from '../resources/priced-agents.ts';
import type { ResourceManager } from '../resources/resource-manager.ts';
import { attachResources, type RunResourceOptions } from '../resources/resource-run.ts';
import { openRunScope } from '../run/host.ts';
import { redactingInspector, secretArguments } from '../run/inspect.ts';
import { claimSessionId, releaseSessionId } from '../run/live-sessions.ts';
import { checkRunInput, checkTurnOptions } from '../run/run-options.ts';
import { runEndData } from '../run/run-result.ts';
import { attachRuntimes, type RunRuntime } from '../run/run-runtime.ts';
import { runtimeAgentMachine } from '../run/runtime-agent-machine.ts';
import { watchAgent } from './agent-watch.ts';
import { resumableRestore } from './checkpoints.ts';
import type { DelegationHost } from './delegation.ts';
import { ProcessHold } from './process-hold.ts';
import {
  type Session,
  SessionClosedError,
  type SessionControl,
  type SessionEnvironment,
  type SessionEventsOptions,
  type SessionOptions,
  type SessionStatus,
} from './session.ts';
import { registerSessionAgents } from './session-agents.ts';
import { SessionApprovals } from './session-approvals.ts';
import { afterCommit, committed, SessionDurability } from './session-durability.ts';
import { attachSessionEffectsHost, sessionEffectsLogic } from './session-effects.ts';
import { SessionLog } from './session-log.ts';
import type { SessionPlan } from './session-plan.ts';
import { interruptedTurnResult, turnResult, unstartedTurnResult } from './session-result.ts';
import { Turn, type TurnOptions } from './session-turns.ts';
import { TurnControls } from './turn-controls.ts';

let builtSessionMachine: SessionMachine | undefined;

/** The session machine with the real agent runtime and effects; built once, on the first session (provide() is not free). */
function runtimeSessionMachine(): SessionMachine {
  builtSessionMachine ??= compileMachine(
    sessionMachine.provide({ actors: { agent: runtimeAgentMachine(), sessionEffects: sessionEffectsLogic } }),
  );
  return builtSessionMachine;
}

/**
 * One running session: the session supervisor machine as its own root actor, with its write-ahead persistence,
 * its event log, its turns (the one running and those queued behind it) and its approvals. Built from a checked
 * SessionPlan; the public face is the Session interface it implements.
 */
export class SessionRuntime<TOutput> implements SessionControl<TOutput> {
  readonly sessionId: string;
  readonly closed: Promise<void>;
  readonly #plan: SessionPlan;
  readonly #environment: SessionEnvironment;
  readonly #options: SessionOptions;
  readonly #clock: Clock;
  readonly #bus: EventBus;
  readonly #log: SessionLog;
  readonly #durability: SessionDurability;
  readonly #approvals: SessionApprovals;
  readonly #controls: TurnControls;
  readonly #actor: Actor<SessionMachine>;
  /** The agents of the session by route: the one holding the conversation and nested ones. */
  readonly #routes = new Map<string, AnyActorRef>();
  readonly #disposers: (() => void)[] = [];
  readonly #idleWaiters: (() => void)[] = [];
  #closeResolve: () => void = () => undefined;
  #status: SessionStatus = 'running';
  #finished = false;
  /** The turn running (or the last one that ended) and those sent meanwhile. */
  #turn: Turn<TOutput>;
  readonly #queue: Turn<TOutput>[];
  #resolvedTurns = 0;
  #current: string;
  #lastContext: SessionContext;
  #watched: { id: string; stop: () => void } | undefined;
  #childSeq = 0;
  /** The run context of the turn in progress: the session's, until a turn gives its own. Never stored. */
  #context: unknown;
  /** The resource manager the session's model calls reserve from (budgets, quotas), if any. */
  #resources: ResourceManager | undefined;
  /** The manager of the turn in progress, when the turn has a budget of its own. */
  #turnResources: ResourceManager | undefined;
  /** What the session's tools hold open for it (per-session MCP connections), closed when it closes. */
  readonly #holdings = new ResourceHoldings();
  /** The runtimes of the session's agents (those it runs and the agents they use as tools), by runtime key. */
  readonly #runtimes = new Map<string, RunRuntime>();
  /** Gives the session's id back when it closes. */
  readonly #releaseId: () => void;
  readonly #onAbort = () => void this.stop(abortReason(this.#options.signal, 'session'));
  /** Keeps the process alive while a turn runs or waits for people: spawned or recovered alike. */
  readonly #hold = new ProcessHold();

  constructor(
    plan: SessionPlan,
    entry: Agent<unknown>,
    options: SessionOptions,
    environment: SessionEnvironment,
  ) {
    claimSessionId(plan.sessionId, 'spawn()');
    let claimed = true;
    // Made in a local first: V8 allocates a function literal stored straight into a property in the old generation,
    // where it would keep this constructor's scope alive until a full collection.
    const releaseId = () => {
      if (!claimed) return;
      claimed = false;
      releaseSessionId(plan.sessionId);
    };
    this.#releaseId = releaseId;
    this.#plan = plan;
    this.#environment = environment;
    this.#options = options;
    this.sessionId = plan.sessionId;
    this.#clock = environment.clock;
    this.closed = new Promise<void>((resolve) => {
      this.#closeResolve = resolve;
    });
    this.#turn = new Turn<TOutput>(plan.firstInput);
    this.#queue = plan.queued.map((input) => new Turn<TOutput>(input));
    this.#current = plan.startAgent;
    this.#context = options.context;
    const { store } = environment;
    this.#bus = new EventBus(this.sessionId, this.#clock, plan.lastSeq + 1);
    attachPii(this.#bus, environment.pii);
    this.#log = new SessionLog(plan.lastSeq, environment.maxBufferedEvents ?? 10_000, (after) =>
      store.readEvents(this.sessionId, after),
    );
    this.#durability = new SessionDurability({
      store,
      sessionId: this.sessionId,
      clock: this.#clock,
      log: this.#log,
      row: plan.row,
      runs: plan.stored?.runs ?? new Map(),
      journal: plan.stored?.journal ?? new Map(),
      approvals: plan.stored?.approvals ?? [],
      session: () => this.#actor.getSnapshot().context,
      turnInput: plan.firstInput,
      firstSeq: plan.resumedTurn?.firstSeq ?? plan.lastSeq + 1,
      onFlushError: (error) => this.#reportStoreError(error),
    });
    this.#approvals = new SessionApprovals({
      sessionId: this.sessionId,
      durability: this.#durability,
      store,
      bus: this.#bus,
      clock: this.#clock,
      routes: this.#routes,
      // Routes of a session placed in a caller's start one level below the caller's: depth counts from here.
      baseDepth: environment.placement ? environment.placement.route.split('>').length - 1 : 0,
      pollMs: environment.approvalPollMs ?? 1_000,
    });
    this.#controls = new TurnControls(
      this.#clock,
      () => this.#activeAgent(),
      (budget, turn) => this.#openTurnBudget(budget, turn),
    );

    // Every event is logged; readers (events(), the system's stream) get it once it is committed.
    this.#disposers.push(
      this.#bus.subscribe((event) => {
        this.#log.append(event);
        this.#durability.scheduleFlush();
      }),
    );
    this.#log.onCommitted = environment.onEvent;
    this.#attachResources(entry);
    const agents = registerSessionAgents({
      sessionId: this.sessionId,
      agents: plan.agents,
      bus: this.#bus,
      clock: this.#clock,
      durability: this.#durability,
      actor: () => this.#actor,
      delegation: this.#delegationHost(),
      onFatal: (name, error) => this.#crash(name, error),
      resourceScope: () => this.#controls.scope ?? this.sessionId,
      resources: () => this.#turnResources ?? this.#resources,
      runtimes: this.#runtimes,
      holdings: this.#holdings,
      inspect: environment.inspect,
      audit: environment.audit,
      onApproval: environment.onApproval,
      placement: environment.placement,
      context: () => this.#context,
      peopleCanDecide: environment.peopleCanDecide !== false,
      askPerson: (request, signal, check) => this.#approvals.ask(request, signal, check),
    });
    this.#disposers.push(agents.dispose);
    this.#actor = this.#createActor(agents.descriptors);
    this.#lastContext = this.#actor.getSnapshot().context;
    // A restored session counts on from the turns it had finished.
    this.#resolvedTurns = this.#lastContext.turns;
  }

  /** Budgets and quotas: every model call of every agent of the session asks the manager. */
  #attachResources(entry: Agent<unknown>): void {
    const kept = this.#plan.row.options;
    const resourceOptions: RunResourceOptions = {};
    if (this.#environment.resources) resourceOptions.resources = this.#environment.resources;
    if (kept.budget) resourceOptions.budget = kept.budget;
    if (kept.tenant !== undefined) resourceOptions.tenant = kept.tenant;
    if (kept.parentScope !== undefined) resourceOptions.parentScope = kept.parentScope;
    // Masking is attached with the bus; the audit log reads the committed events (environment.onEvent).
    const scope = openRunScope({
      sessionId: this.sessionId,
      bus: this.#bus,
      clock: this.#clock,
      agents: [entry],
      known: this.#environment.agents,
      resources: resourceOptions,
    });
    this.#resources = scope.resources;
    this.#disposers.push(scope.close);
  }

  /** A turn with a budget of its own draws on it first, then on the session's (and the tenant's). */
  #openTurnBudget(
    budget: NonNullable<TurnOptions['budget']>,
    turn: number,
  ): { scope: string; close: () => void } {
    const scope = `${this.sessionId}#turn-${turn}`;
    const agent = this.#plan.agents.get(this.#current);
    // The turn's scope sits under the session's, in the session's manager; without one it gets a private manager.
    const options: RunResourceOptions = { budget };
    if (this.#resources) {
      options.resources = this.#resources;
      options.parentScope = this.sessionId;
    }
    const attached = attachResources(options, undefined, {
      sessionId: scope,
      agent: this.#current,
      provider: agent?.model.provider ?? '',
      model: agent?.model.model ?? '',
      clock: this.#clock,
      bus: this.#bus,
    });
    this.#turnResources = attached?.manager;
    return {
      scope,
      close: () => {
        this.#turnResources = undefined;
        attached?.detach();
      },
    };
  }

  #delegationHost(): DelegationHost {
    return {
      sessionId: this.sessionId,
      actor: () => this.#actor,
      bus: this.#bus,
      clock: this.#clock,
      inspect: this.#environment.inspect,
      durability: this.#durability,
      turn: () => this.#actor.getSnapshot().context.turns + 1,
      finished: () => this.#finished,
      routes: this.#routes,
      nextChildId: () => `sub-${++this.#childSeq}`,
      resourceScope: () => this.#controls.scope ?? this.sessionId,
      applyStoredDecisions: () => this.#approvals.applyStored(),
      runtimes: this.#runtimes,
    };
  }

  #createActor(descriptors: SessionMachineInput['agents']): Actor<SessionMachine> {
    const plan = this.#plan;
    const input: SessionMachineInput = {
      sessionId: this.sessionId,
      entry: plan.startAgent,
      agents: descriptors,
      history: [...plan.history, userMessage(plan.firstInput)],
      handoffLimits: plan.handoffLimits,
      supervision: plan.supervision,
      turns: plan.row.turns,
    };
    if (plan.resumedTurn?.agent) input.restore = resumableRestore(plan.resumedTurn.session);
    const inspect = this.#environment.inspect;
    const secretKeys = [...plan.agents.values()].flatMap((agent) => secretArguments(agent));
    const actor = createActor(runtimeSessionMachine(), {
      // The root actor is named after the session: that is the name the inspector shows for it.
      id: this.sessionId,
      input,
      clock: this.#clock,
      ...(inspect
        ? { inspect: redactingInspector(inspect, secretKeys, inspectorMasking(piiOf(this.#bus))) }
        : {}),
    });
    // The session's agents find their runtimes, and its effects their host, on the session's actor.
    attachRuntimes(actor, this.#runtimes);
    attachSessionEffectsHost(actor, {
      filterFor: (agent) => plan.agents.get(agent)?.handoffInputFilter,
      checkpointFor: (agent, segment) => this.#durability.topCheckpoint(agent, segment) ?? null,
    });
    actor.subscribe({
      next: (snapshot) => this.#onSnapshot(snapshot.context, snapshot.status === 'done'),
      // A root actor without an error observer crashes the process. Ours turns it into a result.
      error: (error) => this.#close(undefined, error),
    });
    actor.on('handoff', (event) => this.#bus.emit(event.agent, 'handoff', event.data));
    actor.on('supervisor', (event) => {
      // A restarted agent is not fed the model answer it failed on again.
      if (event.data.decision === 'restart')
        this.#commit(() =>
          this.#durability.forgetAnswersAfterCheckpoint(event.agent, actor.getSnapshot().context.segment),
        );
      this.#bus.emit(event.agent, 'supervisor', event.data);
    });
    return actor;
  }

  /**
   * Starts the first turn: committed (with its run_start) before the agent does anything with an effect. The turn's
   * start and what the agent commits as it starts (its checkpoint before its first model call) are one commit: the
   * agent starts before it is made, and waits for it before its first effect.
   */
  start(): this {
    const { resumedTurn, lastSeq, firstInput } = this.#plan;
    const queued = () => this.#queue.map((turn) => turn.input);
    // A resumed turn whose agent had a checkpoint, with no message queued meanwhile, commits nothing at start.
    const commits = !resumedTurn?.agent || this.#queue.length > this.#plan.row.queued.length;
    if (commits) this.#durability.gather();
    if (resumedTurn) {
      this.#turn.markStarted(resumedTurn.firstSeq ?? lastSeq + 1);
      const stored = this.#plan.row.status;
      this.#bus.emit(this.#current, 'resumed', {
        turn: resumedTurn.number,
        from: stored === 'awaiting' || stored === 'suspended' ? stored : 'running',
        agent: this.#current,
      });
      if (!resumedTurn.agent)
        void this.#durability.turnStarted(firstInput, queued(), resumedTurn.firstSeq ?? lastSeq + 1);
      else if (commits) void this.#durability.queuedChanged(queued());
    } else {
      const firstSeq = this.#emitRunStart(firstInput, this.#plan.history.length);
      this.#turn.markStarted(firstSeq);
      void this.#durability.turnStarted(firstInput, [], firstSeq);
    }
    this.#actor.start();
    if (commits) {
      let released: MaybePromise<void>;
      try {
        released = this.#durability.release();
      } catch (error) {
        // A store that fails before anything with an effect ran is the caller's error; nothing is left behind.
        this.#actor.stop();
        this.#cleanUp();
        throw error;
      }
      if (released instanceof Promise) released.catch((error: unknown) => this.#reportStoreError(error));
    }
    this.#options.signal?.addEventListener('abort', this.#onAbort, { once: true });
    this.#approvals.startPolling();
    this.#holdWhileRunning();
    if (this.#options.signal?.aborted) this.#onAbort();
    return this;
  }

  // --- The public face ------------------------------------------------------------------------------------------

  get status(): SessionStatus {
    return this.#status === 'running' && this.#approvals.waiting ? 'awaiting' : this.#status;
  }

  get agent(): string {
    return this.#current;
  }

  get result(): Promise<RunResult<TOutput>> {
    return this.#turn.result;
  }

  events(options: SessionEventsOptions = {}): AsyncIterable<RunEvent> {
    const { signal, after } = options;
    if (after !== undefined) {
      if (!Number.isInteger(after) || after < -1)
        throw new ConfigError('events(): after must be an integer seq >= -1.');
      return this.#log.read({ after, signal });
    }
    return turnEvents(this.#queue.at(-1) ?? this.#turn, this.#log, signal);
  }

  send(input: RunInput, options: TurnOptions = {}): Promise<RunResult<TOutput>> {
    try {
      checkRunInput(input, 'send()');
      checkTurnOptions(options, 'send()');
      if (options.budget) {
        const resources: RunResourceOptions = { budget: options.budget };
        if (this.#resources) {
          resources.resources = this.#resources;
          resources.parentScope = this.sessionId;
        }
        checkReachablePrices([...this.#plan.agents.values()], resources, {
          sessionId: this.sessionId,
          known: this.#environment.agents,
        });
      }
    } catch (error) {
      this.#environment.onConfigError?.('send()', error);
      return Promise.reject(error);
    }
    const status = this.#status;
    if (this.#finished || status === 'closed' || status === 'failed' || status === 'suspended')
      return Promise.reject(new SessionClosedError(this.sessionId, status));
    if (this.#environment.accepting && !this.#environment.accepting())
      return Promise.reject(new SessionClosedError(this.sessionId, 'closed'));
    const turn = new Turn<TOutput>(input, options);
    if (!this.#turn.ended || this.#queue.length > 0) {
      // Queued behind the turn in progress, and stored: a crash loses no message.
      this.#queue.push(turn);
      return committed(() => this.#durability.queuedChanged(this.#queue.map((queued) => queued.input))).then(
        () => turn.result,
        (error: unknown) => {
          this.#queue.splice(this.#queue.indexOf(turn), 1);
          throw error;
        },
      );
    }
    const firstSeq = this.#emitRunStart(input, this.#lastContext.transcript.length);
    this.#turn = turn;
    turn.markStarted(firstSeq);
    this.#status = 'running';
    this.#holdWhileRunning();
    // The turn's start and the agent's first checkpoint are one commit (see start()); the agent's first effect waits
    // for it, and a store's failure of it rejects this promise as well as ending the turn.
    this.#durability.gather();
    void this.#durability.turnStarted(input, [], firstSeq);
    this.#applyControls(options);
    this.#actor.send({ type: 'user.message', message: userMessage(input) });
    return committed(() => this.#durability.release()).then(() => turn.result);
  }

  pendingApprovals() {
    return this.#approvals.pending();
  }

  approve(callId: string): Promise<void> {
    return this.#approvals.decide(callId, { type: 'approve' });
  }

  reject(callId: string, reason: string): Promise<void> {
    if (typeof reason !== 'string' || reason.trim() === '')
      return Promise.reject(new ConfigError('reject(): give the reason; the model reads it.'));
    return this.#approvals.decide(callId, { type: 'reject', reason });
  }

  answer(callId: string, text: string): Promise<void> {
    if (typeof text !== 'string') return Promise.reject(new ConfigError('answer(): text must be a string.'));
    return this.#approvals.decide(callId, { type: 'answer', text });
  }

  stop(reason?: string): Promise<void> {
    if (!this.#finished) this.#actor.send(reason === undefined ? { type: 'stop' } : { type: 'stop', reason });
    return this.closed;
  }

  suspend(): Promise<void> {
    if (this.#finished) return this.closed;
    this.#finished = true;
    // The questions its tools asked stay pending, for the calls a recovered session sends again.
    this.#approvals.keepForRecovery();
    const context = this.#actor.getSnapshot().context;
    const inTurn = !this.#turn.ended;
    if (inTurn) this.#status = 'suspended';
    this.#settleOpenTurns(
      context,
      'suspended',
      'the system was suspended; recover() resumes this turn from its last checkpoint',
    );
    this.#actor.stop();
    this.#cleanUp();
    const row = this.#durability.row.status;
    const resumable = inTurn || row === 'running' || row === 'awaiting';
    this.#commit(
      () =>
        this.#durability.close(
          resumable ? { session: this.#durability.rowWith({ status: 'suspended' }) } : undefined,
        ),
      () => this.#closedDown(),
    );
    return this.closed;
  }

  drained(): Promise<void> {
    if (this.#finished || (this.#turn.ended && this.#queue.length === 0)) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.#idleWaiters.push(resolve);
      void this.closed.then(resolve);
    });
  }

  syncDecisions(records: Parameters<SessionControl['syncDecisions']>[0]): void {
    this.#approvals.adopt(records);
  }

  // --- Following the session machine ----------------------------------------------------------------------------

  #onSnapshot(context: SessionContext, done: boolean): void {
    this.#lastContext = context;
    this.#current = context.current;
    this.#watch(context);
    if (context.turns > this.#resolvedTurns) {
      this.#resolvedTurns = context.turns;
      this.#endTurn(context, done);
    }
    if (done) this.#close(context);
  }

  /** The agent holding the conversation: its phase events and timeout; approvals reach it by its route. */
  #watch(context: SessionContext): void {
    const id = context.activeId;
    if (this.#watched?.id === id) return;
    this.#watched?.stop();
    this.#watched = undefined;
    if (id === null) return;
    const child = this.#actor.getSnapshot().children[id] as AnyActorRef | undefined;
    const agent = this.#plan.agents.get(context.current);
    if (!child || !agent) return;
    // Decisions reach the agent by the route its requests carry (inside a caller's session, a placed one).
    const runtime = this.#runtimes.get(`${this.sessionId}/${context.current}`);
    const route = runtime?.route ?? context.current;
    this.#routes.set(route, child);
    const stopWatching = watchAgent({
      child,
      agent,
      runtime,
      bus: this.#bus,
      clock: this.#clock,
      inspect: this.#environment.inspect,
    });
    // Decisions stored while the session was down (or by another process) reach the agent once it waits.
    // (An observer without an error handler would make XState report the child's failure as uncaught.)
    const subscription = child.subscribe({
      next: (snapshot: SnapshotFrom<AgentMachine>) => {
        if (snapshot.context.approvals) this.#approvals.applyStored();
      },
      error: () => undefined,
    });
    if ((child.getSnapshot() as SnapshotFrom<AgentMachine>).context.approvals) this.#approvals.applyStored();
    this.#controls.agentStarted(child);
    this.#watched = {
      id,
      stop: () => {
        stopWatching();
        subscription.unsubscribe();
        this.#routes.delete(route);
      },
    };
  }

  /** Arms a starting turn's signal, timeout and budget; a budget that cannot open is reported, not silently dropped. */
  #applyControls(options: TurnOptions): void {
    if (options.context !== undefined) this.#context = options.context;
    try {
      this.#controls.apply(options, this.#actor.getSnapshot().context.turns + 1);
    } catch (error) {
      const info = toErrorInfo(error);
      this.#bus.emit(this.#current, 'error', { message: info.message, type: info.name, code: info.code });
      this.#activeAgent()?.send({
        type: 'abort',
        reason: `the turn's budget could not apply: ${info.message}`,
      });
    }
  }

  /** A fatal tool of the agent `name` failed: tell the supervisor, if that agent is the active child. */
  #crash(name: string, error: ErrorInfo): void {
    const context = this.#actor.getSnapshot().context;
    if (context.current !== name || context.activeId === null) return;
    const child = this.#actor.getSnapshot().children[context.activeId] as AnyActorRef | undefined;
    const history = (child?.getSnapshot() as SnapshotFrom<AgentMachine> | undefined)?.context.history;
    this.#actor.send({ type: 'agent.crashed', id: context.activeId, error, ...(history ? { history } : {}) });
  }

  #activeAgent(): AnyActorRef | undefined {
    const snapshot = this.#actor.getSnapshot();
    const id = snapshot.context.activeId;
    return id === null ? undefined : (snapshot.children[id] as AnyActorRef | undefined);
  }

  /** A turn ended: its run_end, the next queued turn's run_start, one commit, then the result. */
  #endTurn(context: SessionContext, done: boolean): void {
    const result = turnResult<TOutput>(context);
    const ending = this.#turn;
    // Requests of the ended turn that still wait: nobody will act on a decision any more (announced in the turn).
    const withdrawn = this.#approvals.withdrawPending(turnEndedReason);
    this.#emitRunEnd(result);
    this.#controls.clear();
    const next = done ? undefined : this.#queue.shift();
    const stored: StoredSessionStatus = done
      ? this.#actor.getSnapshot().value === 'failed'
        ? 'failed'
        : 'closed'
      : 'idle';
    let nextStart: { input: RunInput; queued: RunInput[]; firstSeq: number } | undefined;
    if (next) {
      this.#turn = next;
      const firstSeq = this.#emitRunStart(next.input, context.transcript.length);
      next.markStarted(firstSeq);
      nextStart = { input: next.input, queued: this.#queue.map((queued) => queued.input), firstSeq };
    }
    if (!done) this.#status = next ? 'running' : 'idle';
    this.#commit(
      () => this.#durability.turnEnded(context, stored, nextStart, withdrawn),
      () => {
        ending.finish(result);
        if (next && !this.#finished) {
          this.#applyControls(next.options);
          this.#actor.send({ type: 'user.message', message: userMessage(next.input) });
        }
        if (!next) for (const wake of this.#idleWaiters.splice(0)) wake();
        this.#holdWhileRunning();
      },
    );
  }

  /** Ends every turn still open (the session can run none of them now). */
  #settleOpenTurns(context: SessionContext, stopReason: 'aborted' | 'suspended', message: string): void {
    const error = { name: 'RunStopped', code: stopReason, message };
    const active = (this.#activeAgent()?.getSnapshot() as SnapshotFrom<AgentMachine> | undefined)?.context;
    for (const open of [this.#turn, ...this.#queue.splice(0)]) {
      if (open.ended) continue;
      // The turn in progress ends where it was; a queued one never started: nothing said, nothing spent.
      const started = open === this.#turn;
      const result = started
        ? interruptedTurnResult<TOutput>(context, 'stopped', stopReason, error, active)
        : unstartedTurnResult<TOutput>(context, stopReason, error);
      if (started && open.firstSeq !== undefined) this.#emitRunEnd(result);
      open.finish(result);
    }
  }

  #close(context: SessionContext | undefined, internalError?: unknown): void {
    if (this.#finished) return;
    this.#finished = true;
    const final = context ?? this.#lastContext;
    // Requests still waiting (a turn that ended without its usual end): nobody will act on a decision any more.
    const withdrawn = this.#approvals.withdrawPending('the session closed before a decision');
    if (internalError !== undefined) {
      const result = interruptedTurnResult<TOutput>(final, 'failed', 'error', {
        name: 'InternalError',
        code: 'internal',
        message: toErrorInfo(internalError).message,
      });
      this.#emitRunEnd(result);
      this.#turn.finish(result);
    }
    this.#settleOpenTurns(final, 'aborted', 'the session was stopped');
    this.#status = this.#actor.getSnapshot().value === 'failed' ? 'failed' : 'closed';
    this.#cleanUp();
    // A closed session never restarts. Its record stays in a store the user gave; the default in-memory store
    // does not grow with every session a long-lived system has ever run.
    const status = this.#status;
    this.#commit(
      this.#environment.keepRecords
        ? () =>
            this.#durability.close({
              session: this.#durability.rowWith({ status, turn: null, queued: [] }),
              clearTurn: true,
              ...(withdrawn.length > 0 ? { approvals: withdrawn } : {}),
            })
        : () => {
            // The record goes once the last commit is done (one gathered while the session starts comes later).
            const closing = this.#durability.close();
            const remove = () => this.#environment.store.delete(this.sessionId);
            return closing instanceof Promise ? closing.then(remove, remove) : remove();
          },
      () => this.#closedDown(),
    );
  }

  /**
   * A session holds the process while its turn can make progress or waits for a person; an idle session (its program
   * decides whether to send more) and a closed one do not.
   */
  #holdWhileRunning(): void {
    this.#hold.set(!this.#finished && this.#status === 'running');
  }

  #cleanUp(): void {
    this.#hold.release();
    this.#watched?.stop();
    this.#watched = undefined;
    this.#controls.clear();
    this.#approvals.stop();
    for (const dispose of this.#disposers) dispose();
    this.#options.signal?.removeEventListener('abort', this.#onAbort);
    this.#releaseId();
  }

  /** The last step of closing or suspending, once the store has everything. */
  #closedDown(): void {
    this.#log.close();
    this.#environment.onClose?.(this as Session);
    this.#bus.clear();
    // What the session's tools hold open (per-session MCP servers) is closed before `closed` resolves.
    const releasing = this.#holdings.release();
    if (releasing) void releasing.then(() => this.#closeResolve());
    else this.#closeResolve();
  }

  // --- Events and commits ---------------------------------------------------------------------------------------

  #emitRunStart(input: RunInput, historyLength: number): number {
    const agent = this.#plan.agents.get(this.#current);
    const firstSeq = this.#bus.nextSeq;
    this.#bus.emit(this.#current, 'run_start', {
      input: input as JsonValue,
      historyLength,
      model: agent?.model.model ?? '',
      provider: agent?.model.provider ?? '',
    });
    return firstSeq;
  }

  #emitRunEnd(result: RunResult<TOutput>): void {
    this.#bus.emit(result.agent, 'run_end', runEndData(result));
  }

  #reportStoreError(error: unknown): void {
    const info = toErrorInfo(error);
    this.#bus.emit(this.#current, 'error', {
      message: `store: ${info.message}`,
      type: info.name,
      code: 'store_failed',
    });
  }

  /** A commit whose failure is reported as an event (the session goes on); `then` runs either way. */
  #commit(commit: () => MaybePromise<void>, then: () => void = () => undefined): void {
    afterCommit(commit, then, (error) => this.#reportStoreError(error));
  }
}

/** The events of `turn`, from its run_start to its run_end (waits for the turn to start). */
async function* turnEvents<TOutput>(
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
