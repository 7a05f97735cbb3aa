import type { AnyActorRef, AnyActorScope, AnyStateMachine } from 'xstate';
import { AbortWaiters, stacklessError } from '../core/abort.ts';
import { toErrorInfo } from '../core/errors.ts';
import type { ModelResponse } from '../core/model.ts';
import type { Usage } from '../core/usage.ts';
import type { AgentContext, AgentEvent, EffectCommand } from '../machines/agent.ts';
import { callModelGuarded, checkGuardrailStage } from './guardrail-stage.ts';
import { checksAnswers, deliverModelCall, emitResponse, emitUsage, modelCall } from './model-gate.ts';
import { HistoryIds } from './normalize-response.ts';
import { emitFrom, type RunRuntime, runtimeOfAgent } from './run-runtime.ts';
import { approvalRequests, runTools } from './tool-gate.ts';

/** Where a running agent actor keeps its effects: on the actor itself, so they go when the actor goes. */
const instanceKey = Symbol('troupe.effects');
type WithInstance = { [instanceKey]?: EffectsInstance | undefined };

/** The machine members the effects wrap: XState's actor logic entry points. */
interface MachineLogic {
  start?(snapshot: unknown, scope: AnyActorScope): void;
  transition(snapshot: unknown, event: unknown, scope: AnyActorScope): { status: string };
}

/**
 * The agent machine with its effects: the machine emits `model.call`, `tools.run`, `guardrails.check` and
 * `approval.wait` commands (XState's `emit`), and each actor that runs it handles them itself, answering the first
 * three with exactly one event each. Every call gets an AbortSignal that is aborted when the agent's run ends (the
 * machine is done, was stopped, aborted or timed out), and that signal reaches the SDK or tool. The effects never
 * throw: failures become `model.error` / `effects.failed` events or error tool results.
 *
 * Inside a session the run is durable (`runtime.durable`): before a call starts, the state that decided it is
 * committed; when a call finishes, its answer is committed before the machine sees it; after a restart, calls that
 * had finished are answered from that journal and only the one that was in flight runs again.
 *
 * The work itself is done by the gates: one model call by the model gate (`model-gate.ts`), one batch of tool calls
 * by the tool gate (`tool-gate.ts`), guardrail checks and a model call with guardrails beside it by the guardrail
 * stage (`guardrail-stage.ts`). The effects receive the commands, commit before they start them, and answer.
 *
 * The machine stays what it is (the same states, context and emitted commands); the returned logic is the machine
 * itself with two entry points wrapped: `start` attaches the effects to the actor (its runtime is found on the
 * actor, or on its host by the agent's key; the actor's emit hands them each command), and `transition` closes them
 * when the machine stops being active. So a run is one actor, without an effects child with its own mailbox between
 * the machine and the gates.
 */
export function withEffects<TMachine extends AnyStateMachine>(machine: TMachine): TMachine {
  const base = machine as unknown as MachineLogic;
  const logic = Object.create(machine) as MachineLogic;
  logic.start = function start(snapshot, scope) {
    base.start?.call(this, snapshot, scope);
    if ((snapshot as { status: string }).status !== 'active') return;
    const self = scope.self as AnyActorRef & WithInstance;
    const key = (snapshot as { context: AgentContext }).context.config.sessionId;
    const instance = new EffectsInstance(key, runtimeOfAgent(self, key), scope);
    self[instanceKey] = instance;
    // The machine's commands reach the effects straight from the actor's emit (and then its listeners, if anyone
    // listens with `actor.on`): a listener of our own would cost every run a map and a set.
    scope.emit = instance.receiver as AnyActorScope['emit'];
  };
  logic.transition = function transition(snapshot, event, scope) {
    let next: { status: string };
    try {
      next = base.transition.call(this, snapshot, event, scope);
    } catch (error) {
      closeEffects(scope.self as WithInstance, undefined);
      throw error;
    }
    if (next.status !== 'active') closeEffects(scope.self as WithInstance, scope);
    return next;
  };
  return logic as unknown as TMachine;
}

