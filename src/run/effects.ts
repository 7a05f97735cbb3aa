import type { ActorLogic, AnyActorRef, CallbackSnapshot } from 'xstate';
import { decodeOutput } from '../agent/decode-output.ts';
import { AbortWaiters, stacklessError } from '../core/abort.ts';
import { ModelError, toErrorInfo } from '../core/errors.ts';
import type { Message } from '../core/messages.ts';
import type { ModelRequest } from '../core/model.ts';
import { addUsage, emptyUsage, totalTokens, type Usage } from '../core/usage.ts';
import type { AgentEvent, EffectCommand } from '../machines/agent.ts';
import { estimateRequest, resourcesOf } from '../resources/resource-binding.ts';
import type { Grant } from '../resources/resource-manager.ts';
import { normalizeResponse } from './normalize-response.ts';
import { reportFatal, takeNestedSteps } from './run-hooks.ts';
import { type RunRuntime, runtimeOf } from './run-runtime.ts';
import { secretKeysOf, toolCallEventData } from './secrets.ts';
import { runToolBatch } from './tool-runner.ts';

/** What the effects actor's snapshot holds: a callback actor's (status and input: serializable). */
export type EffectsSnapshot = CallbackSnapshot<{ sessionId: string }>;

/** The parts of an XState actor scope this logic uses (`_relay` and `_parent` are XState's own, untyped). */
interface EffectsScope {
  self: AnyActorRef & { _parent?: AnyActorRef };
  system: { _relay(source: AnyActorRef, target: AnyActorRef, event: AgentEvent): void };
}

/** Where a running effects actor keeps its state: on the actor itself, so it goes when the actor goes. */
const instanceKey = Symbol('troupe.effects');
type WithInstance = { [instanceKey]?: EffectsInstance };

/**
 * The agent machine's one long-lived effects actor (ARCHITECTURE rule 2 and 4): it takes `model.call` and
 * `tools.run` commands and answers each with exactly one event. Every call gets an AbortSignal that is aborted when
 * the machine stops this actor (the run ended, was aborted or timed out), and that signal reaches the SDK or tool.
 * It never throws: failures become `model.error` events or error tool results.
 *
 * It is XState actor logic written out (what `fromCallback` builds, without its per-actor WeakMap, receiver set and
 * closures: this actor is created for every run, and a run is a handful of events).
 */
export const effectsLogic: ActorLogic<EffectsSnapshot, EffectCommand, { sessionId: string }> = {
  start: (_snapshot, scope) => {
    const self = scope.self as WithInstance;
    self[instanceKey] = new EffectsInstance((_snapshot as EffectsSnapshot).input.sessionId, scope as never);
  },
  transition: (snapshot, event, scope) => {
    const instance = (scope.self as WithInstance)[instanceKey];
    if ((event as { type: string }).type === 'xstate.stop') {
      instance?.close();
      (scope.self as WithInstance)[instanceKey] = undefined;
      return { ...snapshot, status: 'stopped', output: undefined, error: undefined };
    }
    instance?.receive(event);
    return snapshot;
  },
  getInitialSnapshot: (_scope, input) => ({ status: 'active', output: undefined, error: undefined, input }),
  getPersistedSnapshot: (snapshot) => snapshot,
  restoreSnapshot: (snapshot) => snapshot as EffectsSnapshot,
};

/** One running effects actor: its calls' abort controller, and the usage so far (for usage events). */
class EffectsInstance {
  readonly #controller = new AbortController();
  readonly #runtime: RunRuntime | undefined;
  readonly #scope: EffectsScope;
  readonly #sessionId: string;
  #closed = false;
  #cumulative: Usage = emptyUsage;

  constructor(sessionId: string, scope: EffectsScope) {
    this.#sessionId = sessionId;
    this.#scope = scope;
    this.#runtime = runtimeOf(sessionId);
  }

