import type { ObjectContext, RestatePromise } from '@restatedev/restate-sdk';
import { CancelledError, serde, TerminalError } from '@restatedev/restate-sdk';
import { type Actor, type AnyActorRef, createActor, type SnapshotFrom } from 'xstate';
import type { Agent } from '../agent/define-agent.ts';
import {
  type ApprovalDecision,
  type ApprovalRequest,
  turnEndedReason,
  withdrawnRecord,
} from '../core/approvals.ts';
import { type ErrorInfo, toErrorInfo } from '../core/errors.ts';
import type { RunEvent } from '../core/events.ts';
import type { JsonValue } from '../core/json.ts';
import { type Message, type RunInput, userMessage } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';
import { ResourceHoldings } from '../core/session-resources.ts';
import type { Usage } from '../core/usage.ts';
import { stopOrphans } from '../engine/actor-links.ts';
import { guardrailInput } from '../guardrails/guardrail-plan.ts';
import type {
  AgentCheckpoint,
  AgentContext,
  AgentEvent,
  AgentMachine,
  EffectCommand,
} from '../machines/agent.ts';
import type {
  AgentDescriptor,
  SessionContext,
  SessionMachine,
  SupervisionPolicy,
} from '../machines/session.ts';
import { attachPii } from '../pii/pii-run.ts';
import type { BudgetLimit } from '../resources/ledger.ts';
import type { ResourceManager } from '../resources/resource-manager.ts';
import { attachResources } from '../resources/resource-run.ts';
import { checkpointOf } from '../run/agent-checkpoint.ts';
import type { DurableRun } from '../run/durable-run.ts';
import { hostAgent } from '../run/host.ts';
import { PhaseReporter, reportPhaseBeforeEffects } from '../run/phase-events.ts';
import { failedBeforeAnyStep, runEndData } from '../run/run-result.ts';
import { attachRuntimes, type Delegator, type EffectExecutor, type RunRuntime } from '../run/run-runtime.ts';
import { attachSessionEffectsHost } from '../sessions/session-effects.ts';
import { subFailure, turnResult } from '../sessions/session-result.ts';
import { needsSession } from '../sessions/session-run.ts';
import { type PeopleWaitHost, waitForPeople } from './approvals.ts';
import { captured, JournalClock, JournaledBus } from './effect-capture.ts';
import { JournalAwaits } from './journal-awaits.ts';
import { type JournalSettings, journaledEffect } from './journaled-effect.ts';
import type { TurnFeatures } from './restate-options.ts';
import { delegateOf, forTurn } from './runtime-agent.ts';
import {
  type StoredApproval,
  type StoredConversation,
  type StoredTurn,
  stateKeys,
  summaryOf,
} from './state.ts';
import { type CheckpointSource, restateSessionMachine } from './turn-session.ts';

/** An agent served as a virtual object, with the agents it can hand the conversation to. */
export interface ServedAgent {
  agent: Agent<unknown>;
  objectName: string;
  /** The object's agent and every agent reachable from it by handoffs, by name. */
  catalog: ReadonlyMap<string, Agent<unknown>>;
  /** The object that serves an agent used as a tool (agentTool), by the agent's name. */
  objectOf(agentName: string): string | undefined;
}

export interface TurnSettings extends JournalSettings, TurnFeatures {
  supervision: SupervisionPolicy;
  /** Events kept in the object's state for the last turn (the newest). */
  maxEvents: number;
}

export interface TurnRequest {
  input: RunInput;
  /** Set when another session's agent calls this one as a tool: a fresh run with these limits (at most). */
  delegated?: DelegateLimits;
}

/** What a calling agent passes on to an agent it uses as a tool: its limits, and where it runs for the user. */
export interface DelegateLimits {
  maxSteps: number;
  timeoutMs: number | null;
  /** The user's session id: the tools of the agent used as a tool see it, as in-process. */
  sessionId: string;
  /** The agent's place in the session: `caller>callId/name`. */
  route: string;
  /** The caller's session turn. */
  turn: number;
  /** Ids of the calls that started this run, joined by '/'. */
  callPath: string;
  /** What was left of the caller's turn budget when the call started (absent: the caller had none). */
  budget?: { tokens?: number; usd?: number };
}

