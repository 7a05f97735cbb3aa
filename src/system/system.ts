import type { Agent } from '../agent/define-agent.ts';
import { AsyncQueue } from '../core/async-queue.ts';
import { type Clock, systemClock } from '../core/clock.ts';
import { ConfigError } from '../core/errors.ts';
import type { RunEvent } from '../core/events.ts';
import type { RunInput } from '../core/messages.ts';
import { defaultSupervision, type SupervisionPolicy } from '../machines/session.ts';
import { loadStoredSession } from '../persistence/session-store.ts';
import type { SnapshotStore } from '../persistence/store.ts';
import { createMemoryStore } from '../persistence/store-memory.ts';
import {
  createResourceManager,
  type ResourceManager,
  type ResourceManagerConfig,
  type ResourceUsage,
} from '../resources/resource-manager.ts';
import type { InspectObserver } from '../run/inspect.ts';
import { checkRestoreOptions, checkSessionOptions, checkSystemOptions } from '../run/run-options.ts';
import { agentCatalog, type Session, type SessionOptions, startSession } from './session.ts';

export interface AgentSystemOptions {
  /** An XState inspection observer for every session, e.g. `createWebSocketInspector({ url }).inspect`. Secrets
   * (API keys, tool arguments marked `secret`) are redacted before it sees anything. */
  inspect?: InspectObserver;
  /** Where checkpoints and session records go; default: in memory. `createFileStore(dir)` keeps them on disk. */
  store?: SnapshotStore;
  /** Agents that handoffs may name as strings (so two agents can hand off to each other). */
  agents?: readonly Agent<unknown>[];
  /** Default supervision for every session: restart twice with back-off (100 ms, x2), then escalate. */
  supervision?: Partial<SupervisionPolicy>;
  /** Time source for events, back-off and timeouts; default the system clock (tests inject a simulated one). */
  clock?: Clock;
  /** Budgets and quotas shared by every session: a manager, or the config to create one (stopped at shutdown). */
  resources?: ResourceManager | ResourceManagerConfig;
}

/** Many agent sessions in one process (REQUIREMENTS M1): each its own root actor, addressable by id. */
export interface AgentSystem {
  spawn<TOutput>(agent: Agent<TOutput>, input: RunInput, options?: SessionOptions): Session<TOutput>;
  get(id: string): Session | undefined;
  /** The sessions that have not closed yet. */
  list(): Session[];
  /**
   * Brings back a session from the store (a file store survives the process): a turn that was interrupted resumes
   * from its last checkpoint without repeating completed model calls; a session whose last turn had finished
   * continues with `input` on its stored history, with the agent that answered last. `entry` must reach that agent.
   */
  restore<TOutput>(
    id: string,
    entry: Agent<TOutput>,
    options?: Omit<SessionOptions, 'id' | 'history'> & { input?: RunInput },
  ): Promise<Session<TOutput>>;
  /** Every session's events from now on, each tagged with its session and agent; ends at shutdown. */
  events(): AsyncIterable<RunEvent>;
  /** Stops every session and waits until every actor, timer and listener of the system is gone. */
  shutdown(): Promise<void>;
  /**
   * Spend and remaining budget of a tenant and of a session (R1); a session's tenant is used when only the session
   * is given. Both null when the system has no resource manager.
   */
  usage(query?: { tenant?: string; session?: string }): ResourceUsage;
}

export function createAgentSystem(options: AgentSystemOptions = {}): AgentSystem {
  checkSystemOptions(options, 'createAgentSystem()');
  const sessions = new Map<string, Session>();
  const streams = new Set<AsyncQueue<RunEvent>>();
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
        ? createResourceManager({ clock: options.clock, ...(given as ResourceManagerConfig) })
        : (given as ResourceManager);
  const environment = {
    clock: options.clock ?? systemClock,
    store: options.store ?? createMemoryStore(),
    keepRecords: options.store !== undefined,
    agents,
    supervision: { ...defaultSupervision, ...options.supervision },
    onEvent: (event: RunEvent) => {
      for (const stream of streams) stream.push(event);
    },
    onClose: (session: Session) => {
      if (sessions.get(session.id) === session) sessions.delete(session.id);
    },
    ...(options.inspect ? { inspect: options.inspect } : {}),
    ...(resources ? { resources } : {}),
  };
  let shuttingDown = false;

  return {
    spawn(agent, input, spawnOptions = {}) {
      checkSessionOptions(spawnOptions, 'spawn()');
      if (shuttingDown) throw new ConfigError('spawn(): the system is shutting down.');
      if (spawnOptions.id !== undefined && sessions.has(spawnOptions.id))
        throw new ConfigError(`spawn(): a session with id "${spawnOptions.id}" is already running.`);
      const session = startSession(agent, input, spawnOptions, environment);
      if (session.status !== 'closed' && session.status !== 'failed')
        sessions.set(session.id, session as Session);
      return session;
    },
    async restore(id, entry, restoreOptions = {}) {
      checkRestoreOptions(restoreOptions, 'restore()');
      if (sessions.has(id)) throw new ConfigError(`restore(): session "${id}" is running already.`);
      if (shuttingDown) throw new ConfigError('restore(): the system is shutting down.');
      const stored = await loadStoredSession(environment.store, id);
      if (shuttingDown)
        throw new ConfigError('restore(): the system shut down while the session was loading.');
      if (!stored) throw new ConfigError(`restore(): the store holds nothing for session "${id}".`);
      const { input, ...rest } = restoreOptions;
      let session: Session<typeof entry extends Agent<infer T> ? T : never>;
      if (stored.kind === 'interrupted') {
        const { restore } = stored;
        const asked = restore.transcript[restore.turnStart];
        const turnInput = input ?? (asked?.role === 'user' ? asked.content : '');
        session = startSession(entry, turnInput, { ...rest, id }, environment, restore);
      } else {
        if (input === undefined)
          throw new ConfigError(`restore(): session "${id}" finished its last turn; give the next input.`);
        const holder = agentCatalog(entry as Agent<unknown>, agents).get(stored.agent) ?? entry;
        session = startSession(
          holder as typeof entry,
          input,
          { ...rest, id, history: stored.transcript },
          environment,
        );
      }
      if (session.status !== 'closed' && session.status !== 'failed')
        sessions.set(session.id, session as Session);
      return session;
    },
    get: (id) => sessions.get(id),
    list: () => [...sessions.values()],
    usage: (query) => resources?.usage(query) ?? { tenant: null, session: null },
    events() {
      const queue = new AsyncQueue<RunEvent>();
      if (shuttingDown) queue.end();
      else streams.add(queue);
      return queue;
    },
    async shutdown() {
      shuttingDown = true;
      await Promise.all([...sessions.values()].map((session) => session.stop('the system shut down')));
      sessions.clear();
      for (const stream of streams) stream.end();
      streams.clear();
      if (ownsResources) resources?.stop();
    },
  };
}
