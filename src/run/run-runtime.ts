import type { Agent } from '../agent/define-agent.ts';
import type { Clock } from '../core/clock.ts';
import type { EventBus, EventOrigin } from '../core/event-bus.ts';
import type { RunEventData, RunEventType } from '../core/events.ts';
import type { ModelDelta } from '../core/model.ts';
import type { DurableRun } from './durable-run.ts';
import type { RunContextInfo } from './run-context.ts';

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
  /** The session id tools see (the user's); default: the bus's session id. */
  sessionId?: string;
  /** The agent's place in the session (see ToolContext.route); default: the agent's name. */
  route?: string;
  /** The session turn; default 1. */
  turn?: number;
  /** Ids of the calls that started this nested run, joined by '/'; default ''. */
  callPath?: string;
  /** Where the agent runs, for its events (default: holding the conversation, depth 0). */
  origin?: EventOrigin;
  /** The budget scope model calls reserve from now (a session turn with its own budget); default the bus's session. */
  resourceScope?: (() => string) | undefined;
  /**
   * The caller's run context (see RunContextInfo): handed to tools, instruction functions and policies, never to
   * the model, events, the store or the inspector. A session's agents read it through a getter (a turn may replace it).
   */
  context?: unknown;
  /**
   * Whether a person can decide on calls that wait (a session, or a run with onApproval): a permission policy's
   * `ask` waits then, and is a denial otherwise. Default false.
   */
  peopleCanDecide?: boolean;
  /** Write-ahead persistence, for a run inside a session; absent for a plain run. */
  durable?: DurableRun;
  /**
   * Runs each effect (a model call, one tool call with its retries) through a durable executor, e.g. Restate's
   * `ctx.run`: the executor runs it once and replays its recorded result when the handler is re-executed.
   * Absent: effects run directly.
   */
  runEffect?: EffectExecutor;
}

/**
 * Runs `effect` under `key` (unique within the run) and returns its result, which is plain JSON. A journaling
 * executor returns the recorded result instead of running it again. `kind` says what the effect is; an `agent`
 * effect (an agent used as a tool) is not wrapped by executors that start the nested agent durably themselves.
 */
export type EffectExecutor = <T>(
  key: string,
  kind: 'model' | 'tool' | 'agent',
  effect: () => Promise<T>,
) => Promise<T>;

/** Where a tool context keeps the key of the run that called it (agents used as tools find their caller by it). */
const runtimeKeySymbol = Symbol('troupe.runtimeKey');

export function bindRuntimeKey(context: object, key: string): void {
  Object.defineProperty(context, runtimeKeySymbol, { value: key, enumerable: false });
}

/** The runtime key of the run a tool context belongs to. */
export function runtimeKeyOf(context: object): string | undefined {
  return (context as { [runtimeKeySymbol]?: string })[runtimeKeySymbol];
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

/** What instruction functions and policies know about the run: its context and where the agent runs. */
export function contextInfoOf(runtime: RunRuntime): RunContextInfo {
  return {
    context: runtime.context,
    sessionId: runtime.sessionId ?? runtime.bus.sessionId,
    agent: runtime.agent.name,
    route: runtime.route ?? runtime.agent.name,
    turn: runtime.turn ?? 1,
  };
}

/** Emits an event of the run's agent, from where it runs. */
export function emitFrom<T extends RunEventType>(runtime: RunRuntime, type: T, data: RunEventData[T]): void {
  runtime.bus.emit(runtime.agent.name, type, data, runtime.origin);
}

export function deltaForwarder(
  bus: EventBus,
  agent: string,
  origin?: EventOrigin,
): (delta: ModelDelta) => void {
  return (delta) => {
    switch (delta.type) {
      case 'text':
        bus.emit(agent, 'delta', { content: delta.text }, origin);
        return;
      case 'reasoning':
        bus.emit(agent, 'reasoning_delta', { content: delta.text }, origin);
        return;
      case 'tool_call': {
        const data: { index: number; callId?: string; name?: string; argsDelta: string } = {
          index: delta.index,
          argsDelta: delta.argsDelta,
        };
        if (delta.id !== undefined) data.callId = delta.id;
        if (delta.name !== undefined) data.name = delta.name;
        bus.emit(agent, 'tool_call_delta', data, origin);
        return;
      }
    }
  };
}
