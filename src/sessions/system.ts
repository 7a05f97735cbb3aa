import type { Agent } from '../agent/define-agent.ts';
import { type AuditLog, auditConfigError } from '../audit/audit-log.ts';
import type { ApprovalDecision, ApprovalRecord } from '../core/approvals.ts';
import { statusOfDecision, whyNotWaiting } from '../core/approvals.ts';
import { AsyncQueue } from '../core/async-queue.ts';
import { type Clock, systemClock } from '../core/clock.ts';
import { ConfigError, TroupeError } from '../core/errors.ts';
import type { RunEvent } from '../core/events.ts';
import type { RunInput } from '../core/messages.ts';
import { checkOptionObject, definedFields } from '../core/options.ts';
import { releaseProcessResources } from '../core/session-resources.ts';
import { defaultSupervision, type SupervisionOptions } from '../machines/session.ts';
import { createMemoryStore } from '../persistence/memory-store.ts';
import {
  resumableStatuses,
  type SessionStore,
  type SessionSummary,
  type StoredSessionState,
} from '../persistence/store.ts';
import { type PiiOptions, resolvePii } from '../pii/pii-options.ts';
import {
  createResourceManager,
  type ResourceManager,
  type ResourceManagerConfig,
  type ResourceUsage,
} from '../resources/resource-manager.ts';
import type { InspectObserver } from '../run/inspect.ts';
import type { OptionsWithContext } from '../run/run-context.ts';
import { checkRestoreOptions, checkSessionOptions, checkSystemOptions } from '../run/run-options.ts';
import { ApprovalError } from './approval-error.ts';
import { ProcessHold } from './process-hold.ts';
import {
  agentCatalog,
  type Session,
  type SessionControl,
  type SessionEnvironment,
  type SessionOptions,
  type SessionStart,
  SystemClosedError,
  startSession,
} from './session.ts';

export interface AgentSystemOptions {
  /** An XState inspection observer for every session, e.g. `createWebSocketInspector({ url }).inspect`. Secrets
   * (API keys, tool arguments marked `secret`) are redacted before it sees anything. */
  inspect?: InspectObserver | undefined;
  /**
   * Where sessions are kept: `createSqliteStore(path)` makes them survive crashes and restarts (write-ahead: no model
   * or tool call starts before the state that decided it is committed). Default: in this process's memory.
   */
  store?: SessionStore | undefined;
  /** Agents known by name: handoff targets given as strings, and the agents `recover()` resumes sessions of. */
  agents?: readonly Agent<unknown>[] | undefined;
  /** Default supervision for every session: restart twice with back-off (100 ms, x2), then escalate. */
  supervision?: SupervisionOptions | undefined;
  /** Time source for events, back-off and timeouts; default the system clock (tests inject a simulated one). */
  clock?: Clock | undefined;
  /** Budgets and quotas shared by every session: a manager, or the config to create one (stopped at shutdown). */
  resources?: ResourceManager | ResourceManagerConfig | undefined;
  /** How often a session waiting for approvals looks for decisions stored by other processes. Default 1,000 ms. */
  approvalPollMs?: number | undefined;
  /** Committed events each session keeps in memory for readers (older ones come from the store). Default 10,000. */
  maxBufferedEvents?: number | undefined;
  /**
   * Masks emails, phone numbers, payment cards, IBANs and API keys in every session's events (and so in the event
   * log the store keeps), inspector frames and, optionally, model requests (see PiiOptions). The stored conversation
   * keeps the real values: a resumed session needs them, and its model requests are masked again.
   */
  pii?: PiiOptions | undefined;
  /**
   * The audit log (createAuditLog) of every session: guardrail, permission, approval, budget, redaction and breaker
   * events, and configuration errors of calls to the system. `shutdown()` flushes it.
   */
  audit?: AuditLog | undefined;
}

/** How `shutdown()` treats the turns in flight. */
export interface ShutdownOptions {
  /**
   * - `suspend` (default): every actor stops at once; turns in flight stay in the store exactly as their last
   *   checkpoint left them, and `recover()` (in this process or the next) resumes them; their results say
   *   `suspended`.
   * - `drain`: no new sessions or messages; running turns (and messages queued behind them) finish, then the
   *   sessions close. Turns waiting for people are suspended. `timeoutMs` bounds the wait; what is left then is
   *   suspended.
   * - `abort`: turns in flight end `aborted` and sessions close.
   */
  mode?: 'suspend' | 'drain' | 'abort' | undefined;
  /** For `drain`: the longest wait, in milliseconds. */
  timeoutMs?: number | undefined;
}

