import type { ActorLogic, AnyActorRef, CallbackSnapshot } from 'xstate';
import { AbortWaiters, stacklessError } from '../core/abort.ts';
import { toErrorInfo } from '../core/errors.ts';
import type { ModelResponse } from '../core/model.ts';
import { addUsage, emptyUsage, type Usage } from '../core/usage.ts';
import { parentOf, relay } from '../engine/actor-links.ts';
import type { AgentContext, AgentEvent, EffectCommand } from '../machines/agent.ts';
import { callModelGuarded, checkGuardrailStage } from './guardrail-stage.ts';
import { checksAnswers, emitResponse, emitUsage, modelCall } from './model-gate.ts';
import { emitFrom, type RunRuntime, runtimeOfEffects } from './run-runtime.ts';
import { approvalRequests, runTools } from './tool-gate.ts';

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
 * The work itself is done by the gates: one model call by the model gate (`model-gate.ts`), one batch of tool calls
 * by the tool gate (`tool-gate.ts`), guardrail checks and a model call with guardrails beside it by the guardrail
 * stage (`guardrail-stage.ts`). This actor receives the commands, commits before it starts them, and answers.
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

/**
 * What the gates use of the effects actor that runs them: its signal and abort waiters, its answer to the machine,
 * and the run's response bookkeeping (usage so far, the answer held back for the output guardrails).
 */
export interface EffectsHost {
  /** Aborted when the actor stops (the run ended, was aborted or timed out). */
  readonly signal: AbortSignal;
  /** Whether the actor stopped: nothing more reaches the machine. */
  readonly closed: boolean;
  /** Calls `callback` when the actor stops; returns what removes it (no listener on the signal needed). */
  readonly whenAborted: (callback: () => void) => () => void;
  /** Answers the machine (what `sendBack` does), unless the actor stopped meanwhile. */
  answer(event: AgentEvent): void;
  /** A durable write failed: the effect does not go on and the run fails with the store's error. */
  fail(error: unknown): void;
  /** A response the machine will get: added to the usage so far, shown in `usage` and `model_response` events. */
  accept(runtime: RunRuntime, step: number, response: ModelResponse): void;
  /** A held answer leaves: with its text once the output guardrails let it pass, without it otherwise. */
  releaseHeld(runtime: RunRuntime, passed: boolean): void;
}

/** One running effects actor: its calls' abort controller, and the usage so far (for usage events). */
class EffectsInstance implements EffectsHost {
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

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get closed(): boolean {
    return this.#closed;
  }

  close(): void {
    this.#closed = true;
    this.#controller.abort(stacklessError('The run ended before this call finished.'));
    this.#abortWaiters.wakeAll();
  }

  /** Tool batches and guarded calls waiting for this actor's abort (it aborts its signal itself). */
  readonly #abortWaiters = new AbortWaiters();
  readonly whenAborted = (callback: () => void): (() => void) => this.#abortWaiters.add(callback);

  answer(event: AgentEvent): void {
    if (this.#closed) return;
    const { self, system } = this.#scope;
    const parent = parentOf(self);
    if (parent) relay(system, self, parent, event);
  }

  /** The agent's context right now: the state that decided the command being handled. */
  #context(): AgentContext {
    return (parentOf(this.#scope.self) as AnyActorRef).getSnapshot().context as AgentContext;
  }

  fail(error: unknown): void {
    const info = toErrorInfo(error);
    const runtime = this.#runtime;
    if (runtime && !this.#closed)
      emitFrom(runtime, 'error', {
        message: `store: ${info.message}`,
        type: info.name,
        code: 'store_failed',
      });
    this.answer({ type: 'effects.failed', error: { ...info, code: 'store_failed' } });
  }

  receive(command: EffectCommand): void {
    const runtime = this.#runtime;
    if (!runtime) {
      this.answer({
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
      this.fail(error);
      return;
    }
    if (committed instanceof Promise)
      committed.then(
        () => {
          if (!this.#closed) this.#start(runtime, command);
        },
        (error: unknown) => this.fail(error),
      );
    else this.#start(runtime, command);
  }

  #start(runtime: RunRuntime, command: EffectCommand): void {
    // A held answer the machine did not have checked (it failed to decode, say) leaves without its text.
    if (command.type === 'model.call') {
      this.releaseHeld(runtime, false);
      this.#callModel(runtime, command);
    } else if (command.type === 'tools.run') runTools(this, runtime, command);
    else if (command.type === 'guardrails.check') checkGuardrailStage(this, runtime, command);
    // approval.wait: nothing to start; people's decisions come back as approval.decided events.
  }

  /**
   * A model call: answered from the journal when it had finished before a restart; with guardrails beside it, by
   * the guardrail stage; else straight through the model gate, its answer committed before the machine sees it.
   */
  #callModel(runtime: RunRuntime, command: Extract<EffectCommand, { type: 'model.call' }>): void {
    const durable = runtime.durable;
    const replayed = durable?.replayModel(command.call);
    if (replayed) {
      if (replayed.type === 'model.response')
        this.#cumulative = addUsage(this.#cumulative, replayed.response.usage);
      this.answer(replayed);
      return;
    }
    const guardrails = runtime.agent.guardrails;
    if (
      guardrails &&
      ((command.checkInput && guardrails.parallelInput.length > 0) || guardrails.streamingOutput.length > 0)
    ) {
      callModelGuarded(this, runtime, command, guardrails);
      return;
    }
    const answered = modelCall(runtime, command, this.#controller.signal);
    // A plain run answers in the same callback; a durable one commits the response first.
    if (!durable) {
      void answered.then((event) => {
        if (this.#closed) return;
        if (event.type === 'model.response') this.accept(runtime, command.step, event.response);
        this.answer(event);
      });
      return;
    }
    void answered.then(async (event) => {
      if (this.#closed) return;
      if (event.type === 'model.response') {
        this.accept(runtime, command.step, event.response);
        try {
          await durable.recordModel(command.call, event);
        } catch (error) {
          this.fail(error);
          return;
        }
      }
      this.answer(event);
    });
  }

  accept(runtime: RunRuntime, step: number, response: ModelResponse): void {
    this.#cumulative = addUsage(this.#cumulative, response.usage);
    if (!runtime.bus.listening) return;
    emitUsage(runtime, response.usage, this.#cumulative);
    // An answer the output guardrails will check is held back until they have: its text leaves with their
    // verdict (see releaseHeld), never before.
    if (checksAnswers(runtime) && response.toolCalls.length === 0) this.#held = { step, response };
    else emitResponse(runtime, step, response, true);
  }

  releaseHeld(runtime: RunRuntime, passed: boolean): void {
    const held = this.#held;
    if (!held) return;
    this.#held = undefined;
    if (runtime.bus.listening) emitResponse(runtime, held.step, held.response, passed);
  }
}