/**
 * Ends the effects of an agent actor that failed (its in-flight calls are aborted); nothing when they ended already.
 */
export function endEffects(actor: AnyActorRef): void {
  closeEffects(actor as WithInstance, undefined);
}

/**
 * Closes an actor's effects once its machine stops being active: after the step's other actions (as a stopped
 * child would be), or at once when the step failed.
 */
function closeEffects(self: WithInstance, scope: AnyActorScope | undefined): void {
  const instance = self[instanceKey];
  if (!instance) return;
  self[instanceKey] = undefined;
  if (scope) scope.defer(() => instance.close());
  else instance.close();
}

/**
 * What the gates use of the effects that run them: their signal and abort waiters, their answer to the machine,
 * and the run's response bookkeeping (usage so far, the answer held back for the output guardrails).
 */
export interface EffectsHost {
  /** Aborted when the run ends (the machine is done or stopped: it ended, was aborted or timed out). */
  readonly signal: AbortSignal;
  /** Whether the run ended: nothing more reaches the machine. */
  readonly closed: boolean;
  /** What waits for the run's end (no listener on the signal needed): callbacks and listeners, removed on the way. */
  readonly abortWaiters: AbortWaiters;
  /** Answers the machine (sends the event to the agent's actor), unless the run ended meanwhile. */
  answer(event: AgentEvent): void;
  /** A durable write failed: the effect does not go on and the run fails with the store's error. */
  fail(error: unknown): void;
  /** A response the machine will get: added to the usage so far, shown in `usage` and `model_response` events. */
  accept(runtime: RunRuntime, step: number, response: ModelResponse): void;
  /** A held answer leaves: with its text once the output guardrails let it pass, without it otherwise. */
  releaseHeld(runtime: RunRuntime, passed: boolean): void;
}

/** The conversation length from which a run keeps its tool-call ids instead of scanning its history per call. */
const followedHistoryLength = 8;

/** One running agent's effects: its calls' abort controller, and the usage so far (for usage events). */
class EffectsInstance implements EffectsHost {
  // What every step reads or calls is a TypeScript-private member, not a `#` one: V8 reads a `#` field or calls a `#`
  // method through a keyed load of its private name, about twice the cost of a named load before it optimizes.
  readonly #controller = new AbortController();
  /**
   * The controller's signal, read once: Node makes it on first read behind a getter, and its `aborted` is a getter
   * that calls two functions. The gates read `closed` instead of `signal.aborted` (the same answer: only `close`
   * aborts the signal, right after it sets `closed`): in V8's baseline tiers each getter call costs more than the
   * rest of the check.
   */
  readonly signal: AbortSignal = this.#controller.signal;
  private readonly runtime: RunRuntime | undefined;
  /** The key of this agent's run (its machine's session id), for messages. */
  private readonly key: string;
  /** Whether the run ended (`close`): set only there, just before the signal aborts. */
  closed = false;
  /**
   * The usage so far, as numbers: a usage event shows it (a new object each time), and a run nothing listens to
   * makes no object per response for it.
   */
  private inputSoFar = 0;
  private outputSoFar = 0;
  private cachedSoFar = 0;
  private reasoningSoFar = 0;
  /** An answer waiting for the output guardrails' verdict before its model_response leaves. */
  private held: { step: number; response: ModelResponse } | undefined;
  /**
   * The tool-call ids of the run's conversation so far, for its plain model calls: made once the conversation is
   * long enough for a scan to cost more than what this keeps (a run waiting for its model holds it).
   */
  private historyIds: HistoryIds | undefined;

  /**
   * `scope`: the agent actor's scope (its `self` is the actor the effects answer), whose emit, read here before the
   * effects take its place, the listeners keep.
   */
  constructor(key: string, runtime: RunRuntime | undefined, scope: AnyActorScope) {
    this.key = key;
    this.runtime = runtime;
    this.scope = scope;
    this.toListeners = scope.emit;
  }

