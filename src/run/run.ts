import { type Actor, createActor, type InspectionEvent, type Observer } from 'xstate';
import type { Agent } from '../agent/define-agent.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import { stacklessError } from '../core/abort.ts';
import { withLast } from '../core/appended.ts';
import type { ApprovalHandler } from '../core/approvals.ts';
import { AsyncQueue } from '../core/async-queue.ts';
import { type Clock, systemClock } from '../core/clock.ts';
import { ConfigError } from '../core/errors.ts';
import { EventBus, type EventOrigin } from '../core/event-bus.ts';
import type { RunEvent } from '../core/events.ts';
import type { JsonValue } from '../core/json.ts';
import { type Message, type RunInput, userMessage } from '../core/messages.ts';
import { randomUuid } from '../core/random-id.ts';
import type { RunResult } from '../core/result.ts';
import { ResourceHoldings } from '../core/session-resources.ts';
import { ownActorFor } from '../engine/compiled-actor.ts';
import type { GuardrailCheckInfo } from '../guardrails/guardrail.ts';
import type { AgentMachine } from '../machines/agent.ts';
import { type PiiOptions, resolvePii } from '../pii/pii-options.ts';
import { inspectorMasking, lendPii, type PiiRun, piiOf } from '../pii/pii-run.ts';
import type { ResourceManager } from '../resources/resource-manager.ts';
import type { ToolContext } from '../tools/tool.ts';
import {
  type AgentRunSpec,
  agentInput,
  emptyRunScope,
  hostRuntime,
  type OpenedRunScope,
  openRunScope,
} from './host.ts';
import { redactingInspector, secretArguments } from './inspect.ts';
import { claimSessionId, releaseSessionId } from './live-sessions.ts';
import { runHost } from './run-host.ts';
import { RunObserver } from './run-observer.ts';
import { attachRuntime, callerOf, type RunRuntime } from './run-runtime.ts';
import { runtimeAgentMachine } from './runtime-agent-machine.ts';

export interface RunOptions {
  /**
   * The run context (a database client, the user's id and roles...): tools get it as `ctx.context`, instruction
   * functions, guardrails and permission policies as `info.context`. It never reaches the model, events, the store
   * or the inspector. Typed by the agent's context type (see contextType); required when the agent declares one.
   */
  context?: unknown;
  /** Earlier conversation (for example yesterday's `result.history`). Never mutated. */
  history?: readonly Message[] | undefined;
  /** Aborting it ends the run with stop reason `aborted` and aborts in-flight model and tool calls. */
  signal?: AbortSignal | undefined;
  /** Defaults to a random UUID. */
  sessionId?: string | undefined;
  /** Time source for events, timeouts and tool timers. Defaults to the system clock. */
  clock?: Clock | undefined;
  /** An XState inspection observer, e.g. `createWebSocketInspector(...).inspect` for the Stately inspector. */
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void) | undefined;
  /** The resource manager to ask before every model call (shared budgets, quotas). See createResourceManager. */
  resources?: ResourceManager | undefined;
  /** This run's budget; a run with a budget and no `resources` gets a private manager. Ends `budget_exhausted`. */
  budget?:
    | {
        tokens?: number | undefined;
        usd?: number | undefined;
        windowMs?: number | undefined;
        warnAt?: number | undefined;
      }
    | undefined;
  /** Whose budgets this run draws on (see createResourceManager's `budgets.tenants`). Default 'default'. */
  tenant?: string | undefined;
  /**
   * A budget scope of `resources` that this run's spend also counts on (the session id of a run or session that
   * uses the same manager). Inside a tool, pass `parent: ctx` instead: it finds the caller's manager itself.
   */
  parentScope?: string | undefined;
  /**
   * The tool context (`ctx`) or guardrail check (`info`) of the run that starts this one: this run's spend counts on
   * that run's budgets, and it takes that run's clock, inspector and audit log unless given its own.
   */
  parent?: ToolContext<unknown> | GuardrailCheckInfo<unknown> | undefined;
  /**
   * Decides on tool calls that wait for a person (tools with `needsApproval`, the `askHuman` tool): called with
   * each request, it returns `{ type: 'approve' }`, `{ type: 'reject', reason }` or `{ type: 'answer', text }` (or a
   * promise of one). Required when the agent has such tools; in a session, decide with `session.approve()` instead.
   */
  onApproval?: ApprovalHandler | undefined;
  /**
   * Masks emails, phone numbers, payment cards, IBANs and API keys in this run's events and inspector frames, and
   * optionally in what the model sees (see PiiOptions).
   */
  pii?: PiiOptions | undefined;
  /**
   * The audit log (createAuditLog) to record this run's security-relevant events in: guardrail, permission,
   * approval, budget, redaction and breaker events (and a ConfigError this call is refused with).
   */
  audit?: AuditLog | undefined;
}

/**
 * Where a nested run (an agent used as a tool by a plain run) sits in its caller's session: the session id and route
 * its tools see, the ids of the calls that started it, and the route and depth its events carry.
 */
