import { randomUUID } from 'node:crypto';
import { createActor, type InspectionEvent, type Observer, type SnapshotFrom } from 'xstate';
import type { Agent } from '../agent/define-agent.ts';
import { type AuditLog, auditConfigError } from '../audit/audit-log.ts';
import { abortReason } from '../core/abort.ts';
import { AsyncQueue } from '../core/async-queue.ts';
import { type Clock, systemClock } from '../core/clock.ts';
import { ConfigError } from '../core/errors.ts';
import { EventBus, type EventOrigin } from '../core/event-bus.ts';
import type { RunEvent } from '../core/events.ts';
import type { JsonValue } from '../core/json.ts';
import { type Message, type RunInput, userMessage } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';
import { releaseSessionResources } from '../core/session-resources.ts';
import { guardrailInput } from '../guardrails/guardrail-plan.ts';
import {
  type AgentContext,
  type AgentMachine,
  type AgentMachineOutput,
  agentOutputOf,
} from '../machines/agent.ts';
import { type PiiOptions, resolvePii } from '../pii/pii-options.ts';
import { attachLentPii, attachPii, inspectorMasking } from '../pii/pii-run.ts';
import { checkReachablePrices } from '../resources/priced-agents.ts';
import type { ResourceManager } from '../resources/resource-manager.ts';
import { attachResources } from '../resources/resource-run.ts';
import { type ApprovalHandler, needsSession, runInSession } from '../system/session-run.ts';
import { redactingInspector, secretArguments } from './inspect.ts';
import { PhaseReporter } from './phase-events.ts';
import type { OptionsWithContext } from './run-context.ts';
import { setScope, stopOrphans } from './run-hooks.ts';
import { runHost } from './run-host.ts';
import { checkRunArguments } from './run-options.ts';
import { buildRunResult, failedBeforeAnyStep, runEndData } from './run-result.ts';
import { deltaForwarder, type RunRuntime, registerRuntime, unregisterRuntime } from './run-runtime.ts';
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
  /** Session id of the run that started this one (a nested agent): its spend counts on the caller's budgets. */
  parentScope?: string | undefined;
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
};

interface StartedRun<TOutput> {
  sessionId: string;
  bus: EventBus;
  result: Promise<RunResult<TOutput>>;
}

/**
 * Starts one run: the agent machine as a root actor, its effects actor, the abort and timeout wiring, and the
 * result promise, which always resolves (never rejects) once the run has ended, however it ended.
 */
function startRun<TOutput>(
  agent: Agent<TOutput>,
  input: RunInput,
  options: RunOptions,
  beforeStart?: (bus: EventBus) => void,
  placement?: NestedPlacement,
): StartedRun<TOutput> {
  if (agent?.kind !== 'agent')
    throw new ConfigError('run(): the first argument must be an agent from defineAgent().');
  const callerHistory = options.history ?? [];
  const sessionId = options.sessionId ?? randomUUID();
  const clock = options.clock ?? systemClock;
  const bus = new EventBus(sessionId, clock);
  const pii = attachPii(bus, resolvePii(options.pii, 'run()')) ?? attachLentPii(bus);
  checkReachablePrices([agent as Agent<unknown>], options, { sessionId });
  const detachResources = attachResources(options, {
    sessionId,
    agent: agent.name,
    provider: agent.model.provider,
    model: agent.model.model,
    clock,
    bus,
  });
  beforeStart?.(bus);
  const audit = options.audit;
  if (audit) bus.subscribe((event) => audit.observe(event));
  const origin = placement?.origin;
  const runtime: RunRuntime = {
    agent: agent as Agent<unknown>,
    bus,
    clock,
    onDelta: deltaForwarder(bus, agent.name, origin),
    context: options.context,
  };
  if (placement) Object.assign(runtime, placement);
  registerRuntime(sessionId, runtime);

  const actor = createActor(runtimeAgentMachine, {
    input: {
      sessionId,
      agent: agent.name,
      limits: agent.limits,
      toolNames: agent.tools.names,
      hasOutputSchema: agent.outputSchema !== undefined,
      history: [...callerHistory, userMessage(input)],
      baseLength: callerHistory.length,
      ...guardrailInput(agent.guardrails),
    },
    // Secrets (tool arguments marked secret, API-key-like fields) are redacted before the observer sees anything.
    // An inspected run is a root actor (inspection is per actor system); the others share the run host's system.
    ...(options.inspect
      ? {
          inspect: redactingInspector(options.inspect, secretArguments(agent), inspectorMasking(pii)),
        }
      : { parent: runHost() }),
  } as Parameters<typeof createActor<AgentMachine>>[1]);

  const result = new Promise<RunResult<TOutput>>((resolve) => {
    const phases = new PhaseReporter((type, data) => bus.emit(agent.name, type, data, origin));
    let lastContext: AgentContext | undefined;
    let timer: unknown;
    let finished = false;
    // Nested runs (agentTool) read the deadline and inspector here: the caller's time limit carries down.
    const clearScope =
      agent.limits.timeoutMs !== null || options.inspect
        ? setScope(sessionId, {
            deadline: agent.limits.timeoutMs === null ? null : clock.now() + agent.limits.timeoutMs,
            ...(options.inspect ? { inspect: options.inspect } : {}),
          })
        : undefined;
    const onAbort = () => actor.send({ type: 'abort', reason: abortReason(options.signal, 'run') });

    const finish = (output: AgentMachineOutput | undefined, internalError?: unknown) => {
      if (finished) return;
      finished = true;
      if (timer !== undefined) clock.clearTimeout(timer);
      clearScope?.();
      options.signal?.removeEventListener('abort', onAbort);
      const final = output ?? (lastContext && agentOutputOf(lastContext));
      const runResult = final
        ? buildRunResult<TOutput>(internalError === undefined ? final : failedContext(final, internalError))
        : failedBeforeAnyStep<TOutput>(sessionId, agent.name, callerHistory, input, {
            name: 'InternalError',
            code: 'internal',
            message: internalError instanceof Error ? internalError.message : String(internalError),
          });
      if (bus.listening) bus.emit(agent.name, 'run_end', runEndData(runResult), origin);
      detachResources?.();
      unregisterRuntime(sessionId);
      // A plain run closes what its tools opened for it (per-session MCP servers) before its result is given.
      const releasing = placement ? undefined : releaseSessionResources(sessionId);
      if (releasing) void releasing.then(() => resolve(runResult));
      else resolve(runResult);
    };

    actor.subscribe({
      next: (snapshot: SnapshotFrom<AgentMachine>) => {
        lastContext = snapshot.context;
        // Phase events only matter to a listener (a plain run() has none).
        if (bus.listening) phases.observe(snapshot);
        if (snapshot.status === 'done') finish(snapshot.output);
      },
      // A root actor without an error observer crashes the process. Ours turns the error into a result.
      error: (error) => {
        stopOrphans(actor); // its effects actor would keep running (statelyai/xstate#5153)
        finish(undefined, error);
      },
    });

    if (bus.listening)
      bus.emit(
        agent.name,
        'run_start',
        {
          input: input as JsonValue,
          historyLength: callerHistory.length,
          model: agent.model.model,
          provider: agent.model.provider,
        },
        origin,
      );
    if (agent.limits.timeoutMs !== null) {
      timer = clock.setTimeout(() => actor.send({ type: 'timeout' }), agent.limits.timeoutMs);
    }
    options.signal?.addEventListener('abort', onAbort, { once: true });
    actor.start();
    if (options.signal?.aborted) onAbort();
  });

  return { sessionId, bus, result };
}