  close(): void {
    this.#closed = true;
    this.#controller.abort(stacklessError('The run ended before this call finished.'));
    this.#abortWaiters.wakeAll();
  }

  /** Tool batches waiting for this actor's abort (it aborts its signal itself: no listener on the signal needed). */
  readonly #abortWaiters = new AbortWaiters();
  readonly #whenAborted = (callback: () => void): (() => void) => this.#abortWaiters.add(callback);

  /** Answers the machine (what `sendBack` does), unless this actor was stopped meanwhile. */
  #answer(event: AgentEvent): void {
    if (this.#closed) return;
    const { self, system } = this.#scope;
    if (self._parent) system._relay(self, self._parent, event);
  }

  receive(command: EffectCommand): void {
    const runtime = this.#runtime;
    if (!runtime) {
      this.#answer({
        type: 'model.error',
        error: {
          name: 'TroupeError',
          code: 'runtime_missing',
          message: `No runtime for session ${this.#sessionId}.`,
        },
      });
      return;
    }
    if (command.type === 'model.call') {
      void callModel(runtime, command, this.#controller.signal).then((event) => {
        if (event.type === 'model.response') {
          this.#cumulative = addUsage(this.#cumulative, event.response.usage);
          if (!this.#closed && runtime.bus.listening)
            emitUsage(runtime, event.response.usage, this.#cumulative);
        }
        this.#answer(event);
      });
    } else {
      const sessionId = this.#sessionId;
      void runToolBatch({
        calls: command.calls,
        registry: runtime.agent.tools,
        disabled: command.disabledTools,
        concurrency: runtime.agent.limits.toolConcurrency,
        timeoutMs: runtime.agent.limits.toolTimeoutMs,
        retries: runtime.agent.limits.toolRetries,
        sessionId,
        agent: runtime.agent.name,
        step: command.step,
        signal: this.#controller.signal,
        whenAborted: this.#whenAborted,
        clock: runtime.clock,
        onCall: (call) => {
          if (!runtime.bus.listening) return;
          // Listeners see secret arguments redacted; the tool itself got the real values.
          runtime.bus.emit(
            runtime.agent.name,
            'tool_call',
            toolCallEventData(call, secretKeysOf(runtime.agent)),
          );
        },
        onResult: (call, outcome, durationMs) => {
          // A failed `fatal: true` tool fails the agent actor: the session's supervisor decides (M4).
          if (outcome.isError && outcome.executed && runtime.agent.tools.find(call.name)?.fatal) {
            reportFatal(sessionId, { name: 'FatalToolError', code: 'tool_fatal', message: outcome.content });
          }
          if (!runtime.bus.listening) return;
          runtime.bus.emit(runtime.agent.name, 'tool_response', {
            tool_call_id: call.id,
            name: call.name,
            content_preview:
              outcome.content.length > 200 ? `${outcome.content.slice(0, 200)}…` : outcome.content,
            content: outcome.content,
            isError: outcome.isError,
            attempts: outcome.attempts,
            durationMs,
          });
        },
        onRetry: (call, attempt, error) =>
          runtime.bus.emit(runtime.agent.name, 'tool_retry', {
            tool_call_id: call.id,
            name: call.name,
            attempt,
            error,
          }),
      }).then((results) => {
        const nestedSteps = takeNestedSteps(sessionId);
        this.#answer(
          nestedSteps > 0 ? { type: 'tools.done', results, nestedSteps } : { type: 'tools.done', results },
        );
      });
    }
  }
}

