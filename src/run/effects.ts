import type { ActorLogic, AnyActorRef, CallbackSnapshot } from 'xstate';
import { decodeOutput } from '../agent/decode-output.ts';
import { AbortWaiters, stacklessError } from '../core/abort.ts';
import type { ApprovalRequest } from '../core/approvals.ts';
import { toErrorInfo } from '../core/errors.ts';
import type { GuardrailBlock } from '../core/guardrail-block.ts';
import { lastUserText, type Message, type ToolCall } from '../core/messages.ts';
import type { ModelDelta, ModelRequest, ModelResponse } from '../core/model.ts';
import { addUsage, emptyUsage, type Usage } from '../core/usage.ts';
import { parentOf, relay } from '../engine/actor-links.ts';
import type { AgentGuardrails } from '../guardrails/guardrail.ts';
import type { AgentContext, AgentEvent, EffectCommand, ToolOutcome } from '../machines/agent.ts';
import { hasCounts, type PiiCounts } from '../pii/pii-masker.ts';
import { maskMessages, piiOf, revealResponse } from '../pii/pii-run.ts';
import { denialError } from '../resources/denial-error.ts';
import { type ModelReservation, reserveModelCall } from '../resources/model-reservation.ts';
import { type ClassifiedCalls, classifyCalls, type DecidedOutcomes } from './approval-check.ts';
import { checkGuardrails, type GuardrailPlace } from './guardrail-checks.ts';
import { normalizeResponse } from './normalize-response.ts';
import { checkPermission } from './permission-check.ts';
import { contextInfoOf, emitFrom, type RunRuntime, runtimeOfEffects } from './run-runtime.ts';
import { redactArgs, secretKeysOf, streamedArgumentsGuard, toolCallEventData } from './secrets.ts';
import { StreamGate } from './stream-gate.ts';
import { runToolBatch, type ToolGuardrails } from './tool-runner.ts';

/** What the effects actor's snapshot holds: a callback actor's (status and input: serializable). */
export type EffectsSnapshot = CallbackSnapshot<{ sessionId: string }>;

/** The parts of an XState actor scope this logic uses. */
interface EffectsScope {
  self: AnyActorRef;
  system: unknown;
}

/** Where a running effects actor keeps its state: on the actor itself, so it goes when the actor goes. */
const instanceKey = Symbol('troupe.effects');
type WithInstance = { [instanceKey]?: EffectsInstance | undefined };