export type NestedPlacement = Required<Pick<RunRuntime, 'sessionId' | 'route' | 'callPath'>> & {
  origin: EventOrigin;
  /** The caller's session turn: part of the nested tools' idempotency keys. */
  turn: number;
  /** The run that called: its budgets, clock, inspector and audit log carry down. */
  caller?: RunRuntime | undefined;
  /** The caller's masking, lent so that placeholders agree (the caller masks the forwarded events). */
  pii?: PiiRun | undefined;
};

/** A started run: its id and its result. Its bus is not handed out: it gets its listeners before the start or never. */
export interface StartedRun<TOutput> {
  sessionId: string;
  result: Promise<RunResult<TOutput>>;
}

/** The caller's history of a run given none (read only: the run's own history is a new array). */
const noHistory: readonly Message[] = Object.freeze([]);

/**
 * Starts one run: the agent machine (with its effects) as a root actor, the abort and timeout wiring, and the
 * result promise, which always resolves (never rejects) once the run has ended, however it ended.
 */
export function startRun<TOutput>(
  agent: Agent<TOutput>,
  input: RunInput,
  options: RunOptions,
  beforeStart?: (bus: EventBus) => void,
  placement?: NestedPlacement,
): StartedRun<TOutput> {
  if (agent?.kind !== 'agent')
    throw new ConfigError('run(): the first argument must be an agent from defineAgent().');
  const callerHistory = options.history ?? noHistory;
  const sessionId = options.sessionId ?? randomUuid();
  const caller = placement?.caller ?? callerOf(options.parent);
  const clock = options.clock ?? caller?.clock ?? systemClock;
  claimSessionId(sessionId, 'run()');
  const bus = new EventBus(sessionId, clock);
  // A nested run whose events its caller forwards is audited there, once.
  const audit = options.audit ?? (placement ? undefined : caller?.audit);
  let scope: OpenedRunScope;
  try {
    // Most runs attach nothing: they skip building the scope's spec.
    scope =
      emptyRunScope(options, caller, options.pii, audit) ??
      openRunScope({
        sessionId,
        bus,
        clock,
        agents: [agent as Agent<unknown>],
        resources: options,
        caller,
        pii: resolvePii(options.pii, 'run()'),
        audit,
      });
  } catch (error) {
    releaseSessionId(sessionId);
    throw error;
  }
  // A nested run without masking of its own shares its caller's placeholders.
  if (placement?.pii && !piiOf(bus)) lendPii(bus, placement.pii);
  beforeStart?.(bus);
  const deadline = agent.limits.timeoutMs === null ? null : clock.now() + agent.limits.timeoutMs;
  const inspect = options.inspect ?? caller?.inspect;
  // A nested run's tools hold their connections for the caller's session; a plain run holds its own.
  const holdings = placement ? placement.caller?.holdings : new ResourceHoldings();
  // Every field the runtime gets during a plain run is in the literal (the host's and the observer's included):
  // stored later, each would move the object to a new shape and its fields past the literal's into a property
  // array of their own, which a run in flight holds.
  const spec: AgentRunSpec & {
    onDelta: RunRuntime['onDelta'] | undefined;
    nestedSteps: number;
    toolBatch: RunRuntime['toolBatch'];
  } = {
    key: sessionId,
    agent: agent as Agent<unknown>,
    bus,
    clock,
    context: options.context,
    resources: scope.resources,
    deadline,
    inspect,
    onApproval: options.onApproval,
    audit,
    holdings,
    phases: undefined,
    onDelta: undefined,
    nestedSteps: 0,
    toolBatch: undefined,
    plainCalls: undefined,
  };
  if (placement) {
    spec.sessionId = placement.sessionId;
    spec.route = placement.route;
    spec.callPath = placement.callPath;
    spec.origin = placement.origin;
    spec.turn = placement.turn;
  }
  // Every listener the bus will have is on it now (the audit log's, the stream's): no later one can subscribe.
  const runtime = hostRuntime(spec, bus.listening);

  const machineInput = agentInput(
    agent as Agent<unknown>,
    sessionId,
    // At its final length: the run's first history stays in its context until the first model response.
    withLast(callerHistory, userMessage(input)),
    callerHistory.length,
  );
  const logic = runtimeAgentMachine();
  // A run that nothing inspects, on the compiled interpreter, gets the engine's own actor (no actor system, mailbox
  // object or inspection events: less memory per run in flight and less CPU per step). Otherwise XState's: secrets
  // (tool arguments marked secret, API-key-like fields) are redacted before an inspector sees anything; an inspected
  // run is a root actor (inspection is per actor system); the others share the run host's system.
  const actor =
    (inspect === undefined
      ? (ownActorFor(logic, machineInput) as unknown as Actor<AgentMachine> | undefined)
      : undefined) ??
    createActor(
      logic,
      (options.inspect
        ? {
            input: machineInput,
            inspect: redactingInspector(
              options.inspect,
              secretArguments(agent),
              inspectorMasking(piiOf(bus)),
            ),
          }
        : { input: machineInput, parent: runHost() }) as Parameters<typeof createActor<AgentMachine>>[1],
    );
  attachRuntime(actor, runtime);

  const observer = new RunObserver<TOutput>({
    actor,
    runtime,
    scope,
    input,
    callerHistory,
    signal: options.signal,
    ownHoldings: placement ? undefined : holdings,
  });
  runtime.phases = observer;
  const result = observer.start();

  return { sessionId, result };
}