/** The request of the `delegate` handler (an agent used as a tool by another session's agent). */
export interface DelegateRequest extends DelegateLimits {
  input: string;
}

/** Tells turns apart within this process: a retried attempt of an invocation must not share a previous one's keys. */
let attempts = 0;

const never = <T>(): Promise<T> => new Promise<T>(() => undefined);

/**
 * Runs one turn of a session inside the object's exclusive handler and returns its RunResult. The session machine
 * and the agents run in-process, as in `createAgentSystem`; every model and tool call is a `ctx.run` journal entry
 * (see journaledEffect), an agent used as a tool is a durable call to its own object, people's decisions are
 * awakeables. Nothing else decides anything: the handler is re-run from the start after a crash or a suspension,
 * and replays the same steps from the journal.
 */
export async function runTurn(
  ctx: ObjectContext,
  served: ServedAgent,
  request: TurnRequest,
  settings: TurnSettings,
): Promise<RunResult<unknown>> {
  const stored = request.delegated ? null : await ctx.get<StoredConversation>(stateKeys.conversation);
  const number = (stored?.turns ?? 0) + 1;
  const startedAt = await ctx.date.now();
  const turn: StoredTurn = { number, status: 'running', input: request.input, startedAt };
  ctx.set(stateKeys.turn, turn);
  // Earlier turns' records stay listed; one still pending is withdrawn: the turn that asked is over.
  const earlier = ((await ctx.get<StoredApproval[]>(stateKeys.approvals)) ?? [])
    .filter((record) => record.turn !== number)
    .map((record) =>
      record.status === 'pending'
        ? { ...record, ...withdrawnRecord(record, turnEndedReason, startedAt) }
        : record,
    );
  ctx.set(stateKeys.approvals, earlier);
  // Computed anew on every attempt, in this process: the context is never journaled or stored.
  const context = settings.context
    ? await settings.context({
        sessionId: request.delegated?.sessionId ?? ctx.key,
        agent: served.agent.name,
      })
    : undefined;
  const host = new TurnHost(ctx, served, request, settings, stored, turn, context, earlier);
  return host.run();
}

interface ActiveAgent {
  ref: AnyActorRef;
  segment: number;
  /** Journaled time at which the agent's run times out, or null; also what agents it uses as tools see. */
  scope: { deadline: number | null };
}

class TurnHost implements PeopleWaitHost, CheckpointSource {
  readonly ctx: ObjectContext;
  readonly objectName: string;
  readonly approvals = new Map<string, StoredApproval>();
  readonly turnNumber: number;
  /** The records of the session's earlier turns, listed before this turn's. */
  readonly #earlierApprovals: readonly StoredApproval[];
  readonly #served: ServedAgent;
  readonly #request: TurnRequest;
  readonly #settings: TurnSettings;
  readonly #turn: StoredTurn;
  readonly #transcript: Message[];
  readonly #entry: string;
  readonly #firstSeq: number;
  readonly #agents: Map<string, Agent<unknown>>;
  readonly #clock: JournalClock;
  readonly #bus: JournaledBus;
  readonly #events: RunEvent[] = [];
  readonly #id: string;
  readonly #active = new Map<string, ActiveAgent>();
  /** The runtimes of the turn's agents by key, which the session's actor carries. */
  readonly #runtimes = new Map<string, RunRuntime>();
  readonly #checkpoints = new Map<string, { segment: number; checkpoint: AgentCheckpoint }>();
  readonly #disposers: (() => void)[] = [];
  readonly #awaits = new JournalAwaits(() => this.cancelled());
  readonly #context: unknown;
  /** The session id the agents' tools and events see: the user's, also in an agent used as a tool. */
  readonly #sessionId: string;
  /** What the turn's tools hold open for the session (per-session MCP connections), closed when the turn ends. */
  readonly #holdings = new ResourceHoldings();
  /** The key the turn's budget is bound under (see attachResources), when it has one. */
  #budgetScope: string | undefined;
  /** The manager of the turn's budget, when it has one. */
  #budgetManager: ResourceManager | undefined;
  /** What was left of the budget when the last model call ended: what an agent used as a tool may spend. */
  #budgetLeft: { tokens?: number; usd?: number } | undefined;
  /** Events recorded in the audit log so far, as journaled (see #writeEvents), and in this attempt. */
  #audited = 0;
  #observed = 0;
  #actor: Actor<SessionMachine> | undefined;
  #waitedFrom = 0;
  #closed = false;

