import type { AnyActorRef, SnapshotFrom } from 'xstate';
import type { Agent } from '../agent/define-agent.ts';
import type { Clock } from '../core/clock.ts';
import type { EventBus } from '../core/event-bus.ts';
import { stopOrphans } from '../engine/actor-links.ts';
import type { AgentMachine } from '../machines/agent.ts';
import type { InspectObserver } from '../run/inspect.ts';
import { PhaseReporter, reportPhaseBeforeEffects } from '../run/phase-events.ts';
import type { RunRuntime } from '../run/run-runtime.ts';

/**
 * Watches the agent holding a session's conversation while it runs: its phase and decode-retry events, its own
 * `timeoutMs`, and the deadline and inspector its nested agents inherit. Returns what stops watching.
 */
export function watchAgent(options: {
  child: AnyActorRef;
  agent: Agent<unknown>;
  /** The agent's runtime: its deadline and inspector are what its nested agents inherit. */
  runtime: RunRuntime | undefined;
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
  const runtime = options.runtime;
  if (runtime) {
    runtime.deadline = timeoutMs === null ? null : clock.now() + timeoutMs;
    runtime.inspect = options.inspect;
    reportPhaseBeforeEffects(child, phases);
  }
  return () => {
    if (runtime) {
      runtime.deadline = undefined;
      runtime.phases = undefined;
    }
    subscription.unsubscribe();
    if (timer !== undefined) clock.clearTimeout(timer);
  };
}