/** A streaming run: iterate its events with `for await`, and await `result` for the outcome. */
export interface RunStream<TOutput> extends AsyncIterable<RunEvent> {
  readonly sessionId: string;
  readonly result: Promise<RunResult<TOutput>>;
  /** The same stream as steps: thoughts, tool calls and results in order, then the answer. */
  steps(): AsyncIterable<RunItem>;
}

/**
 * One item of a run seen step by step (`steps()`): the model's thinking before its tool calls, each tool call and
 * its result (paired by `callId`), the final answer. `result.steps` holds the whole steps (`RunStep`).
 */
export type RunItem =
  | { type: 'thinking'; agent: string; text: string }
  | { type: 'tool_call'; agent: string; callId: string; name: string; args: JsonValue }
  | { type: 'tool_result'; agent: string; callId: string; name: string; content: string; isError: boolean }
  | { type: 'final_response'; agent: string; text: string };

/**
 * A run on the single-actor path, streamed: its events from run_start to run_end, buffered from the start so
 * nothing is missed, and its result. `placement` puts a nested run in its caller's session.
 */
export function streamRun<TOutput>(
  agent: Agent<TOutput>,
  input: RunInput,
  options: RunOptions,
  placement?: NestedPlacement,
): RunStream<TOutput> {
  const queue = new AsyncQueue<RunEvent>();
  const depth = placement?.origin.depth ?? 0;
  // A reader that stops early (a `break` out of `for await`) aborts the run: its tools and model stop spending.
  const stopped = new AbortController();
  queue.onReturn(() => stopped.abort(stacklessError('the stream was closed before the run ended')));
  const signal = options.signal ? AbortSignal.any([options.signal, stopped.signal]) : stopped.signal;
  const started = startRun(
    agent,
    input,
    { ...options, signal },
    (bus) => {
      bus.subscribe((event) => {
        queue.push(event);
        // The run_end of an agent it used as a tool (one level deeper) is not this run's end.
        if (event.type === 'run_end' && event.depth === depth) queue.end();
      });
    },
    placement,
  );
  return {
    sessionId: started.sessionId,
    result: started.result,
    [Symbol.asyncIterator]: () => queue[Symbol.asyncIterator](),
    steps: () => stepsFrom(queue, started.result),
  };
}

/**
 * The step view of a run's events: a tool call and its result together, in call order. Tool events come out when
 * calls start and end, so calls of one batch interleave; a call is held back until it and every call before it have
 * their result.
 */
export async function* stepsFrom(
  events: AsyncIterable<RunEvent>,
  result: Promise<RunResult<unknown>>,
): AsyncIterable<RunItem> {
  const waiting: Extract<RunItem, { type: 'tool_call' }>[] = [];
  const results = new Map<string, Extract<RunItem, { type: 'tool_result' }>>();
  for await (const event of events) {
    if (event.type === 'model_response' && event.data.toolCallCount > 0 && event.data.text !== '') {
      yield { type: 'thinking', agent: event.agent, text: event.data.text };
    } else if (event.type === 'tool_call') {
      waiting.push({
        type: 'tool_call',
        agent: event.agent,
        callId: event.data.callId,
        name: event.data.name,
        args: event.data.args,
      });
    } else if (event.type === 'tool_response') {
      const step: Extract<RunItem, { type: 'tool_result' }> = {
        type: 'tool_result',
        agent: event.agent,
        callId: event.data.callId,
        name: event.data.name,
        content: event.data.content,
        isError: event.data.isError,
      };
      // A result without a started call (a person's answer or rejection) goes out on its own.
      if (!waiting.some((call) => call.callId === step.callId)) {
        yield step;
        continue;
      }
      results.set(step.callId, step);
      while (waiting.length > 0) {
        const head = waiting[0] as Extract<RunItem, { type: 'tool_call' }>;
        const done = results.get(head.callId);
        if (!done) break;
        waiting.shift();
        results.delete(head.callId);
        yield head;
        yield done;
      }
    }
  }
  const final = await result;
  if (final.status === 'completed') yield { type: 'final_response', agent: final.agent, text: final.text };
}

/** The audit log of options that may be malformed (a ConfigError is being reported). */
export function auditOf(options: unknown): AuditLog | undefined {
  const audit = (options as { audit?: { kind?: unknown } } | null | undefined)?.audit;
  return audit?.kind === 'audit-log' ? (audit as AuditLog) : undefined;
}
