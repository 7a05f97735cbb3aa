import type { AnyActorRef } from 'xstate';
import type { Agent } from '../agent/define-agent.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import type { ApprovalDecision, ApprovalRequest } from '../core/approvals.ts';
import type { Clock } from '../core/clock.ts';
import type { ErrorInfo } from '../core/errors.ts';
import type { EventBus, EventOrigin } from '../core/event-bus.ts';
import type { RunEventData, RunEventType } from '../core/events.ts';
import type { ModelDelta } from '../core/model.ts';
import type { RunResult } from '../core/result.ts';
import type { ResourceHoldings } from '../core/session-resources.ts';
import { addSpend, type NestedSpend } from '../core/usage.ts';
import { parentOf } from '../engine/actor-links.ts';
import type { ResourceManager } from '../resources/resource-manager.ts';
import type { DurableRun } from './durable-run.ts';
import type { InspectObserver } from './inspect.ts';
import type { PlainModelCalls } from './model-gate.ts';
import type { RunContextInfo } from './run-context.ts';
import { ToolCallContext } from './tool-call-context.ts';
import type { GatedBatch } from './tool-gate.ts';

/**
 * What a running agent's effects need and machine context must not hold (functions, SDK clients, the event bus,
 * the budgets): one object per agent run, made by the run host and handed over by reference (on the agent actor,
 * or on the host actor that runs the agent as a child), never looked up by a string key.
 */
export interface RunRuntime {
  /** The key of this agent's run: its machine's session id, unique among the runs of its host. */
  key: string;
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
  /** The resource manager model calls reserve from (budgets, quotas); absent: nothing to ask. */
  resources?: ResourceManager | undefined;
  /** Clock time at which this run times out (null: never): the agents it uses as tools inherit it. */
  deadline?: number | null | undefined;
  /** The inspection observer the agents it uses as tools report to. */
  inspect?: InspectObserver | undefined;
  /**
   * Reports the agent's phase as it is now (its `phase` and `decode_retry` events), before a durable run commits the
   * state that decided an effect: those events then go in that commit instead of a commit of their own.
   */
  phases?: PhaseSource | undefined;
  /** Decides on calls that wait for people when no session does (a plain run's `onApproval`). */
  onApproval?: ((request: ApprovalRequest) => ApprovalDecision | Promise<ApprovalDecision>) | undefined;
  /**
   * Asks a person while a tool runs (an MCP server's elicitation): a pending request of the session until
   * `answer()` or `reject()` decides it (run()'s `onApproval` decides a plain run's). `check` refuses a decision that
   * does not fit (its reason; the request stays pending). Absent outside sessions.
   */
  askPerson?:
    | ((
        request: ApprovalRequest,
        signal: AbortSignal,
        check?: (decision: ApprovalDecision) => string | undefined,
      ) => Promise<ApprovalDecision>)
    | undefined;
  /** The audit log this run records in; nested runs record in the same one. */
  audit?: AuditLog | undefined;
  /** A fatal tool failed: the session's supervisor decides. Absent outside sessions. */
  onFatal?: ((error: ErrorInfo) => void) | undefined;
  /** Runs an agent used as a tool as a child of this run's session; absent: it runs on its own actor. */
  delegate?: Delegator | undefined;
  /** Model calls made by agents used as tools since this run's last tool batch ended. */
  nestedSteps: number;
  /**
   * What this run's tool calls in flight spent outside its own model calls, by call id (see reportSpend): made when
   * first needed, each entry taken when its call's outcome is made.
   */
  spentByCall?: Map<string, NestedSpend> | undefined;
  /** The tool gate's batch object of this run, which its next tool step reuses once the last batch is over. */
  toolBatch?: GatedBatch | undefined;
  /** What the run's tools hold open for its session (per-session MCP connections), closed when it ends. */
  holdings?: ResourceHoldings | undefined;
  /** The request hooks and continuation of the run's model calls without hooks of their own (the model gate's). */
  plainCalls?: PlainModelCalls | undefined;
}

