import type { Actor } from 'xstate';
import type { Agent } from '../agent/define-agent.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import type { ApprovalHandler } from '../core/approvals.ts';
import type { Clock } from '../core/clock.ts';
import type { ErrorInfo } from '../core/errors.ts';
import type { EventBus } from '../core/event-bus.ts';
import type { ResourceHoldings } from '../core/session-resources.ts';
import type { AgentDescriptor, SessionMachine } from '../machines/session.ts';
import type { ResourceManager } from '../resources/resource-manager.ts';
import { hostAgent } from '../run/host.ts';
import type { InspectObserver } from '../run/inspect.ts';
import type { NestedPlacement } from '../run/run.ts';
import type { RunRuntime } from '../run/run-runtime.ts';
import { type DelegationHost, delegatorFor } from './delegation.ts';
import { descriptorOf } from './session-catalog.ts';
import type { SessionDurability } from './session-durability.ts';

/**
 * Makes a session's agents runnable: each agent's runtime (its model, tools, event bus, its durable hooks and the
 * session turn its tools see), where its fatal tool failures go (the supervisor), and how the agents it uses as
 * tools run (as children of the session). The runtimes go into the session's own map, which its actor carries.
 * Returns the agents as the session machine describes them, and what undoes all of it.
 */
export function registerSessionAgents(options: {
  sessionId: string;
  agents: ReadonlyMap<string, Agent<unknown>>;
  bus: EventBus;
  clock: Clock;
  durability: SessionDurability;
  actor: () => Actor<SessionMachine>;
  delegation: DelegationHost;
  /** A fatal tool of agent `name` failed. */
  onFatal: (name: string, error: ErrorInfo) => void;
  /** The budget scope model calls reserve from now (the turn's, or the session's). */
  resourceScope: () => string;
  /** The resource manager model calls reserve from now (the turn's, or the session's). */
  resources: () => ResourceManager | undefined;
  /** The session's runtimes by key, which the session's actor carries. */
  runtimes: Map<string, RunRuntime>;
  /** What the session's tools hold open for it. */
  holdings: ResourceHoldings;
  inspect?: InspectObserver | undefined;
  audit?: AuditLog | undefined;
  /** Decides for the sessions the agents' tools start (a private session of run()). */
  onApproval?: ApprovalHandler | undefined;
  /** Where the session sits in a caller's session, when it runs an agent used as a tool. */
  placement?: NestedPlacement | undefined;
  /** The run context of the turn in progress (a turn may replace the session's). */
  context: () => unknown;
  /** Whether people can decide on waiting calls (see RunRuntime.peopleCanDecide). */
  peopleCanDecide: boolean;
  /** Asks a person while a tool runs (see RunRuntime.askPerson). */
  askPerson?: RunRuntime['askPerson'];
}): { descriptors: Record<string, AgentDescriptor>; dispose: () => void } {
  const { sessionId, agents, bus, clock, durability, actor, placement, runtimes } = options;
  // In a caller's session, every agent of this one sits where the called agent does: `caller>callId/<name>`.
  const entryName = placement ? placement.route.slice(placement.route.lastIndexOf('/') + 1) : '';
  const routePrefix = placement ? placement.route.slice(0, placement.route.length - entryName.length) : '';
  const undo: (() => void)[] = [];
  const descriptors: Record<string, AgentDescriptor> = {};
  for (const [name, agent] of agents) {
    descriptors[name] = descriptorOf(agent);
    const key = `${sessionId}/${name}`;
    const hosted = hostAgent({
      key,
      agent,
      bus,
      clock,
      sessionId: placement?.sessionId ?? sessionId,
      route: `${routePrefix}${name}`,
      get turn() {
        return placement?.turn ?? actor().getSnapshot().context.turns + 1;
      },
      callPath: placement?.callPath ?? '',
      get context() {
        return options.context();
      },
      peopleCanDecide: options.peopleCanDecide,
      durable: durability.runFor({ route: name, nested: false }),
      resourceScope: options.resourceScope,
      get resources() {
        return options.resources();
      },
      inspect: options.inspect,
      audit: options.audit,
      onApproval: options.onApproval,
      holdings: options.holdings,
      askPerson: options.askPerson,
      onFatal: (error) => options.onFatal(name, error),
    });
    hosted.runtime.delegate = delegatorFor(options.delegation, hosted.runtime);
    runtimes.set(key, hosted.runtime);
    undo.push(() => {
      runtimes.delete(key);
      hosted.release();
    });
  }
  return {
    descriptors,
    dispose: () => {
      for (const step of undo) step();
    },
  };
}