  private readonly scope: AnyActorScope;
  /**
   * The actor's own emit: hands an emitted event to whoever listens with `actor.on` (usually nobody). Called on the
   * scope, as the machine's actions call it: the engine's own actor's is a method of its scope, not a closure.
   */
  private readonly toListeners: AnyActorScope['emit'];

  /**
   * The agent actor's emit: each command its machine emits comes here, then goes to the actor's listeners. A throw
   * out of an emit is reported by XState as an uncaught error (the process would crash), so anything the gates did
   * not turn into an answer fails the run here.
   */
  readonly receiver = (command: EffectCommand): void => {
    try {
      this.receive(command);
    } catch (error) {
      this.answer({ type: 'effects.failed', error: toErrorInfo(error) });
    }
    this.toListeners.call(this.scope, command);
  };

  close(): void {
    this.closed = true;
    this.#controller.abort(stacklessError('The run ended before this call finished.'));
    this.abortWaiters.wakeAll();
  }

  /** Tool batches and guarded calls waiting for the run's end (it aborts its signal itself). */
  readonly abortWaiters = new AbortWaiters();

  answer(event: AgentEvent): void {
    if (!this.closed) this.scope.self.send(event);
  }

  /** The agent's context right now: the state that decided the command being handled. */
  private context(): AgentContext {
    return this.scope.self.getSnapshot().context as AgentContext;
  }

  fail(error: unknown): void {
    const info = toErrorInfo(error);
    const runtime = this.runtime;
    if (runtime && !this.closed)
      emitFrom(runtime, 'error', {
        message: `store: ${info.message}`,
        type: info.name,
        code: 'store_failed',
      });
    this.answer({ type: 'effects.failed', error: { ...info, code: 'store_failed' } });
  }

  receive(command: EffectCommand): void {
    const runtime = this.runtime;
    if (!runtime) {
      this.answer({
        type: 'model.error',
        error: { name: 'TroupeError', code: 'runtime_missing', message: `No runtime for run ${this.key}.` },
      });
      return;
    }
    if (command.type === 'model.call' || command.type === 'tools.run') {
      // The phase this command begins is reported before anything of it happens, on every entry point: a durable
      // run's commit below then takes its events along instead of a commit of their own. An answer held for the
      // output guardrails that the machine did not have checked leaves first, without its text.
      if (command.type === 'model.call') this.releaseHeld(runtime, false);
      runtime.phases?.reportPhase();
    }
    const durable = runtime.durable;
    if (durable) this.receiveDurable(runtime, command, durable);
    else this.start(runtime, command);
  }

  /**
   * A durable run's command: started once the state that decided it is committed. Apart from `receive`: the
   * callbacks here hold the runtime and command, and a function whose closures hold its variables makes a scope for
   * them at every call, whichever branch it takes (a plain run's two commands per step would make two).
   */
  private receiveDurable(
    runtime: RunRuntime,
    command: EffectCommand,
    durable: NonNullable<RunRuntime['durable']>,
  ): void {
    // Write-ahead: the state that decided this command is committed before anything it asks for starts. A guardrail
    // check decides nothing new to commit: the state that asked for it follows a committed effect (the run's start,
    // or a model call recorded in the journal), so after a crash the check simply runs again; only a run's start
    // held back to go with the agent's first checkpoint is committed first.
    let committed: void | Promise<void>;
    try {
      if (command.type === 'guardrails.check') committed = durable.commitPending?.();
      else if (command.type === 'approval.wait') {
        const requests = approvalRequests(runtime, command, this.context()).filter(
          (request) => !durable.isRequested(request.callId),
        );
        for (const request of requests) emitFrom(runtime, 'approval_requested', request);
        committed = durable.awaitPeople(requests, this.context());
      } else committed = durable.beforeEffect(command, this.context());
    } catch (error) {
      this.fail(error);
      return;
    }
    if (committed instanceof Promise)
      committed.then(
        () => {
          if (!this.closed) this.start(runtime, command);
        },
        (error: unknown) => this.fail(error),
      );
    else this.start(runtime, command);
  }

