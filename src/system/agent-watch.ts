import type { AnyActorRef, SnapshotFrom } from 'xstate';
import type { Agent } from '../agent/define-agent.ts';
import type { Clock } from '../core/clock.ts';
import type { EventBus } from '../core/event-bus.ts';
import type { AgentMachine } from '../machines/agent.ts';
import type { InspectObserver } from '../run/inspect.ts';
import { PhaseReporter } from '../run/phase-events.ts';
import { setScope, stopOrphans } from '../run/run-hooks.ts';

/**
 * Watches the agent holding a session's conversation while it runs: its phase and decode-retry events, its own
 * `timeoutMs`, and the deadline and inspector its nested agents inherit. Returns what stops watching.
 */
export function watchAgent(options: {
  child: AnyActorRef;
  agent: Agent<unknown>;
  runtimeKey: string;
  bus: EventBus;
  clock: Clock;
  inspect?: InspectObserver | undefined;
}): () => void {
  const { child, agent, bus, clock } = options;
  const initial = child.getSnapshot() as SnapshotFrom<AgentMachine>;
  const phases = new PhaseReporter(
    (type, data) => bus.emit(agent.name, type, data),
    initial.context.retryCount,
  );
  // The supervisor hears of a failure through xstate.error.actor.*; here we only clean up after it.
  const subscription = child.subscribe({
    next: (snapshot: SnapshotFrom<AgentMachine>) => phases.observe(snapshot),
    error: () => stopOrphans(child),
  });
  phases.observe(initial);
  const timeoutMs = agent.limits.timeoutMs;
  const timer =
    timeoutMs === null ? undefined : clock.setTimeout(() => child.send({ type: 'timeout' }), timeoutMs);
  const clearScope = setScope(options.runtimeKey, {
    deadline: timeoutMs === null ? null : clock.now() + timeoutMs,
    ...(options.inspect ? { inspect: options.inspect } : {}),
  });
  return () => {
    clearScope();
    subscription.unsubscribe();
    if (timer !== undefined) clock.clearTimeout(timer);
  };
}
