import type { Agent } from '../agent/define-agent.ts';
import type { Clock } from '../core/clock.ts';
import type { EventBus } from '../core/event-bus.ts';
import type { ModelDelta } from '../core/model.ts';

/**
 * What a running session's effects need and machine context must not hold (functions, SDK clients, the event
 * bus). Looked up by session id: it keeps the statechart's context serializable and avoids building a machine
 * per run (`machine.provide()` costs about 100 µs here).
 */
export interface RunRuntime {
  agent: Agent<unknown>;
  bus: EventBus;
  clock: Clock;
  /** Streams model deltas to the bus, tagged with the agent. Bound once per run: it is on the hot path. */
  onDelta: (delta: ModelDelta) => void;
}

const runtimes = new Map<string, RunRuntime>();

export function registerRuntime(sessionId: string, runtime: RunRuntime): void {
  runtimes.set(sessionId, runtime);
}

export function runtimeOf(sessionId: string): RunRuntime | undefined {
  return runtimes.get(sessionId);
}

export function unregisterRuntime(sessionId: string): void {
  runtimes.delete(sessionId);
}

/** Sessions registered now; a finished run must not stay here (tests check it). */
export function activeRuntimeCount(): number {
  return runtimes.size;
}

export function deltaForwarder(bus: EventBus, agent: string): (delta: ModelDelta) => void {
  return (delta) => {
    switch (delta.type) {
      case 'text':
        bus.emit(agent, 'delta', { content: delta.text });
        return;
      case 'reasoning':
        bus.emit(agent, 'reasoning_delta', { content: delta.text });
        return;
      case 'tool_call': {
        const data: { index: number; id?: string; name?: string; argsDelta: string } = {
          index: delta.index,
          argsDelta: delta.argsDelta,
        };
        if (delta.id !== undefined) data.id = delta.id;
        if (delta.name !== undefined) data.name = delta.name;
        bus.emit(agent, 'tool_call_delta', data);
        return;
      }
    }
  };
}