  private start(runtime: RunRuntime, command: EffectCommand): void {
    // A held answer the machine did not have checked (it failed to decode, say) leaves without its text.
    if (command.type === 'model.call') {
      this.releaseHeld(runtime, false);
      this.callModel(runtime, command);
    } else if (command.type === 'tools.run') runTools(this, runtime, command);
    else if (command.type === 'guardrails.check') checkGuardrailStage(this, runtime, command);
    // approval.wait: nothing to start; people's decisions come back as approval.decided events.
  }

  /**
   * A model call: answered from the journal when it had finished before a restart; with guardrails beside it, by
   * the guardrail stage; else straight through the model gate, its answer committed before the machine sees it.
   */
  private callModel(runtime: RunRuntime, command: Extract<EffectCommand, { type: 'model.call' }>): void {
    const durable = runtime.durable;
    const replayed = durable?.replayModel(command.call);
    if (replayed) {
      if (replayed.type === 'model.response') this.addUsage(replayed.response.usage);
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
    if (this.historyIds === undefined && command.history.length >= followedHistoryLength)
      this.historyIds = new HistoryIds();
    // A plain run answers in the same callback, one of its own; a durable one commits the response first.
    if (!durable) {
      this.plainCallStep = command.step;
      deliverModelCall(runtime, command, this.signal, this.historyIds, this.plainModelAnswered, this);
      return;
    }
    this.callModelDurable(runtime, command, durable);
  }

  /**
   * A durable run's model call: its response is committed before the machine sees it. Apart from `callModel` for
   * the reason `receiveDurable` is apart from `receive` (the callback holds the call's variables).
   */
  private callModelDurable(
    runtime: RunRuntime,
    command: Extract<EffectCommand, { type: 'model.call' }>,
    durable: NonNullable<RunRuntime['durable']>,
  ): void {
    const answered = modelCall(runtime, command, this.signal, undefined, this.historyIds, this);
    void answered.then(async (event) => {
      if (this.closed) return;
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

  /** The step of the plain model call in flight (a run has one at a time: the machine waits for its answer). */
  private plainCallStep = 0;

  /**
   * The answer of a plain model call: one function per run rather than a closure (and its scope) per call, which
   * a run waiting for its model would hold.
   */
  private readonly plainModelAnswered = (event: AgentEvent): void => {
    if (this.closed) return;
    if (event.type === 'model.response')
      this.accept(this.runtime as RunRuntime, this.plainCallStep, event.response);
    this.answer(event);
  };

  accept(runtime: RunRuntime, step: number, response: ModelResponse): void {
    this.addUsage(response.usage);
    if (!runtime.bus.listening) return;
    emitUsage(runtime, response.usage, {
      input: this.inputSoFar,
      output: this.outputSoFar,
      cached: this.cachedSoFar,
      reasoning: this.reasoningSoFar,
    });
    // An answer the output guardrails will check is held back until they have: its text leaves with their
    // verdict (see releaseHeld), never before.
    if (checksAnswers(runtime) && response.toolCalls.length === 0) this.held = { step, response };
    else emitResponse(runtime, step, response, true);
  }

  private addUsage(usage: Usage): void {
    this.inputSoFar += usage.input;
    this.outputSoFar += usage.output;
    this.cachedSoFar += usage.cached;
    this.reasoningSoFar += usage.reasoning;
  }

  releaseHeld(runtime: RunRuntime, passed: boolean): void {
    const held = this.held;
    if (!held) return;
    this.held = undefined;
    if (runtime.bus.listening) emitResponse(runtime, held.step, held.response, passed);
  }
}
