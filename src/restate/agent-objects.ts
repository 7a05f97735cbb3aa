import type { ObjectContext, ObjectSharedContext, VirtualObjectDefinition } from '@restatedev/restate-sdk';
import * as restate from '@restatedev/restate-sdk';
import { TerminalError } from '@restatedev/restate-sdk';
import type { Agent } from '../agent/define-agent.ts';
import { type AuditLog, auditConfigError } from '../audit/audit-log.ts';
import { ConfigError, HistoryValidationError } from '../core/errors.ts';
import type { RunEvent } from '../core/events.ts';
import { validateHistory } from '../core/history.ts';
import type { Message, RunInput } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';
import { defaultSupervision, type SupervisionPolicy } from '../machines/session.ts';
import type { PiiOptions } from '../pii/pii-options.ts';
import type { BudgetLimit } from '../resources/ledger.ts';
import { needsSession } from '../sessions/session-run.ts';
import {
  type AppliedDecision,
  type DecisionReceipt,
  type DecisionRequest,
  decideCall,
  recordDecision,
} from './approvals.ts';
import {
  type ContextSource,
  checkOptionNames,
  featuresOf,
  restateAgentsOptionNames,
} from './restate-options.ts';
import { delegateOf } from './runtime-agent.ts';
import {
  type SessionStatusView,
  type StoredApproval,
  type StoredConversation,
  type StoredTurn,
  stateKeys,
} from './state.ts';
import { type DelegateRequest, runTurn, type ServedAgent, type TurnSettings } from './turn.ts';

export interface RestateAgentsOptions<TContext = unknown> {
  /** The virtual object's name for an agent; default: the agent's name (Restate wants `[a-zA-Z][a-zA-Z0-9._-]*`). */
  objectName?: (agent: Agent<unknown>) => string;
  /**
   * How long a call may run without the handler writing to the journal before Restate asks it to suspend, in ms.
   * A model or tool call writes nothing until it ends, so this plus `abortTimeout` is the longest a single call
   * may take before Restate aborts the attempt and runs the call again. Default 5 minutes (Restate's: 1 minute).
   */
  inactivityTimeout?: number;
  /** How long after `inactivityTimeout` Restate aborts the attempt, in ms. Default 15 minutes (Restate's: 10). */
  abortTimeout?: number;
  /** Restate's retry policy for the objects' invocations (a crashed or unreachable service); default Restate's. */
  retryPolicy?: restate.RetryPolicy;
  /**
   * Attempts of a model or tool call whose code throws. Model and tool failures are results (the providers and the
   * tool runner retry them first), so this only bounds a bug; then the turn fails with its error. Default 3.
   */
  maxEffectRetries?: number;
  /** A call's result larger than this (JSON bytes) is replaced by an error the agent sees. Default 8 MiB. */
  maxJournaledBytes?: number;
  /** Events of the last turn kept in the object's state (the newest). Default 1,000. */
  maxEvents?: number;
  /** What happens when an agent actor fails (a fatal tool); default: restart twice with back-off, then escalate. */
  supervision?: Partial<SupervisionPolicy>;
  /**
   * The run context of each turn (tools get it as `ctx.context`, instruction functions and policies as
   * `info.context`), computed in the endpoint process when a turn starts and again on every replay of it: it is never
   * journaled or stored, so it may hold clients and secrets. An agent used as a tool gets the context computed for
   * its own object with the user's session id. Required when the agents declare a context type.
   */
  context?: ContextSource<TContext>;
  /**
   * Masks personal data in the turns' events (the `events` handler, the object's state) and, with `model: true`, in
   * what the model sees, as `run(agent, input, { pii })` does. Placeholders are numbered per turn.
   */
  pii?: PiiOptions;
  /**
   * The audit log (createAuditLog) of the endpoint process: the turns' security-relevant events are recorded (and
   * flushed) when a turn waits for people and when it ends, inside the journaled step that writes its events, so a
   * crash loses none of them (a crash during that step may record a batch twice).
   */
  audit?: AuditLog;
  /**
   * The budget of each turn (tokens, USD): every model call reserves from it first and a spent budget ends the turn
   * `budget_exhausted`, as `run(agent, input, { budget })` does. The decision is part of the journaled call, and a
   * replay counts the journaled calls' usage again. An agent used as a tool gets what its caller had left when the
   * caller's last model call ended, and its usage counts on its caller's budget.
   */
  budget?: BudgetLimit;
}

