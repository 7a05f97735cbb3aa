import { randomUUID } from 'node:crypto';
import { createActor, type InspectionEvent, type Observer, type SnapshotFrom } from 'xstate';
import type { Agent } from '../agent/define-agent.ts';
import { AsyncQueue } from '../core/async-queue.ts';
import { type Clock, systemClock } from '../core/clock.ts';
import { ConfigError } from '../core/errors.ts';
import { EventBus } from '../core/event-bus.ts';
import type { Phase, RunEvent } from '../core/events.ts';
import type { JsonValue } from '../core/json.ts';
import { type Message, type RunInput, userMessage } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';
import {
  type AgentContext,
  type AgentMachine,
  type AgentMachineOutput,
  agentOutputOf,
} from '../machines/agent.ts';
import type { ResourceManager } from '../resources/resource-manager.ts';
import { attachResources } from '../resources/resource-run.ts';
import { needsSession, runInSession } from '../system/session-run.ts';
import { redactingInspector, secretArguments } from './inspect.ts';
import { setScope, stopOrphans } from './run-hooks.ts';
import { runHost } from './run-host.ts';
import { checkRunArguments } from './run-options.ts';
import { buildRunResult, failedBeforeAnyStep } from './run-result.ts';
import { deltaForwarder, registerRuntime, unregisterRuntime } from './run-runtime.ts';
import { runtimeAgentMachine } from './runtime-agent-machine.ts';

