import type { Agent } from '../agent/define-agent.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import type { ApprovalHandler, ApprovalRecord, ApprovalRequest } from '../core/approvals.ts';
import { type Clock, systemClock } from '../core/clock.ts';
import type { RunEvent } from '../core/events.ts';
import type { Message, RunInput } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';
import { defaultSupervision, type SupervisionOptions, type SupervisionPolicy } from '../machines/session.ts';
import { createMemoryStore } from '../persistence/memory-store.ts';
import type { SessionStore, StoredSessionState } from '../persistence/store.ts';
import type { ResolvedPii } from '../pii/pii-options.ts';
import type { ResourceManager } from '../resources/resource-manager.ts';
import type { RunResourceOptions } from '../resources/resource-run.ts';
import type { InspectObserver } from '../run/inspect.ts';
import type { NestedPlacement } from '../run/run.ts';
import { planSession } from './session-plan.ts';
import { SessionRuntime } from './session-runtime.ts';
import type { TurnOptions } from './session-turns.ts';

export { agentCatalog } from './session-catalog.ts';
export { SessionClosedError, SystemClosedError } from './session-errors.ts';
export type { TurnOptions } from './session-turns.ts';

/**
 * Where a session stands: running a turn, awaiting people's decisions on tool calls, idle between turns, suspended
 * (the system shut down with `mode: 'suspend'`; `recover()` resumes it), closed (stopped) or failed (a failure
 * was escalated).
 */
export type SessionStatus = 'running' | 'awaiting' | 'idle' | 'suspended' | 'closed' | 'failed';

export interface SessionOptions {
  /**
   * The run context every turn of the session gets (see RunOptions.context); `send(input, { context })` replaces it
   * from that turn on. Kept in this process only, never stored: `restore()` and `recover()` need it given again.
   */
  context?: unknown;
  /** The session id; defaults to a random UUID. Must be unique among the sessions running in this process. */
  sessionId?: string | undefined;
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
  /**
   * For a private session running an agent used as a tool by another run: where its agents sit in the caller's
   * session (the session id, route and turn their tools see).
   */
  placement?: NestedPlacement | undefined;
  /** A call to the session (send()) was refused with a ConfigError: for the audit log. */
  onConfigError?: ((where: string, error: unknown) => void) | undefined;
  /** False when nobody can decide on waiting calls (a run() without onApproval); default true. */
  peopleCanDecide?: boolean | undefined;
  /** False once the system drains or shuts down: sessions take no new messages. */
  accepting?: (() => boolean) | undefined;
  /** Masking of personal data in every session's events, inspector frames and (optionally) model requests. */
  pii?: ResolvedPii | undefined;
  /** The audit log the session's events are recorded in (through onEvent); runs its tools start record there too. */
  audit?: AuditLog | undefined;
  /** A private session of run(): the handler deciding for it decides for the sessions its agents start too. */
  onApproval?: ApprovalHandler | undefined;
}

/** A conversation held by a session supervisor actor: one turn at a time, follow-ups continue the history. */
export interface Session<TOutput = unknown, TContext = unknown> {
  readonly sessionId: string;
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
  send(
    input: RunInput,
    options?: TurnOptions & { context?: TContext | undefined },
  ): Promise<RunResult<TOutput>>;
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

/** What the system can do to a session beyond its public interface. */
export interface SessionControl<TOutput = unknown> extends Session<TOutput> {
  /** Stops every actor without ending the turn in progress; the store keeps it resumable. */
  suspend(): Promise<void>;
  /** Resolves once the turn in progress and every queued one have finished (or the session closed). */
  drained(): Promise<void>;
  /** Applies decisions other processes stored for this session's waiting calls. */
  syncDecisions(records: readonly ApprovalRecord[]): void;
}

/** How a session starts: fresh, resuming an interrupted turn, or continuing a finished session with new input. */
export type SessionStart =
  | { kind: 'fresh' }
  | { kind: 'resume'; stored: StoredSessionState; extraInput?: RunInput | undefined }
  | { kind: 'continue'; stored: StoredSessionState };

/**
 * Starts a session: a session supervisor machine as its own root actor, the entry agent as its child, write-ahead
 * checkpoints before every model and tool call, and the session's event log (see SessionRuntime). Throws a
 * ConfigError for a bad agent, input or history, before anything runs.
 */
export function startSession<TOutput>(
  entry: Agent<TOutput>,
  input: RunInput,
  options: SessionOptions,
  environment: SessionEnvironment,
  start: SessionStart = { kind: 'fresh' },
): SessionControl<TOutput> {
  const plan = planSession(
    entry as Agent<unknown>,
    input,
    options,
    environment,
    start,
    environment.clock.now(),
  );
  return new SessionRuntime<TOutput>(plan, entry as Agent<unknown>, options, environment).start();
}

/** Defaults for a session started outside a system (run() of an agent with handoffs). */
export function defaultEnvironment(clock: Clock = systemClock): SessionEnvironment {
  return { clock, store: createMemoryStore(), agents: new Map(), supervision: defaultSupervision };
}