async function callModel(
  runtime: RunRuntime,
  command: Extract<EffectCommand, { type: 'model.call' }>,
  signal: AbortSignal,
): Promise<AgentEvent> {
  const { agent, bus } = runtime;
  const messages: Message[] =
    agent.instructions === '' ? (command.history as Message[]) : [systemMessageOf(agent), ...command.history];
  const request: ModelRequest = {
    messages,
    tools: command.toolsEnabled ? agent.tools.specs(command.disabledTools) : [],
    settings: agent.settings,
    signal,
    onDelta: runtime.onDelta,
  };
  if (command.schemaEnabled && agent.outputSpec) request.output = agent.outputSpec;
  // R1-R6: a run with a resource manager reserves an estimate first; a denial stops the run (budget_exhausted).
  const resources = resourcesOf(bus.sessionId);
  let grant: Grant | undefined;
  if (resources) {
    const { provider, model } = agent.model;
    const outcome = await resources.reserve(
      { session: bus.sessionId, provider, model, estimate: estimateRequest(request) },
      signal,
    );
    if (signal.aborted) {
      if (outcome.granted) resources.release(outcome.grant);
      return abortedEvent();
    }
    if (!outcome.granted) {
      if (
        outcome.reason === 'budget_exhausted' ||
        outcome.reason === 'exceeds_quota' ||
        outcome.reason === 'unpriced_model'
      )
        return { type: 'model.denied', reason: outcome.reason, message: outcome.message };
      const info = { name: 'ResourceError', code: `resources_${outcome.reason}`, message: outcome.message };
      bus.emit(agent.name, 'error', { message: info.message, type: info.name, code: info.code });
      return { type: 'model.error', error: info };
    }
    grant = outcome.grant;
  }
  try {
    const response = normalizeResponse(await agent.model.generate(request), command.call);
    if (resources && grant) resources.settle(grant, response.usage);
    if (signal.aborted) return abortedEvent();
    if (bus.listening) {
      bus.emit(agent.name, 'model_response', {
        step: command.step,
        text: response.text,
        toolCalls: response.toolCalls.length,
        stopReason: response.stopReason ?? null,
        usage: response.usage,
      });
    }
    // Decode here, where the schema lives, so the machine only sees data (rule 1). In the tool-use phase only a
    // text answer is worth decoding; a valid one ends the run without the extra final-output call.
    const schema = agent.outputSchema;
    const wantsDecode = schema && (command.phase === 'finalOutput' || response.toolCalls.length === 0);
    return wantsDecode
      ? { type: 'model.response', response, decoded: decodeOutput(response.text, schema) }
      : { type: 'model.response', response };
  } catch (error) {
    if (resources && grant) {
      // The call's usage is unknown: its reservation goes back (exactly once; release after settle is a no-op).
      if (error instanceof ModelError && (error.kind === 'rate_limited' || error.status === 429)) {
        const rateLimit: { provider: string; model: string; retryAfterMs?: number } = {
          provider: agent.model.provider,
          model: agent.model.model,
        };
        if (error.retryAfterMs !== undefined) rateLimit.retryAfterMs = error.retryAfterMs;
        resources.report429(rateLimit);
      }
      resources.release(grant);
    }
    if (signal.aborted) return abortedEvent();
    const info = toErrorInfo(error);
    bus.emit(agent.name, 'error', { message: info.message, type: info.name, code: info.code });
    return { type: 'model.error', error: info };
  }
}

/** The system message of an agent's requests: one object per agent, not one per call (messages are never mutated). */
const systemMessages = new WeakMap<object, Message>();

function systemMessageOf(agent: RunRuntime['agent']): Message {
  let message = systemMessages.get(agent);
  if (!message) {
    message = { role: 'system', content: agent.instructions };
    systemMessages.set(agent, message);
  }
  return message;
}

/** Only reaches the machine if it is still listening, which it is not after an abort; kept for completeness. */
function abortedEvent(): AgentEvent {
  return {
    type: 'model.error',
    error: { name: 'AbortError', code: 'aborted', message: 'The model call was aborted.' },
  };
}

function emitUsage(runtime: RunRuntime, usage: Usage, cumulative: Usage): void {
  runtime.bus.emit(runtime.agent.name, 'usage', {
    prompt_tokens: usage.input,
    completion_tokens: usage.output,
    total_tokens: totalTokens(usage),
    usage,
    cumulative,
  });
}