/** The handlers of an agent's virtual object (keyed by session id). */
export interface AgentObjectHandlers {
  /** Runs one turn with the user's input (exclusive: turns of a session run one at a time) and returns its result. */
  send(ctx: ObjectContext, input: RunInput): Promise<RunResult<unknown>>;
  /** Runs this agent for another session's agent that uses it as a tool (not reachable through the ingress). */
  delegate(ctx: ObjectContext, request: DelegateRequest): Promise<RunResult<unknown>>;
  /** Starts the session from a conversation kept elsewhere (e.g. an embedded store); refused once it has turns. */
  importConversation(ctx: ObjectContext, request: ImportRequest): Promise<SessionStatusView>;
  /** The conversation up to the end of the last finished turn. */
  history(ctx: ObjectSharedContext): Promise<Message[]>;
  status(ctx: ObjectSharedContext): Promise<SessionStatusView>;
  /** The current (or last) turn's events; while the turn runs, those written when it last waited for people. */
  events(ctx: ObjectSharedContext): Promise<RunEvent[]>;
  /**
   * Every call of the session's turns that waits or waited for people, in the order asked, with their turn
   * numbers, awakeable ids and decisions; a request whose turn ended without a decision is `withdrawn`.
   */
  approvals(ctx: ObjectSharedContext): Promise<StoredApproval[]>;
  approve(ctx: ObjectSharedContext, request: { callId: string }): Promise<DecisionReceipt>;
  reject(ctx: ObjectSharedContext, request: { callId: string; reason: string }): Promise<DecisionReceipt>;
  answer(ctx: ObjectSharedContext, request: { callId: string; text: string }): Promise<DecisionReceipt>;
  /**
   * Records the one decision on a waiting call (keyed `<session>!<awakeableId>`: exclusive per call) and resolves its
   * awakeable; a second decision is refused. Not reachable through the ingress: approve, reject and answer call it.
   */
  decide(ctx: ObjectContext, request: DecisionRequest): Promise<AppliedDecision>;
}

export interface ImportRequest {
  transcript: Message[];
  /** The agent holding the conversation; default: the object's agent. */
  agent?: string;
}

export type AgentObject = VirtualObjectDefinition<string, AgentObjectHandlers>;

const objectNamePattern = /^([a-zA-Z]|_[a-zA-Z0-9])[a-zA-Z0-9._-]*$/;

/**
 * The agents as Restate virtual objects, one per agent, keyed by session id: bind them to an endpoint
 * (`restate.createEndpointHandler({ services: restateAgents([triage]) })`, or `serveAgents`). Agents reachable
 * from the given ones (handoff targets, agents used as tools) are served too. A handoff stays inside the session's
 * object; an agent used as a tool runs in its own object (key `<session>><turn>.<callId>`), called durably.
 * Throws a ConfigError for an agent name Restate refuses, two agents with one name, a handoff to an agent given by a
 * name nobody defines, and an option that is unknown or cannot hold on Restate (saying why).
 */
export function restateAgents<TContext = unknown>(
  agents: readonly Agent<unknown, TContext>[],
  ...given: RestateOptionsArgument<RestateAgentsOptions<TContext>, TContext>
): AgentObject[] {
  const options = (given[0] ?? {}) as RestateAgentsOptions;
  try {
    return agentObjects(
      agents as readonly Agent<unknown>[],
      options,
      restateAgentsOptionNames,
      'restateAgents()',
    );
  } catch (error) {
    auditConfigError(auditOf(options), 'restateAgents()', error);
    throw error;
  }
}

/**
 * The options argument of restateAgents and serveAgents for agents of context type `TContext`: optional when the
 * agents declare no context (or one that may be undefined), and with a required `context` function when they do.
 */
export type RestateOptionsArgument<TOptions, TContext> = unknown extends TContext
  ? [options?: TOptions]
  : undefined extends TContext
    ? [options?: TOptions]
    : [options: TOptions & { context: ContextSource<TContext> }];