/** The options of `restore()`. */
export type RestoreOptions = Omit<SessionOptions, 'sessionId' | 'history'> & {
  input?: RunInput | undefined;
  /**
   * Take the session even when another live process runs it (holds its lease in the store): that process's next
   * commit of the session is refused with SessionFencedError and its run ends. Without it, restore() of such a
   * session throws SessionLeasedError.
   */
  takeOver?: boolean | undefined;
};

/** Which of a session's events `system.events(sessionId, options)` gives. */
export interface StoredEventsOptions {
  /** Every event with `seq > after` (give the last seq a client saw). Default -1: from the first one. */
  after?: number | undefined;
  /** Ends the iteration when aborted. */
  signal?: AbortSignal | undefined;
}

/** The options of `recover()`. */
export interface RecoverOptions {
  /** Only these sessions; an id that names no interrupted session is listed under `failures`. */
  sessionIds?: readonly string[] | undefined;
  /** The run context every recovered session gets (it is never stored). */
  context?: unknown;
  /** The run context of each recovered session, from its id and entry agent; wins over `context`. */
  contextFor?: ((session: { sessionId: string; entry: string }) => unknown) | undefined;
  /**
   * Take sessions that another live process runs (holds the lease of) too: that process's next commit of each is
   * refused with SessionFencedError and its run ends. Without it, such a session is listed under `failures` with a
   * SessionLeasedError (a session whose process died is taken at once either way: same host, its pid is gone; another
   * host, its lease expired).
   */
  takeOver?: boolean | undefined;
}

/** What `recover()` did. */
export interface RecoverResult {
  /** Sessions resumed in this process. */
  sessions: Session[];
  /**
   * Sessions that could not be resumed, with why (an unknown agent, a damaged record, another live process running it:
   * SessionLeasedError...), and every id named in
   * `sessionIds` that names no interrupted session (not in the store, finished, or running here already), each
   * with a ConfigError saying which. Nothing was changed.
   */
  failures: { sessionId: string; error: TroupeError }[];
}

/** Many agent sessions in one process: each its own root actor, addressable by id. */
export interface AgentSystem {
  /**
   * Starts a session; `context` (typed by the agent's context type, required when it declares one) reaches its tools.
   * Once `shutdown()` has begun, it (like `restore()` and `recover()`) throws a SystemClosedError.
   */
  spawn<TOutput, TContext = unknown>(
    agent: Agent<TOutput, TContext>,
    input: RunInput,
    ...options: OptionsWithContext<SessionOptions, NoInfer<TContext>>
  ): Session<TOutput, TContext>;
  get(id: string): Session | undefined;
  /** The sessions that have not closed yet. */
  list(): Session[];
  /**
   * Sessions in the store whose turn was interrupted (the process died, or the system was suspended) or waits for
   * people, and which do not run in this process: what `recover()` would resume (a session another live process
   * runs is listed too; `recover()` reports it under `failures` with a SessionLeasedError).
   */
  interrupted(): Promise<SessionSummary[]>;
  /**
   * Resumes every interrupted session (or those named), each from its last committed checkpoint: calls that had
   * finished are not run again, the call that was in flight runs again with the same idempotency key, messages
   * queued behind a turn are kept. The sessions' entry agents must be known to the system (`agents`). The run
   * context is never stored: give it again, one for all (`context`) or per session (`contextFor`).
   */
  recover(options?: RecoverOptions): Promise<RecoverResult>;
  /**
   * Brings back one session from the store: an interrupted turn resumes from its last checkpoint (and `input`, if
   * given, is queued as the next turn, never dropped); a session whose last turn had finished continues with
   * `input` as a new turn, with the agent that answered last. `entry` must reach that agent. The run context is
   * never stored: give it again (`context`), as when the session was spawned.
   */
  restore<TOutput, TContext = unknown>(
    id: string,
    entry: Agent<TOutput, TContext>,
    ...options: OptionsWithContext<RestoreOptions, NoInfer<TContext>>
  ): Promise<Session<TOutput, TContext>>;
  /** Tool calls waiting for people, across every session of the store (and of this process). */
  approvals(query?: { sessionId?: string | undefined }): Promise<ApprovalRecord[]>;
  /**
   * Decides on a waiting call of any session: one running here gets it at once; one running in another process
   * sharing the store picks it up within its `approvalPollMs`; one that is not running anywhere gets it when it is
   * recovered.
   */
  approve(sessionId: string, callId: string): Promise<void>;
  reject(sessionId: string, callId: string, reason: string): Promise<void>;
  answer(sessionId: string, callId: string, text: string): Promise<void>;
  /**
   * Every session's events from now on (once committed), each tagged with its session and agent; ends at shutdown.
   * An open stream keeps the process alive until then (or until its signal aborts, or the loop ends).
   */
  events(options?: { signal?: AbortSignal | undefined }): AsyncIterable<RunEvent>;
  /**
   * One session's events with `seq > after`, whether it runs here or not: a session running in this process gives
   * its live events too, as `session.events({ after })` does; any other (a finished session, one a restarted
   * server has not restored, one another process runs) is read from the store and the iteration ends with the last
   * event stored. This is how a server replays a finished conversation to a client that reconnects with its last
   * seq. The iteration fails with a ConfigError when the store holds nothing for the id (the default in-memory
   * store forgets a session once it closes; a store you give keeps it).
   */
  events(sessionId: string, options?: StoredEventsOptions): AsyncIterable<RunEvent>;
  /**
   * Stops every session (see ShutdownOptions) and waits until every actor, timer and listener is gone. It is how a
   * program lets its process go: a session whose turn runs or waits for a person, and an open event stream, keep
   * the process alive until then.
   */
  shutdown(options?: ShutdownOptions): Promise<void>;
  /**
   * Spend and remaining budget of a tenant and of a session; a session's tenant is used when only the session is
   * given. Both null when the system has no resource manager.
   */
  usage(query?: { tenant?: string | undefined; session?: string | undefined }): ResourceUsage;
}