export interface RunOptions {
  /** Earlier conversation (for example yesterday's `result.history`). Never mutated. */
  history?: readonly Message[];
  /** Aborting it ends the run with stop reason `aborted` and aborts in-flight model and tool calls. */
  signal?: AbortSignal;
  /** Defaults to a random UUID. */
  sessionId?: string;
  /** Time source for events, timeouts and tool timers. Defaults to the system clock. */
  clock?: Clock;
  /** An XState inspection observer, e.g. `createWebSocketInspector(...).inspect` for the Stately inspector. */
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
  /** The resource manager to ask before every model call (shared budgets, quotas). See createResourceManager. */
  resources?: ResourceManager;
  /** This run's budget; a run with a budget and no `resources` gets a private manager. Ends `budget_exhausted`. */
  budget?: { tokens?: number; usd?: number; windowMs?: number; warnAt?: number };
  /** Whose budgets this run draws on (see createResourceManager's `budgets.tenants`). Default 'default'. */
  tenant?: string;
  /** Session id of the run that started this one (a nested agent): its spend counts on the caller's budgets. */
  parentScope?: string;
}

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
): StartedRun<TOutput> {
  if (agent?.kind !== 'agent')
    throw new ConfigError('run(): the first argument must be an agent from defineAgent().');
  const callerHistory = options.history ?? [];
  const sessionId = options.sessionId ?? randomUUID();
  const clock = options.clock ?? systemClock;
  const bus = new EventBus(sessionId, clock);
  const detachResources = attachResources(options, {
    sessionId,
    agent: agent.name,
    provider: agent.model.provider,
    model: agent.model.model,
    clock,
    bus,
  });
  beforeStart?.(bus);
  registerRuntime(sessionId, {
    agent: agent as Agent<unknown>,
    bus,
    clock,
    onDelta: deltaForwarder(bus, agent.name),
  });

  const actor = createActor(runtimeAgentMachine, {
    input: {
      sessionId,
      agent: agent.name,
      limits: agent.limits,
      toolNames: agent.tools.names,
      hasOutputSchema: agent.outputSchema !== undefined,
      history: [...callerHistory, userMessage(input)],
      baseLength: callerHistory.length,
    },
    // Secrets (tool arguments marked secret, API-key-like fields) are redacted before the observer sees anything.
    // An inspected run is a root actor (inspection is per actor system); the others share the run host's system.
    ...(options.inspect
      ? { inspect: redactingInspector(options.inspect, secretArguments(agent)) }
      : { parent: runHost() }),
  } as Parameters<typeof createActor<AgentMachine>>[1]);

  const result = new Promise<RunResult<TOutput>>((resolve) => {
    let lastPhase = '';
    let lastValue: unknown;
    let lastContext: AgentContext | undefined;
    let timer: unknown;
    let finished = false;
    // Nested runs (agentTool) read the deadline and inspector from here (R5).
    const clearScope =
      agent.limits.timeoutMs !== null || options.inspect
        ? setScope(sessionId, {
            deadline: agent.limits.timeoutMs === null ? null : clock.now() + agent.limits.timeoutMs,
            ...(options.inspect ? { inspect: options.inspect } : {}),
          })
        : undefined;
    const onAbort = () => actor.send({ type: 'abort', reason: abortReason(options.signal) });

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
      if (bus.listening)
        bus.emit(agent.name, 'run_end', {
          status: runResult.status,
          stopReason: runResult.stopReason,
          iterationsUsed: runResult.iterationsUsed,
          toolCalls: runResult.toolCalls,
          usage: runResult.usage,
        });
      detachResources?.();
      unregisterRuntime(sessionId);
      resolve(runResult);
    };

    actor.subscribe({
      next: (snapshot: SnapshotFrom<AgentMachine>) => {
        lastContext = snapshot.context;
        // Phase events only matter to a listener (a plain run() has none). The compiled machine shares one state
        // value object per configuration: an unchanged value is no new phase.
        if (bus.listening && snapshot.value !== lastValue) {
          lastValue = snapshot.value;
          const [phase, state] = phaseOf(snapshot.value);
          const key = `${phase}.${state}`;
          if (key !== lastPhase) {
            lastPhase = key;
            bus.emit(agent.name, 'phase', {
              phase,
              state,
              step: snapshot.context.step,
              retryCount: snapshot.context.retryCount,
            });
          }
        }
        if (snapshot.status === 'done') finish(snapshot.output);
      },
      // Pitfall 17: a root actor without an error observer crashes the process. Ours turns it into a result.
      error: (error) => {
        stopOrphans(actor); // its effects actor would keep running (XState pitfall 2)
        finish(undefined, error);
      },
    });

    if (bus.listening)
      bus.emit(agent.name, 'run_start', {
        input: input as JsonValue,
        historyLength: callerHistory.length,
        model: agent.model.model,
        provider: agent.model.provider,
      });
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
export async function run<TOutput>(
  agent: Agent<TOutput>,
  input: RunInput,
  options: RunOptions = {},
): Promise<RunResult<TOutput>> {
  checkRunArguments(agent, input, options, 'run()');
  // Handoffs and fatal tools need a session supervisor; a plain agent keeps the one-actor hot path.
  if (agent?.kind === 'agent' && needsSession(agent as Agent<unknown>))
    return runInSession(agent, input, options).result;
  return startRun(agent, input, options).result;
}

/** A streaming run: iterate its events with `for await`, and await `result` for the outcome. */
export interface RunStream<TOutput> extends AsyncIterable<RunEvent> {
  readonly sessionId: string;
  readonly result: Promise<RunResult<TOutput>>;
  /** Reference 000's step view of the same stream: thoughts, tool calls and results in order, then the answer. */
  steps(): AsyncIterable<AgentStep>;
}

/** Reference 000's AgentStep: what step-by-step iteration yields. */
export type AgentStep =
  | { type: 'thinking'; agent: string; text: string }
  | { type: 'tool_call'; agent: string; id: string; name: string; args: JsonValue }
  | { type: 'tool_result'; agent: string; id: string; name: string; content: string; isError: boolean }
  | { type: 'final_response'; agent: string; text: string };

/**
 * Starts a run and returns its events as an AsyncIterable (from run_start to run_end), buffered from the start so
 * nothing is missed, plus the `result` promise. Throws at once for bad input, like `run` rejects.
 */
export function stream<TOutput>(
  agent: Agent<TOutput>,
  input: RunInput,
  options: RunOptions = {},
): RunStream<TOutput> {
  checkRunArguments(agent, input, options, 'stream()');
  if (agent?.kind === 'agent' && needsSession(agent as Agent<unknown>)) {
    const session = runInSession(agent, input, options);
    const events = session.events;
    return {
      sessionId: session.sessionId,
      result: session.result,
      [Symbol.asyncIterator]: () => events[Symbol.asyncIterator](),
      steps: () => stepsFrom(events, session.result),
    };
  }
  const queue = new AsyncQueue<RunEvent>();
  const started = startRun(agent, input, options, (bus) => {
    bus.subscribe((event) => {
      queue.push(event);
      if (event.type === 'run_end') queue.end();
    });
  });
  return {
    sessionId: started.sessionId,
    result: started.result,
    [Symbol.asyncIterator]: () => queue[Symbol.asyncIterator](),
    steps: () => stepsFrom(queue, started.result),
  };
}

async function* stepsFrom(
  events: AsyncIterable<RunEvent>,
  result: Promise<RunResult<unknown>>,
): AsyncIterable<AgentStep> {
  for await (const event of events) {
    if (event.type === 'model_response' && event.data.toolCalls > 0 && event.data.text !== '') {
      yield { type: 'thinking', agent: event.agent, text: event.data.text };
    } else if (event.type === 'tool_call') {
      yield {
        type: 'tool_call',
        agent: event.agent,
        id: event.data.id,
        name: event.data.function.name,
        args: event.data.args,
      };
    } else if (event.type === 'tool_response') {
      yield {
        type: 'tool_result',
        agent: event.agent,
        id: event.data.tool_call_id,
        name: event.data.name,
        content: event.data.content,
        isError: event.data.isError,
      };
    }
  }
  const final = await result;
  if (final.status === 'completed') yield { type: 'final_response', agent: final.agent, text: final.text };
}

/** Maps the machine's state value to the loop phase and the sub-state within it. */
function phaseOf(value: SnapshotFrom<AgentMachine>['value']): [Phase, string] {
  if (typeof value === 'string') return [value, value];
  const running = (value as { running?: unknown }).running;
  if (typeof running === 'string') return [running === 'finalOutput' ? 'finalOutput' : 'toolUse', running];
  const inner = running as Record<string, string>;
  if ('finalOutput' in inner) return ['finalOutput', inner.finalOutput ?? ''];
  return ['toolUse', inner.toolUse ?? ''];
}

function abortReason(signal: AbortSignal | undefined): string {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error && reason.name !== 'AbortError')
    return `the run was aborted: ${reason.message}`;
  if (typeof reason === 'string') return `the run was aborted: ${reason}`;
  return 'the run was aborted';
}

/** A machine that errored (a bug of ours) still yields an honest failed result with the transcript so far. */
function failedContext(output: AgentMachineOutput, error: unknown): AgentMachineOutput {
  const message = error instanceof Error ? error.message : String(error);
  return { ...output, stopReason: 'error', error: { name: 'InternalError', code: 'internal', message } };
}