/** restateAgents after its type checks: `known` names the options the caller may give. */
export function agentObjects(
  agents: readonly Agent<unknown>[],
  options: RestateAgentsOptions,
  knownOptions: ReadonlySet<string>,
  where: string,
): AgentObject[] {
  if (typeof options !== 'object' || options === null)
    throw new ConfigError(`${where}: options must be an object.`);
  checkOptionNames(options, knownOptions, where);
  const known = knownAgents(agents);
  const names = new Map<string, string>();
  const objectNames = new Set<string>();
  for (const agent of known.values()) {
    const name = options.objectName ? options.objectName(agent) : agent.name;
    if (typeof name !== 'string' || !objectNamePattern.test(name))
      throw new ConfigError(
        `restateAgents(): ${JSON.stringify(name)} (agent "${agent.name}") is not a name Restate accepts for an object: it must match ${objectNamePattern.source}. Pass objectName to choose another.`,
      );
    if (objectNames.has(name))
      throw new ConfigError(`restateAgents(): two agents would be served as the object "${name}".`);
    objectNames.add(name);
    names.set(agent.name, name);
  }
  const settings: TurnSettings = {
    ...settingsOf(options),
    ...featuresOf(options, known.values(), where),
  };
  if (settings.budget) refuseUnbudgetedDelegates(known, where);
  const serviceOptions: restate.ObjectOptions = {
    inactivityTimeout: options.inactivityTimeout ?? 5 * 60_000,
    abortTimeout: options.abortTimeout ?? 15 * 60_000,
  };
  if (options.retryPolicy) serviceOptions.retryPolicy = options.retryPolicy;
  return [...known.values()].map((agent) =>
    agentObject(
      {
        agent,
        objectName: names.get(agent.name) as string,
        catalog: handoffCatalog(agent, known),
        objectOf: (name) => names.get(name),
      },
      settings,
      serviceOptions,
    ),
  );
}

function agentObject(
  served: ServedAgent,
  settings: TurnSettings,
  serviceOptions: restate.ObjectOptions,
): AgentObject {
  const handlers: AgentObjectHandlers = {
    send: async (ctx, input) => {
      if (!isRunInput(input))
        throw new TerminalError('send: the input must be a string or an array of content parts.', {
          errorCode: 400,
        });
      return runTurn(ctx, served, { input }, settings);
    },
    delegate: async (ctx, request) => {
      const problem = delegateProblem(request);
      if (problem !== undefined) throw new TerminalError(`delegate: ${problem}`, { errorCode: 400 });
      return runTurn(ctx, served, { input: request.input, delegated: request }, settings);
    },
    importConversation: async (ctx, request) => {
      const existing = await ctx.get<StoredConversation>(stateKeys.conversation);
      if (existing && (existing.turns > 0 || existing.transcript.length > 0))
        throw new TerminalError(`Session "${ctx.key}" already has a conversation.`, { errorCode: 409 });
      const transcript = field(request, 'transcript');
      if (!Array.isArray(transcript))
        throw new TerminalError('importConversation: transcript must be an array of messages.', {
          errorCode: 400,
        });
      try {
        validateHistory(transcript);
      } catch (error) {
        if (error instanceof HistoryValidationError)
          throw new TerminalError(error.message, { errorCode: 400 });
        throw error;
      }
      const agent = field(request, 'agent') ?? served.agent.name;
      if (typeof agent !== 'string' || !served.catalog.has(agent))
        throw new TerminalError(
          `importConversation: "${String(agent)}" is not an agent of ${served.objectName} (known: ${[...served.catalog.keys()].join(', ')}).`,
          { errorCode: 400 },
        );
      const conversation: StoredConversation = { agent, turns: 0, transcript, nextSeq: 0 };
      ctx.set(stateKeys.conversation, conversation);
      return { sessionId: ctx.key, agent, turns: 0, turn: null, pendingApprovals: 0 };
    },
    history: async (ctx) => (await ctx.get<StoredConversation>(stateKeys.conversation))?.transcript ?? [],
    status: async (ctx) => {
      const conversation = await ctx.get<StoredConversation>(stateKeys.conversation);
      const turn = await ctx.get<StoredTurn>(stateKeys.turn);
      const approvals = (await ctx.get<StoredApproval[]>(stateKeys.approvals)) ?? [];
      return {
        sessionId: ctx.key,
        agent: conversation?.agent ?? served.agent.name,
        turns: conversation?.turns ?? 0,
        turn: turn ?? null,
        pendingApprovals: approvals.filter((record) => record.status === 'pending').length,
      };
    },
    events: async (ctx) => (await ctx.get<RunEvent[]>(stateKeys.events)) ?? [],
    approvals: async (ctx) => (await ctx.get<StoredApproval[]>(stateKeys.approvals)) ?? [],
    approve: async (ctx, request) =>
      decideCall(ctx, served.objectName, field(request, 'callId'), { type: 'approve' }),
    reject: async (ctx, request) =>
      decideCall(ctx, served.objectName, field(request, 'callId'), {
        type: 'reject',
        reason: String(field(request, 'reason') ?? ''),
      }),
    answer: async (ctx, request) =>
      decideCall(ctx, served.objectName, field(request, 'callId'), {
        type: 'answer',
        text: String(field(request, 'text') ?? ''),
      }),
    decide: async (ctx, request) => recordDecision(ctx, request),
  };
  const shared = restate.handlers.object.shared;
  return restate.object({
    name: served.objectName,
    description: served.agent.description || `The Troupe agent ${served.agent.name}`,
    handlers: {
      send: handlers.send,
      delegate: restate.handlers.object.exclusive({ ingressPrivate: true }, handlers.delegate),
      importConversation: handlers.importConversation,
      history: shared(handlers.history),
      status: shared(handlers.status),
      events: shared(handlers.events),
      approvals: shared(handlers.approvals),
      approve: shared(handlers.approve),
      reject: shared(handlers.reject),
      answer: shared(handlers.answer),
      decide: restate.handlers.object.exclusive({ ingressPrivate: true }, handlers.decide),
    },
    options: serviceOptions,
  }) as AgentObject;
}