/** How many stored events `system.events(sessionId)` reads at a time. */
const storedEventsPage = 500;

export function createAgentSystem(options: AgentSystemOptions = {}): AgentSystem {
  checkSystemOptions(options, 'createAgentSystem()');
  const sessions = new Map<string, SessionControl>();
  /** The open streams of `events()`, each with what keeps the process alive while it is open. */
  const streams = new Map<AsyncQueue<RunEvent>, ProcessHold>();
  const agents = new Map<string, Agent<unknown>>();
  for (const agent of options.agents ?? []) {
    if (agent?.kind !== 'agent')
      throw new ConfigError('createAgentSystem(): agents must come from defineAgent().');
    if (agents.has(agent.name) && agents.get(agent.name) !== agent)
      throw new ConfigError(`createAgentSystem(): two agents are named "${agent.name}".`);
    agents.set(agent.name, agent);
  }
  const given = options.resources;
  const ownsResources = given !== undefined && (given as ResourceManager).kind !== 'resource-manager';
  const resources: ResourceManager | undefined =
    given === undefined
      ? undefined
      : ownsResources
        ? createResourceManager({ clock: options.clock, ...definedFields(given as ResourceManagerConfig) })
        : (given as ResourceManager);
  const store = options.store ?? createMemoryStore();
  const audit = options.audit;
  const environment: SessionEnvironment = {
    clock: options.clock ?? systemClock,
    store,
    keepRecords: options.store !== undefined,
    agents,
    supervision: { ...defaultSupervision, ...definedFields(options.supervision) },
    onEvent: (event: RunEvent) => {
      audit?.observe(event);
      for (const stream of streams.keys()) stream.push(event);
    },
    onConfigError: (where: string, error: unknown) => auditConfigError(audit, where, error),
    ...(audit ? { audit } : {}),
    onClose: (session: Session) => {
      if (sessions.get(session.sessionId) === session) sessions.delete(session.sessionId);
    },
    inspect: options.inspect,
    resources,
    approvalPollMs: options.approvalPollMs,
    maxBufferedEvents: options.maxBufferedEvents,
    accepting: () => accepting,
    pii: resolvePii(options.pii, 'createAgentSystem()'),
  };
  let accepting = true;
  let shuttingDown = false;

  const track = <TOutput>(session: SessionControl<TOutput>): Session<TOutput> => {
    if (session.status !== 'closed' && session.status !== 'failed')
      sessions.set(session.sessionId, session as SessionControl);
    return session;
  };
  const refuseWhenClosed = (what: string) => {
    if (!accepting) throw new SystemClosedError(what);
  };
  const entryOf = (name: string): Agent<unknown> => {
    const agent = agents.get(name);
    if (!agent)
      throw new ConfigError(
        `The session's entry agent "${name}" is not known to this system: pass it in createAgentSystem({ agents }).`,
      );
    return agent;
  };
  const start = <TOutput>(
    entry: Agent<TOutput>,
    input: RunInput,
    sessionOptions: SessionOptions,
    how: SessionStart,
  ): Session<TOutput> => track(startSession(entry, input, sessionOptions, environment, how));
  const resumeStored = <TOutput>(
    entry: Agent<TOutput>,
    stored: StoredSessionState,
    input: RunInput | undefined,
    rest: SessionOptions,
  ): Session<TOutput> => {
    const row = stored.session;
    const id = row.id;
    if (resumableStatuses.includes(row.status) && row.turn)
      return start(
        entry,
        row.turn.input,
        { ...rest, sessionId: id },
        { kind: 'resume', stored, extraInput: input },
      );
    if (input === undefined)
      throw new ConfigError(`restore(): session "${id}" finished its last turn; give the next input.`);
    const holder = agentCatalog(entry as Agent<unknown>, agents).get(row.agent) ?? entry;
    return start(holder as Agent<TOutput>, input, { ...rest, sessionId: id }, { kind: 'continue', stored });
  };

  const decideStored = async (sessionId: string, callId: string, decision: ApprovalDecision) => {
    const live = sessions.get(sessionId);
    if (live) {
      if (decision.type === 'approve') return live.approve(callId);
      if (decision.type === 'reject') return live.reject(callId, decision.reason);
      return live.answer(callId, decision.text);
    }
    const records = await store.approvals({ sessionId });
    const record = records.find((candidate) => candidate.callId === callId);
    if (record?.status !== 'pending') throw new ApprovalError(sessionId, callId, whyNotWaiting(record));
    if ((decision.type === 'answer') !== (record.kind === 'question') && decision.type !== 'reject')
      throw new ApprovalError(
        sessionId,
        callId,
        `a ${record.kind} cannot be decided with ${decision.type}()`,
      );
    await store.commit(sessionId, {
      approvals: [
        { ...record, status: statusOfDecision(decision), decision, decidedAt: environment.clock.now() },
      ],
    });
  };

  const spawnSession = <TOutput>(agent: Agent<TOutput>, input: RunInput, spawnOptions: SessionOptions) => {
    checkSessionOptions(spawnOptions, 'spawn()');
    refuseWhenClosed('spawn()');
    if (spawnOptions.sessionId !== undefined && sessions.has(spawnOptions.sessionId))
      throw new ConfigError(`spawn(): a session with id "${spawnOptions.sessionId}" is already running.`);
    if (spawnOptions.sessionId !== undefined) {
      const existing = store.load(spawnOptions.sessionId);
      if (existing instanceof Promise) existing.catch(() => undefined);
      else if (existing)
        throw new ConfigError(
          `spawn(): the store already holds a session "${spawnOptions.sessionId}": continue it with restore() or recover(), or pick another id.`,
        );
    }
    return start(agent, input, spawnOptions, { kind: 'fresh' });
  };
  const restoreSession = async <TOutput>(
    id: string,
    entry: Agent<TOutput>,
    restoreOptions: RestoreOptions,
  ) => {
    checkRestoreOptions(restoreOptions, 'restore()');
    if (sessions.has(id)) throw new ConfigError(`restore(): session "${id}" is running already.`);
    refuseWhenClosed('restore()');
    const { input, takeOver, ...rest } = restoreOptions;
    // The lease first, then the state: what is loaded is then what no other process commits over any more.
    await store.acquireLease?.(id, { takeOver: takeOver === true });
    try {
      const stored = await store.load(id);
      refuseWhenClosed('restore()');
      if (sessions.has(id)) throw new ConfigError(`restore(): session "${id}" is running already.`);
      if (!stored) throw new ConfigError(`restore(): the store holds nothing for session "${id}".`);
      return resumeStored(entry, stored, input, rest);
    } catch (error) {
      await releaseQuietly(id);
      throw error;
    }
  };
  /** Lets a lease go that was taken for a session which then did not start here. */
  const releaseQuietly = async (id: string): Promise<void> => {
    if (sessions.has(id)) return;
    try {
      await store.releaseLease?.(id);
    } catch {
      // A lease left behind is this live process's: the session's next restore here takes it again.
    }
  };
  const recoverSessions = async (recoverOptions: RecoverOptions): Promise<RecoverResult> => {
    checkOptionObject(
      recoverOptions as unknown,
      ['sessionIds', 'context', 'contextFor', 'takeOver'],
      'recover(): options',
    );
    if (recoverOptions.contextFor !== undefined && typeof recoverOptions.contextFor !== 'function')
      throw new ConfigError('recover(): contextFor must be a function of { sessionId, entry }.');
    if (recoverOptions.takeOver !== undefined && typeof recoverOptions.takeOver !== 'boolean')
      throw new ConfigError('recover(): takeOver must be true or false.');
    const takeOver = recoverOptions.takeOver === true;
    refuseWhenClosed('recover()');
    const named = recoverOptions.sessionIds;
    if (named !== undefined && (!Array.isArray(named) || named.some((id) => typeof id !== 'string')))
      throw new ConfigError('recover(): sessionIds must be an array of session ids (strings).');
    const wanted = named ? new Set(named) : undefined;
    const result: RecoverResult = { sessions: [], failures: [] };
    const listed = await store.list({ status: resumableStatuses });
    /** The named sessions this call resumed or reported. */
    const settled = new Set<string>();
    for (const summary of listed) {
      if (wanted && !wanted.has(summary.sessionId)) continue;
      if (sessions.has(summary.sessionId) || !accepting) continue;
      settled.add(summary.sessionId);
      let leased = false;
      try {
        await store.acquireLease?.(summary.sessionId, { takeOver });
        leased = true;
        const stored = await store.load(summary.sessionId);
        if (!stored?.session.turn) {
          await releaseQuietly(summary.sessionId);
          if (wanted)
            result.failures.push({
              sessionId: summary.sessionId,
              error: new ConfigError(`recover(): session "${summary.sessionId}" has no turn to resume.`),
            });
          continue;
        }
        const entry = stored.session.entry;
        const context = recoverOptions.contextFor
          ? recoverOptions.contextFor({ sessionId: summary.sessionId, entry })
          : recoverOptions.context;
        result.sessions.push(
          resumeStored(entryOf(entry), stored, undefined, context === undefined ? {} : { context }),
        );
      } catch (error) {
        if (leased) await releaseQuietly(summary.sessionId);
        result.failures.push({
          sessionId: summary.sessionId,
          error:
            error instanceof TroupeError
              ? error
              : new TroupeError('recover_failed', `Session "${summary.sessionId}": ${String(error)}`, {
                  cause: error,
                }),
        });
      }
    }
    // An id given by name that names no interrupted session is said so, never passed over in silence.
    for (const id of wanted ?? []) {
      if (settled.has(id) || !accepting) continue;
      result.failures.push({ sessionId: id, error: await notInterrupted(id) });
    }
    return result;
  };
  const sessionEvents = (sessionId: string, eventOptions: StoredEventsOptions): AsyncIterable<RunEvent> => {
    checkOptionObject(eventOptions as unknown, ['after', 'signal'], 'events(): options');
    const after = eventOptions.after ?? -1;
    if (!Number.isInteger(after) || after < -1)
      throw new ConfigError('events(): after must be an integer seq >= -1.');
    const live = sessions.get(sessionId);
    if (live) return live.events({ after, signal: eventOptions.signal });
    return storedEvents(sessionId, after, eventOptions.signal);
  };
  /** A session's stored events after `after`, read page by page, ending with the last one stored. */
  async function* storedEvents(
    sessionId: string,
    after: number,
    signal: AbortSignal | undefined,
  ): AsyncIterable<RunEvent> {
    let last = after;
    for (;;) {
      if (signal?.aborted) return;
      const page = await store.readEvents(sessionId, last, storedEventsPage);
      if (page.length === 0) {
        if (last === after && !(await store.load(sessionId)))
          throw new ConfigError(`events(): the store holds nothing for session "${sessionId}".`);
        return;
      }
      for (const event of page) {
        if (signal?.aborted) return;
        last = event.seq;
        yield event;
      }
      if (page.length < storedEventsPage) return;
    }
  }
  /** Why `recover({ sessionIds })` cannot resume `id`. */
  const notInterrupted = async (id: string): Promise<TroupeError> => {
    if (sessions.has(id))
      return new ConfigError(`recover(): session "${id}" is running in this process already.`);
    let stored: StoredSessionState | undefined;
    try {
      stored = await store.load(id);
    } catch (error) {
      return error instanceof TroupeError ? error : new TroupeError('recover_failed', String(error));
    }
    if (!stored) return new ConfigError(`recover(): the store holds no session "${id}".`);
    return new ConfigError(
      `recover(): session "${id}" is ${stored.session.status}, not interrupted: nothing to resume (continue a finished session with restore(id, agent, { input })).`,
    );
  };

  return {
    spawn(agent, input, ...given) {
      try {
        return spawnSession(agent, input, given[0] === undefined ? {} : given[0]);
      } catch (error) {
        auditConfigError(audit, 'spawn()', error);
        throw error;
      }
    },
    async restore(id, entry, ...given) {
      try {
        return await restoreSession(id, entry, given[0] === undefined ? {} : given[0]);
      } catch (error) {
        auditConfigError(audit, 'restore()', error);
        throw error;
      }
    },
    async recover(recoverOptions = {}) {
      try {
        return await recoverSessions(recoverOptions);
      } catch (error) {
        auditConfigError(audit, 'recover()', error);
        throw error;
      }
    },
    async interrupted() {
      const listed = await store.list({ status: resumableStatuses });
      return listed.filter((summary) => !sessions.has(summary.sessionId));
    },
    async approvals(query = {}) {
      const stored = await store.approvals({
        status: ['pending'],
        ...(query.sessionId !== undefined ? { sessionId: query.sessionId } : {}),
      });
      return stored;
    },
    approve: (sessionId, callId) => decideStored(sessionId, callId, { type: 'approve' }),
    reject: (sessionId, callId, reason) => decideStored(sessionId, callId, { type: 'reject', reason }),
    answer: (sessionId, callId, text) => decideStored(sessionId, callId, { type: 'answer', text }),
    get: (id) => sessions.get(id),
    list: () => [...sessions.values()],
    usage: (query) => resources?.usage(query) ?? { tenant: null, session: null },
    events(
      first?: string | { signal?: AbortSignal | undefined },
      second?: StoredEventsOptions,
    ): AsyncIterable<RunEvent> {
      if (typeof first === 'string') return sessionEvents(first, second ?? {});
      const eventOptions = first ?? {};
      const queue = new AsyncQueue<RunEvent>();
      if (shuttingDown || eventOptions.signal?.aborted) {
        queue.end();
        return queue;
      }
      // An open stream keeps the process alive until it ends: shutdown, its signal, or a break.
      const hold = new ProcessHold();
      hold.hold();
      streams.set(queue, hold);
      const signal = eventOptions.signal;
      const stop = () => {
        streams.delete(queue);
        hold.release();
        queue.end();
      };
      signal?.addEventListener('abort', stop, { once: true });
      queue.onReturn(() => {
        streams.delete(queue);
        hold.release();
        signal?.removeEventListener('abort', stop);
      });
      return queue;
    },
    async shutdown(shutdownOptions = {}) {
      const mode = shutdownOptions.mode ?? 'suspend';
      if (!['suspend', 'drain', 'abort'].includes(mode))
        throw new ConfigError(`shutdown(): mode must be suspend, drain or abort, got ${String(mode)}.`);
      accepting = false;
      const live = [...sessions.values()];
      if (mode === 'drain') {
        const waits = live.map((session) =>
          session.status === 'awaiting' ? session.suspend() : session.drained(),
        );
        const all = Promise.all(waits);
        const timeoutMs = shutdownOptions.timeoutMs;
        if (timeoutMs === undefined) await all;
        else {
          let timer: ReturnType<typeof setTimeout> | undefined;
          await Promise.race([all, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
          if (timer !== undefined) clearTimeout(timer);
        }
        await Promise.all(
          live.map((session) =>
            session.status === 'idle' ? session.stop('the system shut down') : session.suspend(),
          ),
        );
      } else if (mode === 'abort') {
        await Promise.all(live.map((session) => session.stop('the system shut down')));
      } else {
        await Promise.all(live.map((session) => session.suspend()));
      }
      shuttingDown = true;
      sessions.clear();
      for (const [stream, hold] of streams) {
        stream.end();
        hold.release();
      }
      streams.clear();
      if (ownsResources) resources?.stop();
      // Connections tools keep for the whole process (shared MCP servers) close too; they reopen on next use.
      await releaseProcessResources();
      // Every record so far reaches the sink before shutdown resolves.
      await audit?.flush().catch(() => undefined);
    },
  };
}