/**
 * Runs an agent to the end and resolves with its one typed result. It rejects only for bad input (a ConfigError
 * or HistoryValidationError before anything runs); everything that happens during the run is in the result.
 */
export async function run<TOutput, TContext = unknown>(
  agent: Agent<TOutput, TContext>,
  input: RunInput,
  ...given: OptionsWithContext<RunOptions, NoInfer<TContext>>
): Promise<RunResult<TOutput>> {
  const options: RunOptions = given[0] === undefined ? {} : given[0];
  try {
    checkRunArguments(agent, input, options, 'run()');
    // Handoffs and fatal tools need a session supervisor; a plain agent keeps the one-actor hot path.
    if (agent?.kind === 'agent' && needsSession(agent as Agent<unknown>))
      return await runInSession(agent, input, options).result;
    return await startRun(agent, input, options).result;
  } catch (error) {
    // Only bad input rejects (the result promise never does): a ConfigError goes to the audit log.
    auditConfigError(auditOf(options), 'run()', error);
    throw error;
  }
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
 * Starts a run and returns its events as an AsyncIterable (from run_start to run_end), buffered from the start so
 * nothing is missed, plus the `result` promise. Throws at once for bad input, like `run` rejects.
 */
export function stream<TOutput, TContext = unknown>(
  agent: Agent<TOutput, TContext>,
  input: RunInput,
  ...given: OptionsWithContext<RunOptions, NoInfer<TContext>>
): RunStream<TOutput> {
  return streamPlaced(agent as Agent<TOutput>, input, given[0] === undefined ? {} : given[0]);
}

/** `stream()`, for a nested run placed in its caller's session (`placement`) when the run needs no session. */
export function streamPlaced<TOutput>(
  agent: Agent<TOutput>,
  input: RunInput,
  options: RunOptions,
  placement?: NestedPlacement,
): RunStream<TOutput> {
  try {
    checkRunArguments(agent, input, options, 'stream()');
  } catch (error) {
    auditConfigError(auditOf(options), 'stream()', error);
    throw error;
  }
  if (agent?.kind === 'agent' && needsSession(agent as Agent<unknown>)) {
    const session = runInSession(agent, input, options, placement);
    const events = session.events;
    return {
      sessionId: session.sessionId,
      result: session.result,
      [Symbol.asyncIterator]: () => events[Symbol.asyncIterator](),
      steps: () => stepsFrom(events, session.result),
    };
  }
  const queue = new AsyncQueue<RunEvent>();
  const depth = placement?.origin.depth ?? 0;
  const started = startRun(
    agent,
    input,
    options,
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
async function* stepsFrom(
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
function auditOf(options: unknown): AuditLog | undefined {
  const audit = (options as { audit?: { kind?: unknown } } | null | undefined)?.audit;
  return audit?.kind === 'audit-log' ? (audit as AuditLog) : undefined;
}

/** A machine that errored (a bug of ours) still yields an honest failed result with the transcript so far. */
function failedContext(output: AgentMachineOutput, error: unknown): AgentMachineOutput {
  const message = error instanceof Error ? error.message : String(error);
  return { ...output, stopReason: 'error', error: { name: 'InternalError', code: 'internal', message } };
}