/** Every agent given, and every agent they reach through handoffs (given as agents) and agent tools. */
function knownAgents(agents: readonly Agent<unknown>[]): Map<string, Agent<unknown>> {
  if (!Array.isArray(agents) || agents.length === 0)
    throw new ConfigError('restateAgents(): give at least one agent from defineAgent().');
  const known = new Map<string, Agent<unknown>>();
  const visit = (agent: Agent<unknown>) => {
    if (agent?.kind !== 'agent')
      throw new ConfigError('restateAgents(): every agent must come from defineAgent().');
    const existing = known.get(agent.name);
    if (existing) {
      if (existing !== agent)
        throw new ConfigError(`Two different agents are named "${agent.name}"; agent names must be unique.`);
      return;
    }
    known.set(agent.name, agent);
    for (const target of agent.handoffs) if (typeof target !== 'string') visit(target as Agent<unknown>);
    for (const name of agent.tools.names) {
      const delegate = delegateOf(agent.tools.find(name));
      if (delegate) visit(delegate);
    }
  };
  for (const agent of agents) visit(agent);
  return known;
}

/**
 * An agent used as a tool that needs a session of its own (handoffs, fatal tools) runs inside one journaled call of
 * its caller, in a private session whose model calls a turn's budget cannot reach: refused when turns have budgets.
 */
function refuseUnbudgetedDelegates(known: ReadonlyMap<string, Agent<unknown>>, where: string): void {
  for (const agent of known.values())
    for (const name of agent.tools.names) {
      const delegate = delegateOf(agent.tools.find(name));
      if (delegate && needsSession(delegate))
        throw new ConfigError(
          `${where}: budget: agent "${agent.name}" uses "${delegate.name}" as a tool, which has handoffs or fatal tools: on Restate it runs inside one journaled call of its caller, where a turn's budget cannot hold its model calls. Leave out budget, or give it no handoffs and no fatal tools.`,
        );
    }
}