  constructor(
    ctx: ObjectContext,
    served: ServedAgent,
    request: TurnRequest,
    settings: TurnSettings,
    stored: StoredConversation | null,
    turn: StoredTurn,
    context: unknown,
    earlierApprovals: readonly StoredApproval[],
  ) {
    this.ctx = ctx;
    this.turnNumber = turn.number;
    this.#earlierApprovals = earlierApprovals;
    this.objectName = served.objectName;
    this.#context = context;
    this.#sessionId = request.delegated?.sessionId ?? ctx.key;
    this.#served = served;
    this.#request = request;
    this.#settings = settings;
    this.#turn = turn;
    this.#transcript = stored?.transcript ?? [];
    // A conversation held by an agent this deployment no longer serves goes back to the object's own agent.
    this.#entry = stored && served.catalog.has(stored.agent) ? stored.agent : served.agent.name;
    this.#firstSeq = stored?.nextSeq ?? 0;
    this.#agents = new Map(served.catalog);
    const limits = request.delegated;
    if (limits) {
      // An agent used as a tool gets at most the caller's remaining steps and time.
      const own = served.agent;
      this.#agents.set(own.name, {
        ...own,
        limits: {
          ...own.limits,
          maxSteps: Math.min(own.limits.maxSteps, limits.maxSteps),
          timeoutMs: minOf(own.limits.timeoutMs, limits.timeoutMs),
        },
      });
    }
    this.#clock = new JournalClock(turn.startedAt);
    this.#bus = new JournaledBus(this.#sessionId, this.#clock, this.#firstSeq);
    this.#id = `${served.objectName}/${ctx.key}~${++attempts}`;
    // Masking sits between the bus and its listeners: the events kept in state and audited are masked.
    attachPii(this.#bus, settings.pii);
  }

  /**
   * Opens the turn's budget: the configured one, or for an agent used as a tool what its caller had left. Its
   * model calls reserve from it inside their journal entries (see callModel); replayed calls are counted again.
   */
  #openBudget(entry: Agent<unknown>): void {
    const given = this.#request.delegated?.budget;
    const own = this.#settings.budget;
    // An agent used as a tool may spend what its caller had left, and no more than its own endpoint's budget.
    const budget: BudgetLimit | undefined = given
      ? {
          ...own,
          ...withLimit('tokens', own?.tokens, given.tokens),
          ...withLimit('usd', own?.usd, given.usd),
        }
      : own;
    if (!budget) return;
    const scope = `${this.#id}/budget`;
    const attached = attachResources({ budget }, undefined, {
      sessionId: scope,
      agent: entry.name,
      provider: entry.model.provider,
      model: entry.model.model,
      clock: this.#clock,
      bus: this.#bus,
    });
    if (attached) {
      this.#disposers.push(attached.detach);
      this.#budgetManager = attached.manager;
    }
    this.#budgetScope = scope;
    this.#budgetLeft = this.#remainingBudget();
  }

  #remainingBudget(): { tokens?: number; usd?: number } | undefined {
    if (this.#budgetScope === undefined) return undefined;
    const usage = this.#budgetManager?.usage({ session: this.#budgetScope }).session;
    if (!usage) return undefined;
    const left: { tokens?: number; usd?: number } = {};
    if (usage.remainingTokens !== null) left.tokens = usage.remainingTokens;
    if (usage.remainingUsd !== null) left.usd = usage.remainingUsd;
    return left;
  }

  /**
   * Counts usage the turn's budget did not see in this attempt (a model call replayed from the journal, an agent
   * used as a tool) as spent. Its notices are dropped: the journal replays those of the original call.
   */
  async #charge(usage: Usage, agent: Agent<unknown>): Promise<void> {
    const scope = this.#budgetScope;
    const manager = this.#budgetManager;
    if (!manager || scope === undefined) return;
    await captured(async () => {
      const { provider, model } = agent.model;
      const outcome = await manager.reserve({
        session: scope,
        provider,
        model,
        estimate: { input: 0, output: 0 },
      });
      if (outcome.granted) manager.settle(outcome.grant, usage);
    });
  }

  async run(): Promise<RunResult<unknown>> {
    const signal = this.ctx.request().attemptCompletedSignal;
    const onAttemptEnd = () => this.#close();
    signal.addEventListener('abort', onAttemptEnd, { once: true });
    this.#disposers.push(() => signal.removeEventListener('abort', onAttemptEnd));
    try {
      await this.#listSources(signal);
      const ended = await this.#runSession();
      const result = ended.context
        ? { ...turnResult<unknown>(ended.context), sessionId: this.#sessionId }
        : failedBeforeAnyStep<unknown>(
            this.#sessionId,
            this.#entry,
            this.#transcript,
            this.#request.input,
            ended.error,
          );
      this.#bus.emit(result.agent, 'run_end', runEndData(result));
      const events = await this.#writeEvents();
      const last = events.at(-1);
      const conversation: StoredConversation = {
        agent: ended.context?.current ?? this.#entry,
        turns: this.#turn.number,
        transcript: result.history,
        nextSeq: last ? last.seq + 1 : this.#firstSeq,
      };
      this.ctx.set(stateKeys.conversation, conversation);
      this.#withdrawPending();
      this.ctx.set(stateKeys.turn, { ...this.#turn, status: 'done', outcome: summaryOf(result) });
      return result;
    } finally {
      this.#close();
    }
  }

  /**
   * Lists the agents' tool sources (MCP servers) in this process before anything runs: a replay decides with the
   * tools the original attempt had (which calls wait for approval, which tools exist) without re-running the model
   * calls that listed them. A source that cannot be reached fails the first model call that needs it, as in-process.
   */
  async #listSources(signal: AbortSignal): Promise<void> {
    const listing: Promise<void>[] = [];
    for (const agent of this.#agents.values()) {
      const preparing = agent.tools.prepare({
        sessionId: this.#sessionId,
        signal,
        context: this.#context,
        hold: this.#holdings.hold,
      });
      if (preparing) listing.push(preparing.catch(() => undefined));
    }
    await Promise.all(listing);
  }

  /** Starts the session machine for this turn and resolves with its context once the turn has ended. */
  #runSession(): Promise<{ context?: SessionContext; error: ErrorInfo }> {
    // Own properties only (an agent may be named __proto__): the machine takes a record of descriptors.
    const descriptors: Record<string, AgentDescriptor> = Object.fromEntries(
      [...this.#agents].map(([name, agent]) => [
        name,
        {
          limits: agent.limits,
          toolNames: agent.tools.names,
          hasOutputSchema: agent.outputSchema !== undefined,
          handoffTools: { ...agent.handoffTools },
          ...guardrailInput(agent.guardrails),
        },
      ]),
    );
    for (const [name, agent] of this.#agents) this.#register(name, agent);
    this.#disposers.push(this.#bus.subscribe((event) => this.#events.push(event)));
    const entry = this.#agents.get(this.#entry) ?? this.#served.agent;
    this.#openBudget(entry);
    this.#bus.emit(entry.name, 'run_start', {
      input: this.#request.input as JsonValue,
      historyLength: this.#transcript.length,
      model: entry.model.model,
      provider: entry.model.provider,
    });
    const owner = this.#served.agent;
    const actor = createActor(restateSessionMachine(), {
      id: this.#id,
      input: {
        sessionId: this.#id,
        entry: this.#entry,
        agents: descriptors,
        history: [...this.#transcript, userMessage(this.#request.input)],
        handoffLimits: { maxDepth: owner.maxHandoffDepth, maxRevisits: owner.maxHandoffRevisits },
        supervision: this.#settings.supervision,
      },
      clock: this.#durableTimers(),
    });
    this.#actor = actor;
    // The turn's agents find their runtimes, and its session effects this turn, on the session's actor.
    attachRuntimes(actor, this.#runtimes);
    attachSessionEffectsHost(actor, this);
    for (const emitted of ['handoff', 'supervisor'] as const) {
      actor.on(emitted, (event) => {
        if (event.type === 'handoff') this.#bus.emit(event.agent, 'handoff', event.data);
        else if (event.type === 'supervisor') this.#bus.emit(event.agent, 'supervisor', event.data);
      });
    }
    return new Promise((resolve) => {
      let done = false;
      actor.subscribe({
        next: (snapshot) => {
          if (done) return;
          this.#watch(snapshot.context);
          if (snapshot.context.turns >= 1) {
            done = true;
            resolve({ context: snapshot.context, error: { name: 'TroupeError', code: 'none', message: '' } });
          }
        },
        // A root actor without an error observer crashes the process; ours ends the turn failed.
        error: (error) => {
          if (done) return;
          done = true;
          resolve({
            error: { name: 'InternalError', code: 'internal', message: toErrorInfo(error).message },
          });
        },
      });
      actor.start();
    });
  }

  /** The runtime of one agent of the turn: its effects go through the journal, its sub-agents through objects. */
  #register(name: string, agent: Agent<unknown>): void {
    const key = `${this.#id}/${name}`;
    const runEffect: EffectExecutor = (effectKey, kind, effect) =>
      this.#runEffect(name, effectKey, kind, effect);
    const active = this.#active;
    const placement = this.#request.delegated;
    const budget = this;
    const hosted = hostAgent({
      key,
      agent: forTurn(agent),
      bus: this.#bus,
      clock: this.#clock,
      sessionId: this.#sessionId,
      holdings: this.#holdings,
      route: placement && name === this.#served.agent.name ? placement.route : name,
      turn: placement?.turn ?? this.#turn.number,
      callPath: placement?.callPath ?? '',
      context: this.#context,
      resourceScope: () => this.#budgetScope ?? this.#bus.sessionId,
      get resources() {
        return budget.#budgetManager;
      },
      // Restate sessions wait for approvals durably: a permission policy may ask a person.
      peopleCanDecide: true,
      durable: this.#durableFor(name),
      runEffect,
      get deadline() {
        return active.get(name)?.scope.deadline ?? null;
      },
      delegate: this.#delegatorFor(name),
      onFatal: (error) => {
        const context = this.#actor?.getSnapshot().context;
        if (context?.current === name && context.activeId !== null)
          this.#actor?.send({ type: 'agent.crashed', id: context.activeId, error });
      },
    });
    // Deltas are not journaled: a Restate turn's events are its whole responses.
    hosted.runtime.onDelta = () => undefined;
    this.#runtimes.set(key, hosted.runtime);
    this.#disposers.push(() => {
      this.#runtimes.delete(key);
      hosted.release();
    });
  }

  /** Follows the active agent: phase events, its deadline, the reference that decisions and timeouts go to. */
  #watch(context: SessionContext): void {
    const id = context.activeId;
    const name = context.current;
    const known = this.#active.get(name);
    if (id === null || known?.ref.id === id) return;
    const ref = this.#actor?.getSnapshot().children[id] as AnyActorRef | undefined;
    if (!ref) return;
    const agent = this.#agents.get(name);
    const timeoutMs = agent?.limits.timeoutMs ?? null;
    const active: ActiveAgent = {
      ref,
      segment: context.segment,
      scope: { deadline: timeoutMs === null ? null : this.#clock.now() + timeoutMs },
    };
    this.#active.set(name, active);
    // Phase and decode_retry events, as in-process; a restarted agent's earlier retries are not reported again.
    const first = ref.getSnapshot() as SnapshotFrom<AgentMachine>;
    const phases = new PhaseReporter(
      (type, data) => this.#bus.emit(name, type, data),
      first.context.retryCount,
    );
    const onSnapshot = (snapshot: SnapshotFrom<AgentMachine>) => phases.observe(snapshot);
    const subscription = ref.subscribe({ next: onSnapshot, error: () => stopOrphans(ref) });
    this.#disposers.push(() => subscription.unsubscribe());
    onSnapshot(ref.getSnapshot());
    reportPhaseBeforeEffects(ref, phases);
  }

  /** Write-ahead hooks of an agent's effects: checkpoints for supervised restarts, and the wait for people. */
  #durableFor(name: string): DurableRun {
    const durable = {
      // Every wait asks anew: the journal replays the decisions taken before a restart.
      isRequested: () => false,
      beforeEffect: (command: EffectCommand, context: AgentContext) => {
        const segment = this.#active.get(name)?.segment ?? 0;
        const phase = command.type === 'model.call' ? command.phase : 'toolUse';
        this.#checkpoints.set(name, { segment, checkpoint: checkpointOf(context, phase) });
      },
      awaitPeople: (requests: readonly ApprovalRequest[], context: AgentContext) => {
        const segment = this.#active.get(name)?.segment ?? 0;
        this.#checkpoints.set(name, { segment, checkpoint: checkpointOf(context, 'toolUse') });
        // Leave the machine's transition first: the wait issues journal commands and suspends.
        void Promise.resolve().then(() => this.#waitForPeople(requests));
      },
      replayModel: () => undefined,
      recordModel: () => undefined,
      replayTool: () => undefined,
      recordTool: () => undefined,
      // Effects of a tool call are journal entries of the turn (see callModel and journaledModelEffect).
      replayToolEffect: () => undefined,
      recordToolEffect: () => undefined,
    };
    return durable;
  }

  checkpointFor(agent: string, segment: number) {
    const stored = this.#checkpoints.get(agent);
    return stored && stored.segment === segment ? stored.checkpoint : null;
  }

  filterFor(agent: string) {
    return this.#agents.get(agent)?.handoffInputFilter;
  }

  #waitForPeople(requests: readonly ApprovalRequest[]): Promise<void> {
    if (this.#closed || requests.length === 0) return Promise.resolve();
    return waitForPeople(this, requests);
  }

  setWaiting(waiting: boolean): void {
    this.ctx.set(stateKeys.turn, { ...this.#turn, status: waiting ? 'waiting' : 'running' });
    if (waiting) {
      this.#waitedFrom = this.#clock.now();
      return;
    }
    // Time spent waiting for people does not count toward the agents' timeouts.
    const waited = this.#clock.now() - this.#waitedFrom;
    for (const active of this.#active.values())
      if (active.scope.deadline !== null) active.scope.deadline += waited;
  }

  decided(request: StoredApproval, decision: ApprovalDecision): void {
    this.#bus.emit(request.agent, 'approval_decided', {
      callId: request.callId,
      tool: request.tool,
      decision,
    });
    this.#active.get(request.agent)?.ref.send({
      type: 'approval.decided',
      callId: request.callId,
      decision,
    } satisfies AgentEvent);
  }

  storeApprovals(): void {
    this.ctx.set(stateKeys.approvals, [...this.#earlierApprovals, ...this.approvals.values()]);
  }

  /** The turn ended: its requests still pending (the call that asked was stopped) are withdrawn. */
  #withdrawPending(): void {
    let withdrawn = false;
    for (const record of this.approvals.values()) {
      if (record.status !== 'pending') continue;
      this.approvals.set(record.callId, {
        ...record,
        ...withdrawnRecord(record, turnEndedReason, this.#clock.now()),
      });
      withdrawn = true;
    }
    if (withdrawn) this.storeApprovals();
  }

  cancelled(): void {
    this.#actor?.send({ type: 'stop', reason: 'the invocation was cancelled' });
  }

  wait<T>(promise: RestatePromise<T>): Promise<T> {
    return this.#awaits.wait(promise);
  }

  async now(): Promise<number> {
    const time = await this.wait(this.ctx.run('clock', () => Date.now()));
    this.#clock.advance(time);
    return time;
  }

  /**
   * Writes the turn's events to the object's state. They are journaled first (one `ctx.run`): the order in which
   * parallel calls finish is not the same on a replay, and a state write must carry the same value every time.
   */
  async persistEvents(): Promise<void> {
    await this.#writeEvents();
  }

  async #writeEvents(): Promise<RunEvent[]> {
    const max = this.#settings.maxEvents;
    const written = await this.wait(
      this.ctx.run('events', () => this.#auditedEvents(max), { serde: serde.json }),
    );
    this.#audited = written.audited;
    this.ctx.set(stateKeys.events, written.events);
    return written.events;
  }

  /**
   * The body of the journal entry that writes the events: records the events not audited yet (those before the
   * last entry are, as journaled), flushes the log, and returns the events to keep with the audited count.
   */
  async #auditedEvents(max: number): Promise<{ events: RunEvent[]; audited: number }> {
    const audit = this.#settings.audit;
    const count = this.#events.length;
    if (audit) {
      // A retried entry in this attempt records nothing twice; the log keeps what it could not write queued.
      for (const event of this.#events.slice(Math.max(this.#audited, this.#observed), count))
        audit.observe(event);
      this.#observed = count;
      await audit.flush().catch(() => undefined);
    }
    return { events: this.#events.slice(-max), audited: count };
  }

  #runEffect<T>(
    agent: string,
    key: string,
    kind: 'model' | 'tool' | 'agent',
    effect: () => Promise<T>,
  ): Promise<T> {
    // An agent used as a tool is a call to its own object (issued by the delegator below), unless it needs a
    // session of its own in this process (handoffs): then its whole run is one journaled effect.
    if (kind === 'agent' && !this.#runsInProcess(agent, key)) return effect();
    const active = this.#active.get(agent);
    // A model call whose result comes from the journal was not counted by this attempt's budget: count it.
    const budgeted = kind === 'model' && this.#budgetScope !== undefined;
    let ran = false;
    const call = budgeted
      ? () => {
          ran = true;
          return effect();
        }
      : effect;
    const result = journaledEffect(
      this.ctx,
      { key, kind, effect: call, deadline: active?.scope.deadline ?? null },
      this.#settings,
      {
        clock: this.#clock,
        bus: this.#bus,
        wait: (promise) => this.wait(promise),
        timedOut: () => active?.ref.send({ type: 'timeout' }),
        failed: (error) => {
          this.#bus.emit(agent, 'error', { message: error.message, type: error.name, code: error.code });
          active?.ref.send({ type: 'effects.failed', error });
        },
        cancelled: () => this.cancelled(),
      },
    );
    if (!budgeted) return result;
    return result.then(async (value) => {
      const usage = usageOf(value);
      const model = this.#agents.get(agent);
      if (!ran && usage && model) await this.#charge(usage, model);
      this.#budgetLeft = this.#remainingBudget();
      return value;
    });
  }

  /** Whether the agent tool called under `key` runs its agent in-process (it needs a session: handoffs). */
  #runsInProcess(agent: string, key: string): boolean {
    const prefix = `${agent}/tool/`;
    if (!key.startsWith(prefix)) return false;
    const rest = key.slice(prefix.length);
    const callId = rest.slice(rest.indexOf('/') + 1);
    const snapshot = this.#active.get(agent)?.ref.getSnapshot() as SnapshotFrom<AgentMachine> | undefined;
    const call = snapshot?.context.openCalls.find((open) => open.id === callId);
    const delegate = delegateOf(call ? this.#agents.get(agent)?.tools.find(call.name) : undefined);
    return delegate !== undefined && needsSession(delegate);
  }

  /** Agents used as tools by `caller`: a durable request-response call to the sub-agent's own object. */
  #delegatorFor(name: string): Delegator {
    return (request) => {
      const objectName = this.#served.objectOf(request.agent.name);
      if (objectName === undefined)
        return Promise.resolve(
          subFailure(this.#sessionId, request.agent.name, request.input, 'no object serves this agent'),
        );
      // The caller's tool timeout cannot race the call (a timer is not journaled): it bounds the sub-run instead.
      const toolTimeout = this.#agents.get(name)?.limits.toolTimeoutMs ?? null;
      const caller = this.#request.delegated;
      const callerRoute = caller && name === this.#served.agent.name ? caller.route : name;
      const parameter: DelegateRequest = {
        input: request.input,
        maxSteps: request.agent.limits.maxSteps,
        timeoutMs: minOf(request.agent.limits.timeoutMs, toolTimeout),
        sessionId: this.#sessionId,
        route: `${callerRoute}>${request.callId}/${request.agent.name}`,
        turn: caller?.turn ?? this.#turn.number,
        callPath: caller?.callPath ? `${caller.callPath}/${request.callId}` : request.callId,
      };
      // The budget left when the caller's last model call ended: the same on every replay.
      const left = this.#budgetLeft;
      if (left) {
        if ((left.tokens ?? 1) <= 0 || (left.usd ?? 1) <= 0)
          return Promise.resolve(
            subFailure(this.#sessionId, request.agent.name, request.input, 'the turn’s budget is spent'),
          );
        parameter.budget = left;
      }
      const call = this.ctx.genericCall<DelegateRequest, RunResult<unknown>>({
        service: objectName,
        method: 'delegate',
        key: `${this.ctx.key}>${this.#turn.number}.${request.callId}`,
        parameter,
        inputSerde: serde.json,
        outputSerde: serde.json,
      });
      return this.wait(call).then(
        async (result) => {
          // What the agent used as a tool spent counts on this turn's budget.
          if (this.#budgetScope !== undefined) await this.#charge(result.usage, request.agent);
          return result;
        },
        (error: unknown) => {
          if (error instanceof CancelledError) {
            this.cancelled();
            return never<RunResult<unknown>>();
          }
          const message = error instanceof TerminalError ? error.message : toErrorInfo(error).message;
          return subFailure(
            this.#sessionId,
            request.agent.name,
            request.input,
            `the sub-agent failed: ${message}`,
          );
        },
      );
    };
  }

  /**
   * Timers of the session machine (supervision back-off) as durable sleeps: journaled, and a crash during the
   * back-off resumes after it.
   */
  #durableTimers() {
    return {
      setTimeout: (callback: () => void, ms: number) => {
        const timer = { cancelled: false };
        this.wait(this.ctx.sleep(ms)).then(
          () => {
            if (!timer.cancelled && !this.#closed) callback();
          },
          (error: unknown) => {
            if (error instanceof CancelledError) this.cancelled();
          },
        );
        return timer;
      },
      clearTimeout: (timer: unknown) => {
        (timer as { cancelled: boolean }).cancelled = true;
      },
    };
  }

  /** Stops the actors (their in-flight calls are aborted) and removes everything registered for the turn. */
  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const dispose of this.#disposers.splice(0)) dispose();
    this.#actor?.stop();
    // Per-session tool sources (MCP servers with scope 'session') close with the turn that opened them.
    void this.#holdings.release();
  }
}

/** `{ [key]: the smaller of the two limits }`, or nothing when neither is set. */
function withLimit(
  key: 'tokens' | 'usd',
  a: number | undefined,
  b: number | undefined,
): Partial<Record<'tokens' | 'usd', number>> {
  if (a === undefined && b === undefined) return {};
  return { [key]: Math.min(a ?? Number.POSITIVE_INFINITY, b ?? Number.POSITIVE_INFINITY) };
}

function minOf(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.min(a, b);
}

/** The usage of a model call's outcome, if it has one. */
function usageOf(value: unknown): Usage | undefined {
  const event = value as Partial<Extract<AgentEvent, { type: 'model.response' }>> | undefined;
  return event?.type === 'model.response' ? event.response?.usage : undefined;
}