/**
 * The agent machine's one long-lived effects actor: it takes `model.call`, `tools.run` and `approval.wait`
 * commands and answers each of the first two with exactly one event. Every call gets an AbortSignal that is aborted
 * when the machine stops this actor (the run ended, was aborted or timed out), and that signal reaches the SDK or
 * tool. It never throws: failures become `model.error` / `effects.failed` events or error tool results.
 *
 * Inside a session the run is durable (`runtime.durable`): before a call starts, the state that decided it is
 * committed; when a call finishes, its answer is committed before the machine sees it; after a restart, calls that
 * had finished are answered from that journal and only the one that was in flight runs again.
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
  /** The key of this agent's run (its machine's session id), for messages. */
  readonly #key: string;
  #closed = false;
  #cumulative: Usage = emptyUsage;
  /** An answer waiting for the output guardrails' verdict before its model_response leaves. */
  #held: { step: number; response: ModelResponse } | undefined;

  constructor(key: string, scope: EffectsScope) {
    this.#key = key;
    this.#scope = scope;
    this.#runtime = runtimeOfEffects(scope.self, key);
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
    const parent = parentOf(self);
    if (parent) relay(system, self, parent, event);
  }

  /** The agent's context right now: the state that decided the command being handled. */
  #context(): AgentContext {
    return (parentOf(this.#scope.self) as AnyActorRef).getSnapshot().context as AgentContext;
  }

  /** A durable write failed: the effect does not start and the run fails with the store's error. */
  #fail(error: unknown): void {
    const info = toErrorInfo(error);
    const runtime = this.#runtime;
    if (runtime && !this.#closed)
      emitFrom(runtime, 'error', {
        message: `store: ${info.message}`,
        type: info.name,
        code: 'store_failed',
      });
    this.#answer({ type: 'effects.failed', error: { ...info, code: 'store_failed' } });
  }

  receive(command: EffectCommand): void {
    const runtime = this.#runtime;
    if (!runtime) {
      this.#answer({
        type: 'model.error',
        error: { name: 'TroupeError', code: 'runtime_missing', message: `No runtime for run ${this.#key}.` },
      });
      return;
    }
    const durable = runtime.durable;
    // A guardrail check decides nothing new to commit: the state that asked for it follows a committed effect (the
    // run's start, or a model call recorded in the journal), so after a crash the check simply runs again.
    if (!durable || command.type === 'guardrails.check') {
      this.#start(runtime, command);
      return;
    }
    // Write-ahead: the state that decided this command is committed before anything it asks for starts.
    let committed: void | Promise<void>;
    try {
      if (command.type === 'approval.wait') {
        const requests = approvalRequests(runtime, command, this.#context()).filter(
          (request) => !durable.isRequested(request.callId),
        );
        for (const request of requests) emitFrom(runtime, 'approval_requested', request);
        committed = durable.awaitPeople(requests, this.#context());
      } else committed = durable.beforeEffect(command, this.#context());
    } catch (error) {
      this.#fail(error);
      return;
    }
    if (committed instanceof Promise)
      committed.then(
        () => {
          if (!this.#closed) this.#start(runtime, command);
        },
        (error: unknown) => this.#fail(error),
      );
    else this.#start(runtime, command);
  }

  #start(runtime: RunRuntime, command: EffectCommand): void {
    // A held answer the machine did not have checked (it failed to decode, say) leaves without its text.
    if (command.type === 'model.call') {
      this.#releaseHeld(runtime, false);
      this.#callModel(runtime, command);
    } else if (command.type === 'tools.run') void this.#runTools(runtime, command);
    else if (command.type === 'guardrails.check') this.#checkGuardrails(runtime, command);
    // approval.wait: nothing to start; people's decisions come back as approval.decided events.
  }

  #callModel(runtime: RunRuntime, command: Extract<EffectCommand, { type: 'model.call' }>): void {
    const durable = runtime.durable;
    const replayed = durable?.replayModel(command.call);
    if (replayed) {
      if (replayed.type === 'model.response')
        this.#cumulative = addUsage(this.#cumulative, replayed.response.usage);
      this.#answer(replayed);
      return;
    }
    const guardrails = runtime.agent.guardrails;
    if (
      guardrails &&
      ((command.checkInput && guardrails.parallelInput.length > 0) || guardrails.streamingOutput.length > 0)
    ) {
      this.#callModelGuarded(runtime, command, guardrails);
      return;
    }
    const signal = this.#controller.signal;
    const called = runtime.runEffect
      ? runtime.runEffect(`${runtime.route ?? runtime.agent.name}/model/${command.call}`, 'model', () =>
          callModel(runtime, command, signal),
        )
      : callModel(runtime, command, signal);
    void called.then(async (event) => {
      if (this.#closed) return;
      if (event.type === 'model.response') {
        this.#cumulative = addUsage(this.#cumulative, event.response.usage);
        if (runtime.bus.listening) {
          emitUsage(runtime, event.response.usage, this.#cumulative);
          this.#showResponse(runtime, command.step, event.response);
        }
        if (durable) {
          try {
            await durable.recordModel(command.call, event);
          } catch (error) {
            this.#fail(error);
            return;
          }
        }
      }
      this.#answer(event);
    });
  }

  /**
   * The `model_response` event of a response. An answer the output guardrails will check is held back until they
   * have: its text leaves with their verdict (see #releaseHeld), never before.
   */
  #showResponse(runtime: RunRuntime, step: number, response: ModelResponse): void {
    if (checksAnswers(runtime) && response.toolCalls.length === 0) {
      this.#held = { step, response };
      return;
    }
    emitResponse(runtime, step, response, true);
  }

  /** A held answer leaves: with its text once the output guardrails let it pass, without it otherwise. */
  #releaseHeld(runtime: RunRuntime, passed: boolean): void {
    const held = this.#held;
    if (!held) return;
    this.#held = undefined;
    if (runtime.bus.listening) emitResponse(runtime, held.step, held.response, passed);
  }

  /** Where this run's guardrails check: for their info, their events and their timers. */
  #guardrailPlace(runtime: RunRuntime, stage: GuardrailPlace['stage']): GuardrailPlace {
    return {
      stage,
      run: contextInfoOf(runtime),
      caller: runtime,
      clock: runtime.clock,
      emit: runtime.bus.listening ? (data) => emitFrom(runtime, 'guardrail', data) : undefined,
    };
  }

  /** The input or output guardrails of a `guardrails.check`: answered by one `guardrails.done`. */
  #checkGuardrails(runtime: RunRuntime, command: Extract<EffectCommand, { type: 'guardrails.check' }>): void {
    const guardrails = runtime.agent.guardrails;
    const list = (command.stage === 'input' ? guardrails?.input : guardrails?.output) ?? [];
    const place = this.#guardrailPlace(runtime, command.stage);
    const check = () => checkGuardrails(list, command.value, command.text, place, this.#controller.signal);
    // The answer these output checks cover leaves with their verdict.
    const answer = (block: GuardrailBlock | null) => {
      if (command.stage === 'output') this.#releaseHeld(runtime, block === null);
      this.#answer(doneEvent(block));
    };
    // A durable executor records the decision, so a replay decides the same way (a judge model may not).
    const outcome = runtime.runEffect
      ? runtime.runEffect(
          `${runtime.route ?? runtime.agent.name}/guardrails/${command.stage}/${command.call}`,
          'tool',
          async () => check(),
        )
      : check();
    if (outcome instanceof Promise)
      void outcome.then(answer, (error: unknown) =>
        // The executor could not run or record the check: fail closed, as for a check that failed.
        answer({
          name: list[0]?.name ?? 'guardrails',
          stage: command.stage,
          message: `the check could not be run: ${error instanceof Error ? error.message : String(error)}`,
        }),
      );
    else answer(outcome);
  }

  /**
   * A model call with guardrails beside it: the parallel input guardrails (first call only) and the streaming output
   * guardrails. The call gets its own AbortSignal (also aborted when the run ends); a block aborts it and answers
   * `guardrail.blocked` instead of the response. A response is answered only once the input checks passed.
   */
  #callModelGuarded(
    runtime: RunRuntime,
    command: Extract<EffectCommand, { type: 'model.call' }>,
    guardrails: AgentGuardrails,
  ): void {
    const durable = runtime.durable;
    const controller = new AbortController();
    const stopWaiting = this.#abortWaiters.add(() => controller.abort(this.#controller.signal.reason));
    const signal = controller.signal;
    let settled = false;
    let modelCalled = false;
    const settle = (event: AgentEvent) => {
      if (settled) return;
      settled = true;
      stopWaiting();
      this.#answer(event);
    };
    const block = (found: GuardrailBlock, usage?: Usage) => {
      if (settled) return;
      controller.abort(stacklessError(`Guardrail "${found.name}" blocked this call.`));
      const event: AgentEvent = { type: 'guardrail.blocked', block: found, modelCalled };
      if (usage) event.usage = usage;
      settle(event);
    };
    // Parallel input guardrails first: when they answer at once, a block means the model is never asked.
    let input: GuardrailBlock | null | Promise<GuardrailBlock | null> = null;
    if (command.checkInput && guardrails.parallelInput.length > 0) {
      const text = lastUserText(command.history);
      input = checkGuardrails(
        guardrails.parallelInput,
        text,
        text,
        this.#guardrailPlace(runtime, 'input'),
        signal,
      );
      if (input instanceof Promise) input.then((found) => found && block(found));
      else if (input) {
        block(input);
        return;
      }
    }
    let gate: StreamGate | undefined;
    if (guardrails.streamingOutput.length > 0) {
      const place = this.#guardrailPlace(runtime, 'output');
      gate = new StreamGate(
        (text, partial) =>
          checkGuardrails(guardrails.streamingOutput, text, text, { ...place, partial }, signal),
        (delta) => {
          if (!signal.aborted) runtime.onDelta(delta);
        },
        (found) => block(found),
      );
    }
    const hooks: CallHooks = { onGenerate: () => (modelCalled = true) };
    if (gate) hooks.textGate = (delta) => gate.push(delta);
    const called = runtime.runEffect
      ? runtime.runEffect(`${runtime.route ?? runtime.agent.name}/model/${command.call}`, 'model', () =>
          callModel(runtime, command, signal, hooks),
        )
      : callModel(runtime, command, signal, hooks);
    void called.then(async (event) => {
      if (settled || this.#closed) return;
      const usage = event.type === 'model.response' ? event.response.usage : undefined;
      // A blocked response leaves no text: its model_response says what was spent, never what was said.
      const withheld = () => {
        if (event.type === 'model.response' && runtime.bus.listening)
          emitResponse(runtime, command.step, event.response, false);
      };
      if (gate && event.type === 'model.response') {
        const found = await gate.finish(answerText(event.response));
        if (found) {
          withheld();
          block(found, usage);
          return;
        }
      }
      // The input checks decide before the response (or the failure) is let through.
      const inputBlock = await input;
      if (inputBlock) {
        withheld();
        block(inputBlock, usage);
        return;
      }
      if (settled || this.#closed) return;
      if (event.type === 'model.response') {
        this.#cumulative = addUsage(this.#cumulative, event.response.usage);
        if (runtime.bus.listening) {
          emitUsage(runtime, event.response.usage, this.#cumulative);
          this.#showResponse(runtime, command.step, event.response);
        }
        if (durable) {
          try {
            await durable.recordModel(command.call, event);
          } catch (error) {
            settled = true;
            stopWaiting();
            this.#fail(error);
            return;
          }
        }
      }
      settle(event);
    });
  }

  #runTools(runtime: RunRuntime, command: Extract<EffectCommand, { type: 'tools.run' }>): void {
    const durable = runtime.durable;
    const where: BatchPlace = {
      sessionId: runtime.sessionId ?? runtime.bus.sessionId,
      route: runtime.route ?? runtime.agent.name,
      turn: runtime.turn ?? 1,
      step: command.step,
    };
    // Calls people decided on are answered from the decision; undecided calls that need a person wait.
    const classified = classifyCalls(runtime.agent.tools, command.calls, command.decisions, {
      ...where,
      agent: runtime.agent.name,
      context: runtime.context,
      replayed: (call) => durable?.replayTool(command.step, call.id),
      permit: runtime.agent.permissions ? (call) => checkPermission(runtime, call) : undefined,
    });
    if (classified instanceof Promise)
      void classified.then((sorted) => this.#runBatch(runtime, command, where, sorted));
    else this.#runBatch(runtime, command, where, classified);
  }

  #runBatch(
    runtime: RunRuntime,
    command: Extract<EffectCommand, { type: 'tools.run' }>,
    where: BatchPlace,
    classified: ClassifiedCalls,
  ): void {
    const durable = runtime.durable;
    const signal = this.#controller.signal;
    if (this.#closed) return;
    for (const verdict of classified.permissions) emitFrom(runtime, 'permission', verdict);
    emitDecided(runtime, classified.decided);
    void runToolBatch({
      calls: classified.runnable,
      checked: classified.checked,
      registry: runtime.agent.tools,
      disabled: command.disabledTools,
      concurrency: runtime.agent.limits.toolConcurrency,
      timeoutMs: runtime.agent.limits.toolTimeoutMs,
      maxRetries: runtime.agent.limits.maxToolRetries,
      ...where,
      callPath: runtime.callPath ?? '',
      caller: runtime,
      agent: runtime.agent.name,
      context: runtime.context,
      signal,
      whenAborted: this.#whenAborted,
      clock: runtime.clock,
      ...(runtime.runEffect ? { executor: runtime.runEffect } : {}),
      ...(runtime.agent.guardrails
        ? toolGuardrailsOf(runtime.agent.guardrails, (stage) => this.#guardrailPlace(runtime, stage), signal)
        : {}),
      known: (call) => classified.decided.get(call.id) ?? durable?.replayTool(command.step, call.id),
      onStart: (call) => {
        // Listeners see secret arguments redacted; the tool itself gets the real values.
        if (runtime.bus.listening)
          emitFrom(runtime, 'tool_call', toolCallEventData(call, secretKeysOf(runtime.agent)));
      },
      onSettled: (call, outcome, durationMs) => {
        // A failed `fatal: true` tool fails the agent actor: the session's supervisor decides. Its outcome is not
        // recorded, so a restart runs it again.
        const fatal = outcome.isError && outcome.executed && runtime.agent.tools.find(call.name)?.fatal;
        if (fatal)
          runtime.onFatal?.({ name: 'FatalToolError', code: 'tool_fatal', message: outcome.content });
        if (runtime.bus.listening) emitToolResponse(runtime, call, outcome, durationMs);
        if (!durable || fatal || signal.aborted) return;
        try {
          return durable.recordTool(command.step, call.id, outcome);
        } catch (error) {
          this.#fail(error);
        }
      },
      onBreaker: (change) => {
        if (runtime.bus.listening) emitFrom(runtime, 'breaker', change);
      },
      onRetry: (call, attempt, error) =>
        emitFrom(runtime, 'tool_retry', {
          callId: call.id,
          name: call.name,
          attempt,
          error,
        }),
    }).then((results) => {
      const nestedSteps = runtime.nestedSteps;
      runtime.nestedSteps = 0;
      const event: Extract<AgentEvent, { type: 'tools.done' }> = { type: 'tools.done', results };
      if (nestedSteps > 0) event.nestedSteps = nestedSteps;
      if (classified.pending.length > 0) event.pending = classified.pending;
      this.#answer(event);
    });
  }
}

/** Where a batch of tool calls sits: what its calls' contexts and idempotency keys are made of. */
interface BatchPlace {
  sessionId: string;
  route: string;
  turn: number;
  step: number;
}

/** The requests of an `approval.wait` command, for the store and the events. */
function approvalRequests(
  runtime: RunRuntime,
  command: Extract<EffectCommand, { type: 'approval.wait' }>,
  context: AgentContext,
): ApprovalRequest[] {
  const byId = new Map<string, ToolCall>(command.calls.map((call) => [call.id, call]));
  const requestedAt = runtime.clock.now();
  const sessionId = runtime.sessionId ?? runtime.bus.sessionId;
  const route = runtime.route ?? runtime.agent.name;
  const decided = new Set((context.approvals?.decided ?? []).map((entry) => entry.callId));
  const requests: ApprovalRequest[] = [];
  for (const pending of command.pending) {
    const call = byId.get(pending.callId);
    if (!call || decided.has(pending.callId)) continue;
    const request: ApprovalRequest = {
      sessionId,
      callId: call.id,
      agent: runtime.agent.name,
      route,
      tool: call.name,
      args: redactArgs(call.args, secretKeysOf(runtime.agent)),
      kind: pending.kind,
      requestedAt,
    };
    if (pending.kind === 'question') request.question = questionOf(call);
    requests.push(request);
  }
  return requests;
}

function questionOf(call: ToolCall): string {
  const args = call.args;
  if (typeof args === 'object' && args !== null && !Array.isArray(args) && Object.hasOwn(args, 'question')) {
    const question = args.question;
    if (typeof question === 'string') return question;
  }
  return JSON.stringify(args);
}

/** Answers people gave (rejections, answers to questions) appear in the stream like any tool result. */
function emitDecided(runtime: RunRuntime, decided: DecidedOutcomes): void {
  if (!runtime.bus.listening) return;
  for (const outcome of decided.values()) {
    emitFrom(runtime, 'tool_response', {
      callId: outcome.callId,
      name: outcome.name,
      contentPreview: preview(outcome.content),
      content: outcome.content,
      isError: outcome.isError,
      attempts: outcome.attempts,
      durationMs: 0,
    });
  }
}

function emitToolResponse(
  runtime: RunRuntime,
  call: ToolCall,
  outcome: ToolOutcome,
  durationMs: number,
): void {
  emitFrom(runtime, 'tool_response', {
    callId: call.id,
    name: call.name,
    contentPreview: preview(outcome.content),
    content: outcome.content,
    isError: outcome.isError,
    attempts: outcome.attempts,
    durationMs,
  });
}

function preview(content: string): string {
  return content.length > 200 ? `${content.slice(0, 200)}…` : content;
}

/** The tool guardrails of a batch, checked with the run's signal; none when the agent has no tool guardrails. */
function toolGuardrailsOf(
  guardrails: AgentGuardrails,
  placeOf: (stage: GuardrailPlace['stage']) => GuardrailPlace,
  signal: AbortSignal,
): { guardrails?: ToolGuardrails } {
  if (guardrails.toolInput.length === 0 && guardrails.toolOutput.length === 0) return {};
  return {
    guardrails: {
      input: guardrails.toolInput,
      output: guardrails.toolOutput,
      check: (list, stage, value, text, call) =>
        checkGuardrails(list, value, text, { ...placeOf(stage), tool: call.name, callId: call.id }, signal),
    },
  };
}

/** The answer to a `guardrails.check`. */
function doneEvent(block: GuardrailBlock | null): AgentEvent {
  return block ? { type: 'guardrails.done', blocked: block } : { type: 'guardrails.done' };
}

/** What a guarded model call adds: text deltas through a gate, and word of the moment the model is asked. */
interface CallHooks {
  textGate?: (delta: Extract<ModelDelta, { type: 'text' }>) => void;
  onGenerate?: () => void;
}

async function callModel(
  runtime: RunRuntime,
  command: Extract<EffectCommand, { type: 'model.call' }>,
  signal: AbortSignal,
  hooks?: CallHooks,
): Promise<AgentEvent> {
  const { agent, bus } = runtime;
  let system: Message | undefined;
  try {
    // Fixed instructions stay synchronous: no extra microtask per model call.
    const built = systemMessageOf(runtime);
    system = built instanceof Promise ? await built : built;
  } catch (error) {
    // The user's instruction function failed: the run fails with its error, before anything is spent.
    const info = toErrorInfo(error);
    const failure = { ...info, code: 'instructions_failed', message: `instructions: ${info.message}` };
    emitFrom(runtime, 'error', { message: failure.message, type: failure.name, code: failure.code });
    return { type: 'model.error', error: failure };
  }
  if (signal.aborted) return abortedEvent();
  let messages: Message[] =
    system === undefined ? (command.history as Message[]) : [system, ...command.history];
  // With model masking the provider sees placeholders; what it writes back is revealed below.
  const pii = piiOf(bus);
  const maskForModel = pii?.options.model ? pii : undefined;
  if (maskForModel) {
    const counts: PiiCounts = {};
    messages = maskMessages(maskForModel, messages, counts);
    if (hasCounts(counts) && bus.listening) emitFrom(runtime, 'redaction', { target: 'model', counts });
  }
  // Tools listed at run time (MCP servers) are brought up to date first; a source that stays unreachable fails
  // the run with its error rather than letting the model answer without tools it was given.
  const preparing = agent.tools.prepare({
    sessionId: runtime.sessionId ?? bus.sessionId,
    signal,
    context: runtime.context,
    hold: runtime.holdings?.hold,
  });
  if (preparing) {
    try {
      await preparing;
    } catch (error) {
      if (signal.aborted) return abortedEvent();
      const info = toErrorInfo(error);
      emitFrom(runtime, 'error', { message: info.message, type: info.name, code: info.code });
      return { type: 'model.error', error: info };
    }
  }
  const onDelta = runtime.onDelta;
  const holdsText = checksAnswers(runtime);
  let guard: ((index: number, text: string) => string) | undefined;
  const textGate = hooks?.textGate;
  const request: ModelRequest = {
    messages,
    tools: command.toolsEnabled ? agent.tools.specs(command.disabledTools) : [],
    settings: agent.settings,
    signal,
    // A provider may still deliver a delta after the call was aborted: it must not follow the run's end. Streamed
    // tool arguments stop showing once a secret key appears in them.
    onDelta: (delta) => {
      if (signal.aborted) return;
      if (textGate && delta.type === 'text') return textGate(delta);
      // Text the output guardrails will check whole does not stream: it leaves with their verdict.
      if (holdsText && delta.type === 'text') return;
      if (delta.type !== 'tool_call' || !bus.listening) return onDelta(delta);
      guard ??= streamedArgumentsGuard(secretKeysOf(agent));
      const shown = guard(delta.index, delta.argsDelta);
      if (shown === delta.argsDelta) onDelta(delta);
      else if (shown !== '' || delta.id !== undefined || delta.name !== undefined)
        onDelta({ ...delta, argsDelta: shown });
    },
  };
  // A circuit breaker the call goes through reports its changes of state on this run's bus.
  request.onBreaker = (change) => {
    if (bus.listening && !signal.aborted) emitFrom(runtime, 'breaker', change);
  };
  if (command.schemaEnabled && agent.outputSpec) request.output = agent.outputSpec;
  // A run with a resource manager reserves an estimate first; a spent budget stops the run (budget_exhausted).
  // The budget scope the call draws on: a turn with its own budget, else the run (or session).
  const scope = runtime.resourceScope?.() ?? bus.sessionId;
  const resources = runtime.resources;
  let reservation: Extract<ModelReservation, { granted: true }> | undefined;
  let sent = request;
  if (resources) {
    const outcome = await reserveModelCall(resources, scope, request, agent.model, signal);
    if (signal.aborted) return abortedEvent();
    if (!outcome.granted) {
      const denial = outcome.denial;
      if (denial.reason === 'budget_exhausted')
        return { type: 'model.denied', reason: denial.reason, message: denial.message };
      // Not a spent budget (a call larger than a quota, an unpriced model): the run fails with an error naming it.
      const info = denialError(denial);
      emitFrom(runtime, 'error', { message: info.message, type: info.name, code: info.code });
      return { type: 'model.error', error: info };
    }
    reservation = outcome;
    // Under a budget the call may write no more than its budgets have left (the request carries that cap).
    sent = outcome.request;
  }
  try {
    hooks?.onGenerate?.();
    const answer = await agent.model.generate(sent);
    const response = normalizeResponse(
      maskForModel ? revealResponse(maskForModel, answer) : answer,
      command.call,
      command.history,
    );
    reservation?.settle(response.usage);
    if (signal.aborted) return abortedEvent();
    // Decode here, where the schema lives, so the machine only sees data. In the tool-use phase only a text answer
    // is worth decoding; a valid one ends the run without the extra final-output call.
    const schema = agent.outputSchema;
    const wantsDecode = schema && (command.phase === 'finalOutput' || response.toolCalls.length === 0);
    return wantsDecode
      ? { type: 'model.response', response, decoded: decodeOutput(response.text, schema) }
      : { type: 'model.response', response };
  } catch (error) {
    // The call's usage is unknown: its reservation goes back (exactly once; release after settle is a no-op).
    reservation?.fail(error);
    if (signal.aborted) return abortedEvent();
    const info = toErrorInfo(error);
    emitFrom(runtime, 'error', { message: info.message, type: info.name, code: info.code });
    return { type: 'model.error', error: info };
  }
}

/** The system message of an agent's requests: one object per agent, not one per call (messages are never mutated). */
const systemMessages = new WeakMap<object, Message>();

/**
 * The system message of a request: fixed instructions give one cached message per agent; an instruction function is
 * called before each model call with the run context, so a turn with another context gets its own prompt.
 */
function systemMessageOf(runtime: RunRuntime): Message | undefined | Promise<Message | undefined> {
  const { agent } = runtime;
  const instructions = agent.instructions;
  if (typeof instructions === 'function') {
    const built = instructions(contextInfoOf(runtime));
    const toMessage = (content: string): Message | undefined => {
      if (typeof content !== 'string')
        throw new TypeError(`the instruction function of "${agent.name}" must return a string.`);
      return content === '' ? undefined : { role: 'system', content };
    };
    return built instanceof Promise ? built.then(toMessage) : toMessage(built);
  }
  if (instructions === '') return undefined;
  let message = systemMessages.get(agent);
  if (!message) {
    message = { role: 'system', content: instructions };
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
  emitFrom(runtime, 'usage', {
    usage,
    cumulative,
  });
}

/** Whether the agent's answers wait for its output guardrails (the ones that check the whole answer). */
function checksAnswers(runtime: RunRuntime): boolean {
  const guardrails = runtime.agent.guardrails;
  return guardrails !== undefined && guardrails.output.length > 0;
}

/** The text an answer shows the caller: a refusal usually comes without text, and then it is the refusal. */
function answerText(response: ModelResponse): string {
  return response.text === '' && response.refusal !== undefined ? response.refusal : response.text;
}

/** The `model_response` event; `withText` false leaves the text (and any refusal) out. */
function emitResponse(runtime: RunRuntime, step: number, response: ModelResponse, withText: boolean): void {
  emitFrom(runtime, 'model_response', {
    step,
    text: withText ? response.text : '',
    toolCallCount: response.toolCalls.length,
    stopReason: response.stopReason ?? null,
    usage: response.usage,
  });
}
