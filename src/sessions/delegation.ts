import type { Actor, AnyActorRef, SnapshotFrom } from 'xstate';
import type { Clock } from '../core/clock.ts';
import { toErrorInfo } from '../core/errors.ts';
import type { EventBus } from '../core/event-bus.ts';
import { userMessage } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';
import { stopOrphans } from '../engine/actor-links.ts';
import type { AgentMachine, AgentMachineOutput } from '../machines/agent.ts';
import type { SessionMachine } from '../machines/session.ts';
import { agentInput, emitRunStart, hostAgent } from '../run/host.ts';
import type { InspectObserver } from '../run/inspect.ts';
import { PhaseReporter, reportPhaseBeforeEffects } from '../run/phase-events.ts';
import { buildRunResult, runEndData } from '../run/run-result.ts';
import type { Delegator, RunRuntime } from '../run/run-runtime.ts';
import type { SessionDurability } from './session-durability.ts';
import { subFailure } from './session-result.ts';

/** What running nested agents needs from the session. */
export interface DelegationHost {
  sessionId: string;
  actor: () => Actor<SessionMachine>;
  bus: EventBus;
  clock: Clock;
  inspect: InspectObserver | undefined;
  durability: SessionDurability;
  /** The session's turn in progress (from 1). */
  turn: () => number;
  finished: () => boolean;
  /** Nested agents by route, so approvals reach the agent that asked. */
  routes: Map<string, AnyActorRef>;
  /** A fresh id for a child actor of the session. */
  nextChildId: () => string;
  /** The budget scope model calls reserve from now (the turn's, or the session's). */
  resourceScope: () => string;
  /** Hands committed decisions to the agents that wait for them (a nested agent resumed while waiting, say). */
  applyStoredDecisions: () => void;
  /** The session's runtimes by key, which its actor carries: a nested agent's goes there while it runs. */
  runtimes: Map<string, RunRuntime>;
}

/**
 * Agents used as tools (agentTool) inside a session run as children of the session's actor, with an explicit id,
 * stopped when they finish. Each has its own route (`caller>callId/name`), its own run_start and run_end events at
 * one more depth than its caller, and durable checkpoints: if the session is interrupted while the nested agent
 * runs, the calling tool runs again after recovery (same call id) and the nested agent resumes from its checkpoint
 * instead of starting over. Returns the delegator of the agent run `caller`.
 */
export function delegatorFor(host: DelegationHost, caller: RunRuntime): Delegator {
  return async (request) => {
    // Leave the caller's call stack first: the tool may have been started inside a transition of this system.
    await Promise.resolve();
    const { agent } = request;
    const { sessionId, bus, clock } = host;
    if (host.finished()) return subFailure(sessionId, agent.name, request.input, 'the session has closed');
    const callerRoute = caller.route ?? caller.agent.name;
    const route = `${callerRoute}>${request.callId}/${agent.name}`;
    const callPath =
      caller.callPath === undefined || caller.callPath === ''
        ? request.callId
        : `${caller.callPath}/${request.callId}`;
    const origin = { route, depth: (caller.origin?.depth ?? 0) + 1 };
    const id = host.nextChildId();
    const key = `${caller.key}>${request.callId}`;
    const timeoutMs = agent.limits.timeoutMs;
    const hosted = hostAgent({
      key,
      agent,
      bus,
      clock,
      sessionId,
      route,
      get turn() {
        return host.turn();
      },
      callPath,
      origin,
      // A nested agent works for the same caller: it gets the calling agent's context, budgets and audit log.
      get context() {
        return caller.context;
      },
      peopleCanDecide: caller.peopleCanDecide === true,
      durable: host.durability.runFor({ route, nested: true }),
      resourceScope: host.resourceScope,
      get resources() {
        return caller.resources;
      },
      deadline: timeoutMs === null ? null : clock.now() + timeoutMs,
      inspect: host.inspect,
      audit: caller.audit,
      onApproval: caller.onApproval,
      holdings: caller.holdings,
      askPerson: caller.askPerson,
    });
    const runtime = hosted.runtime;
    runtime.delegate = delegatorFor(host, runtime);
    host.runtimes.set(key, runtime);
    const undo: (() => void)[] = [
      () => {
        host.runtimes.delete(key);
        hosted.release();
      },
      () => host.routes.delete(route),
    ];
    const input = agentInput(agent, key, [userMessage(request.input)], 0);
    const resume = host.durability.nestedCheckpoint(route);
    if (resume) {
      input.resume = resume;
      input.history = resume.history;
    }
    emitRunStart(bus, agent, request.input, 0, origin);
    const actor = host.actor();
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
        // Done children stay in the parent's snapshot until stopped.
        if (!host.finished() && child) actor.send({ type: 'delegate.end', id });
        const result = output
          ? { ...buildRunResult<unknown>(output), sessionId }
          : subFailure(sessionId, agent.name, request.input, why);
        bus.emit(agent.name, 'run_end', runEndData(result), origin);
        resolve(result);
      };
      actor.send({ type: 'delegate.start', id, input });
      child = actor.getSnapshot().children[id] as AnyActorRef | undefined;
      if (!child) return settle(undefined, 'the session is not running');
      const started = child;
      host.routes.set(route, started);
      // Its phases and decode retries, like those of the agent holding the conversation, at its depth.
      const phases = new PhaseReporter((type, data) => bus.emit(agent.name, type, data, origin));
      reportPhaseBeforeEffects(started, phases);
      subscription = started.subscribe({
        next: (snapshot: SnapshotFrom<AgentMachine>) => {
          if (bus.listening) phases.observe(snapshot);
          if (snapshot.status === 'done') settle(snapshot.output);
          else if (snapshot.context.approvals) host.applyStoredDecisions();
        },
        error: (error: unknown) => {
          stopOrphans(started);
          settle(undefined, `the sub-agent failed: ${toErrorInfo(error).message}`);
        },
        complete: () => settle(undefined),
      });
      const now = started.getSnapshot() as SnapshotFrom<AgentMachine>;
      if (now.status === 'done') return settle(now.output);
      // Decisions stored while the session was down (or by another process) reach it once it waits.
      if (now.context.approvals) host.applyStoredDecisions();
      // A fatal tool of the sub-agent fails the sub-run: the caller's model gets the error.
      // Made in a local first: V8 allocates a function literal stored straight into a property in the old
      // generation, where it would keep the finished sub-run alive until a full collection.
      const onFatal: typeof runtime.onFatal = (error) =>
        settle(undefined, `the sub-agent failed: ${error.message}`);
      runtime.onFatal = onFatal;
      if (timeoutMs !== null) timer = clock.setTimeout(() => started.send({ type: 'timeout' }), timeoutMs);
      request.signal.addEventListener('abort', onAbort, { once: true });
      if (request.signal.aborted) onAbort();
    });
  };
}