/** What reports an agent's phase as it is now (see RunRuntime.phases). */
export interface PhaseSource {
  reportPhase(): void;
}

/** Runs an agent used as a tool as a child of the caller's session actor. */
export type Delegator = (request: {
  agent: Agent<unknown>;
  input: string;
  callId: string;
  signal: AbortSignal;
}) => Promise<RunResult<unknown>>;

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

/** Where an agent actor keeps its runtime (a run's own agent), and a host actor its agents' runtimes. */
const runtimeSlot = Symbol('troupe.runtime');
const runtimesSlot = Symbol('troupe.runtimes');
/** Where a tool context or a guardrail check keeps the runtime of the run that called it. */
const callerSlot = Symbol('troupe.caller');

type RuntimeHolder = { [runtimeSlot]?: RunRuntime; [runtimesSlot]?: ReadonlyMap<string, RunRuntime> };

/** Gives an agent actor (created, not yet started) its runtime: its effects find it there when it starts. */
export function attachRuntime(agentActor: AnyActorRef, runtime: RunRuntime): void {
  // A plain store, not defineProperty (the runtime's slow path, once per run): a symbol-keyed property is left out
  // of keys, entries and JSON all the same.
  (agentActor as AnyActorRef & RuntimeHolder)[runtimeSlot] = runtime;
}

/**
 * Gives a host actor (a session, a group) the runtimes of the agents it runs as children, by their runtime key: a
 * child agent's effects find its own there through its parent when it starts. The map belongs to the host; it adds and
 * removes entries as agents come and go.
 */
export function attachRuntimes(hostActor: AnyActorRef, runtimes: ReadonlyMap<string, RunRuntime>): void {
  Object.defineProperty(hostActor, runtimesSlot, { value: runtimes, enumerable: false, configurable: true });
}

/** The runtime of the agent actor `agent` whose run's key is `key`: on the actor itself, else on its host. */
export function runtimeOfAgent(actor: AnyActorRef, key: string): RunRuntime | undefined {
  const agent = actor as AnyActorRef & RuntimeHolder;
  const own = agent[runtimeSlot];
  if (own) return own;
  const host = parentOf(agent) as (AnyActorRef & RuntimeHolder) | undefined;
  return host?.[runtimesSlot]?.get(key);
}

/** Binds a tool context (or a guardrail check's info) to the run that makes it, for the runs it may start. */
export function bindCaller(context: object, runtime: RunRuntime): void {
  Object.defineProperty(context, callerSlot, { value: runtime, enumerable: false });
}

/** The run a tool context (or a guardrail check's info) belongs to, when Troupe made it. */
export function callerOf(context: object | null | undefined): RunRuntime | undefined {
  if (typeof context !== 'object' || context === null) return undefined;
  if (context instanceof ToolCallContext) return ToolCallContext.callerOf(context);
  return (context as { [callerSlot]?: RunRuntime })[callerSlot];
}

/**
 * Reports spend made for tool call `callId` of this run outside its own model calls (an agent used as a tool
 * finished, an MCP server's sampling request was answered): it goes with the call's outcome to the agent's machine,
 * into the run's result and its journal.
 */
export function reportSpend(runtime: RunRuntime, callId: string, spend: NestedSpend): void {
  if (spend.modelCalls === 0 && spend.usage.input === 0 && spend.usage.output === 0) return;
  runtime.spentByCall ??= new Map();
  const byCall = runtime.spentByCall;
  byCall.set(callId, addSpend(byCall.get(callId), spend));
}

/** What was reported for tool call `callId`, removed from the run's open reports. */
export function takeSpend(runtime: RunRuntime, callId: string): NestedSpend | undefined {
  const byCall = runtime.spentByCall;
  const spend = byCall?.get(callId);
  if (spend) byCall?.delete(callId);
  return spend;
}

let live = 0;

/** Counts a runtime in (+1) at its run's start or out (-1) at its end. */
export function countRuntime(change: 1 | -1): void {
  live += change;
}

/** Runs whose runtime is live now; a finished run must not count here (tests check it). */
export function activeRuntimeCount(): number {
  return live;
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