/** The agents a session started with `entry` can hold the conversation with: handoffs, followed to the end. */
function handoffCatalog(
  entry: Agent<unknown>,
  known: ReadonlyMap<string, Agent<unknown>>,
): Map<string, Agent<unknown>> {
  const catalog = new Map<string, Agent<unknown>>();
  const visit = (agent: Agent<unknown>) => {
    if (catalog.has(agent.name)) return;
    catalog.set(agent.name, agent);
    for (const target of agent.handoffs) {
      const name = typeof target === 'string' ? target : target.name;
      const found = known.get(name);
      if (!found)
        throw new ConfigError(
          `Agent "${agent.name}" hands off to "${name}", which is not defined: pass it to restateAgents() too.`,
        );
      visit(found);
    }
  };
  visit(entry);
  return catalog;
}

function settingsOf(options: RestateAgentsOptions): TurnSettings {
  const positive = (key: 'maxEffectRetries' | 'maxJournaledBytes' | 'maxEvents', fallback: number) => {
    const value = options[key];
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1)
      throw new ConfigError(`restateAgents(): ${key} must be an integer >= 1, got ${String(value)}.`);
    return value;
  };
  for (const key of ['inactivityTimeout', 'abortTimeout'] as const) {
    const value = options[key];
    if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value) || value <= 0))
      throw new ConfigError(`restateAgents(): ${key} must be a positive number of milliseconds.`);
  }
  return {
    maxEffectRetries: positive('maxEffectRetries', 3),
    maxJournaledBytes: positive('maxJournaledBytes', 8 * 1_048_576),
    maxEvents: positive('maxEvents', 1000),
    supervision: supervisionOf(options.supervision),
  };
}

function supervisionOf(given: Partial<SupervisionPolicy> | undefined): SupervisionPolicy {
  const policy = { ...defaultSupervision, ...given };
  if (!['restart', 'stop', 'escalate'].includes(policy.strategy))
    throw new ConfigError(
      `restateAgents(): supervision.strategy must be restart, stop or escalate, got ${String(policy.strategy)}.`,
    );
  if (!['stop', 'escalate'].includes(policy.onExhausted))
    throw new ConfigError('restateAgents(): supervision.onExhausted must be stop or escalate.');
  for (const key of ['maxRestarts', 'backoffMs', 'backoffFactor', 'maxBackoffMs'] as const) {
    const value = policy[key];
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      throw new ConfigError(
        `restateAgents(): supervision.${key} must be a number >= 0, got ${String(value)}.`,
      );
  }
  return policy;
}

/** The audit log of options that may be malformed (a ConfigError is being reported). */
export function auditOf(options: unknown): AuditLog | undefined {
  const audit = (options as { audit?: { kind?: unknown } } | null | undefined)?.audit;
  return audit?.kind === 'audit-log' ? (audit as AuditLog) : undefined;
}

/** A request's own field (a JSON body: nothing is read from the prototype chain), or undefined. */
function field(request: unknown, key: string): unknown {
  if (typeof request !== 'object' || request === null || !Object.hasOwn(request, key)) return undefined;
  return (request as Record<string, unknown>)[key];
}

function isRunInput(input: unknown): input is RunInput {
  return (
    typeof input === 'string' ||
    (Array.isArray(input) && input.every((part) => typeof field(part, 'type') === 'string'))
  );
}

function delegateProblem(request: unknown): string | undefined {
  if (typeof request !== 'object' || request === null)
    return 'expected {input, maxSteps, timeoutMs, sessionId, route, turn, callPath}.';
  for (const key of ['sessionId', 'route', 'callPath'])
    if (typeof field(request, key) !== 'string') return `${key} must be a string.`;
  const turn = field(request, 'turn');
  if (typeof turn !== 'number' || !Number.isInteger(turn) || turn < 1) return 'turn must be an integer >= 1.';
  const budget = field(request, 'budget');
  if (budget !== undefined && (typeof budget !== 'object' || budget === null))
    return 'budget must be an object.';
  const input = field(request, 'input');
  const maxSteps = field(request, 'maxSteps');
  const timeoutMs = field(request, 'timeoutMs');
  if (typeof input !== 'string') return 'input must be a string.';
  if (typeof maxSteps !== 'number' || !Number.isInteger(maxSteps) || maxSteps < 1)
    return 'maxSteps must be an integer >= 1.';
  if (timeoutMs !== null && (typeof timeoutMs !== 'number' || !(timeoutMs > 0)))
    return 'timeoutMs must be a positive number or null.';
  return undefined;
}
