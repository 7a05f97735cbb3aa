import { decodeOutput } from '../agent/decode-output.ts';
import { toErrorInfo } from '../core/errors.ts';
import type { RunEventData } from '../core/events.ts';
import type { Message } from '../core/messages.ts';
import type { ModelDelta, ModelRequest, ModelResponse } from '../core/model.ts';
import type { Usage } from '../core/usage.ts';
import type { AgentEvent, EffectCommand } from '../machines/agent.ts';
import { hasCounts, type PiiCounts } from '../pii/pii-masker.ts';
import { maskMessages, type PiiRun, piiOf, revealResponse } from '../pii/pii-run.ts';
import { denialError } from '../resources/denial-error.ts';
import {
  type ModelReservation,
  outputCapOf,
  reserveCall,
  reserveModelCall,
} from '../resources/model-reservation.ts';
import type { ReservationOutcome, ResourceManager } from '../resources/resource-manager.ts';
import { HeldGrant } from './held-grant.ts';
import { type HistoryIds, normalizeResponse } from './normalize-response.ts';
import { hasEnded, type RunEnd } from './run-end.ts';
import { contextInfoOf, emitFrom, type RunRuntime } from './run-runtime.ts';
import { secretKeysOf, streamedArgumentsGuard } from './secrets.ts';

/**
 * The model gate: one model call end to end. The agent's instructions become the system message, personal data is
 * masked for the model (and revealed in its answer), tools listed at run time are brought up to date, the budget
 * reserves the call and caps its output, the provider is asked (through the breaker it may have), and its answer is
 * normalized and decoded into the one event the agent machine gets.
 */

type ModelCallCommand = Extract<EffectCommand, { type: 'model.call' }>;

/** What a guarded model call adds: text deltas through a gate, and word of the moment the model is asked. */
export interface CallHooks {
  textGate?: (delta: Extract<ModelDelta, { type: 'text' }>) => void;
  onGenerate?: () => void;
}

/**
 * A plain run's model call without hooks, its event handed to `deliver` (once): the usual call answers through
 * one promise of its own, where `modelCall(...).then(deliver)` would add a second promise and its reaction, which a
 * run waiting for its model holds, and a microtask per call.
 */
export function deliverModelCall(
  runtime: RunRuntime,
  command: ModelCallCommand,
  signal: AbortSignal,
  historyIds: HistoryIds | undefined,
  deliver: (event: AgentEvent) => void,
  end?: RunEnd,
): void {
  const answered = runtime.runEffect
    ? modelCall(runtime, command, signal, undefined, historyIds, end)
    : callModel(runtime, command, signal, undefined, historyIds, end, deliver);
  if (answered !== undefined) void answered.then(deliver);
}

/**
 * A model call, through the run's durable executor when it has one (which records its answer). `end`, when given,
 * says whether `signal` is aborted (see `RunEnd`).
 */
export function modelCall(
  runtime: RunRuntime,
  command: ModelCallCommand,
  signal: AbortSignal,
  hooks?: CallHooks,
  historyIds?: HistoryIds,
  end?: RunEnd,
): Promise<AgentEvent> {
  // Without a durable executor the call goes straight through: no key string and no closure per model call.
  if (!runtime.runEffect)
    return callModel(runtime, command, signal, hooks, historyIds, end) as Promise<AgentEvent>;
  return journaledModelEffect(
    runtime,
    String(command.call),
    () => callModel(runtime, command, signal, hooks, historyIds, end) as Promise<AgentEvent>,
  );
}

/**
 * A model call of the run under `key` (unique within the run): through the run's durable executor when it has one,
 * which records its outcome (plain JSON), so a replay returns it without asking the model again. The agent's own
 * calls and the calls made for its tools (an MCP server's sampling request) go through here.
 */
export function journaledModelEffect<T>(
  runtime: RunRuntime,
  key: string,
  effect: () => Promise<T>,
): Promise<T> {
  return runtime.runEffect
    ? runtime.runEffect(`${runtime.route ?? runtime.agent.name}/model/${key}`, 'model', effect)
    : effect();
}

/** Reports the state changes of a circuit breaker a model call goes through as `breaker` events of the run. */
export function breakerReporter(runtime: RunRuntime, signal: AbortSignal): ModelRequest['onBreaker'] {
  return (change) => {
    if (runtime.bus.listening && !signal.aborted) emitFrom(runtime, 'breaker', change);
  };
}

/**
 * One model call. The usual call (fixed instructions, no tool sources, no hooks of its own) goes straight to the
 * provider, its answer handled in one callback, after its reservation when the run has a resource manager; the
 * others take the general path, which may wait on the instructions, the tool sources and the budget first. Both
 * give the same event. With `deliver`, a call without
 * hooks on the straight path hands its event to it and returns nothing; otherwise the event's promise is returned.
 */
function callModel(
  runtime: RunRuntime,
  command: ModelCallCommand,
  signal: AbortSignal,
  hooks: CallHooks | undefined,
  historyIds: HistoryIds | undefined,
  end: RunEnd | undefined,
  deliver?: (event: AgentEvent) => void,
): Promise<AgentEvent> | undefined {
  let system: Message | undefined | Promise<Message | undefined>;
  try {
    system = systemMessageOf(runtime);
  } catch (error) {
    return Promise.resolve(instructionsFailed(runtime, error));
  }
  if (
    system instanceof Promise ||
    runtime.agent.tools.sources.length > 0 ||
    (runtime.resources !== undefined && hooks !== undefined)
  )
    return callModelWhenReady(runtime, command, signal, hooks, system, historyIds);
  if (hasEnded(signal, end)) return Promise.resolve(abortedEvent());
  const maskForModel = modelMaskOf(runtime);
  const messages = messagesOf(runtime, system, command, maskForModel);
  // A call without hooks of its own (the usual one) takes the run's request hooks and continuation.
  if (hooks === undefined) {
    const calls = plainCallsOf(runtime, signal, end);
    return runtime.resources === undefined
      ? callPlain(calls, command, maskForModel, historyIds, messages, deliver)
      : callReserved(calls, runtime.resources, command, maskForModel, historyIds, messages, deliver);
  }
  return callHooked(runtime, command, signal, hooks, historyIds, end, maskForModel, messages);
}

/**
 * A model call with hooks of its own on the straight path: its own request and continuation. Apart from callModel
 * so that the usual call runs (and is optimized as) the short function it needs.
 */
function callHooked(
  runtime: RunRuntime,
  command: ModelCallCommand,
  signal: AbortSignal,
  hooks: CallHooks,
  historyIds: HistoryIds | undefined,
  end: RunEnd | undefined,
  maskForModel: PiiRun | undefined,
  messages: Message[],
): Promise<AgentEvent> {
  const request = requestOf(runtime, command, signal, hooks, messages);
  let answer: ModelResponse | Promise<ModelResponse>;
  try {
    hooks.onGenerate?.();
    answer = runtime.agent.model.generate(request);
  } catch (error) {
    return Promise.resolve(failed(runtime, signal, end, undefined, error));
  }
  return Promise.resolve(answer).then(
    (given) => answered(runtime, command, signal, end, maskForModel, undefined, given, historyIds),
    (error: unknown) => failed(runtime, signal, end, undefined, error),
  );
}

/**
 * A model call without hooks of its own, on the straight path: the run's plain calls ask and answer it. The send is
 * written out here rather than calling askPlain (the same lines): apart, the two functions each wait to be optimized
 * on their own, which put about 800 more instructions into each of the first hundred steps of a fresh process.
 */
function callPlain(
  calls: PlainModelCalls,
  command: ModelCallCommand,
  maskForModel: PiiRun | undefined,
  historyIds: HistoryIds | undefined,
  messages: Message[],
  deliver: ((event: AgentEvent) => void) | undefined,
): Promise<AgentEvent> | undefined {
  const request = plainRequest(calls, command, maskForModel, historyIds, messages, deliver);
  let answer: ModelResponse | Promise<ModelResponse>;
  try {
    answer = calls.runtime.agent.model.generate(request);
  } catch (error) {
    return calls.askFailed(error, deliver);
  }
  const answered = Promise.resolve(answer).then(calls.answered, calls.failed);
  return deliver === undefined ? answered : undefined;
}

/**
 * The request of a plain call, whose own parts the run's plain calls keep until it is answered. The request is the
 * call's own: a reservation may set its output cap on it.
 */
function plainRequest(
  calls: PlainModelCalls,
  command: ModelCallCommand,
  maskForModel: PiiRun | undefined,
  historyIds: HistoryIds | undefined,
  messages: Message[],
  deliver: ((event: AgentEvent) => void) | undefined,
): ModelRequest {
  const agent = calls.runtime.agent;
  calls.deliver = deliver;
  calls.guard = undefined;
  calls.call = command.call;
  calls.history = command.history;
  calls.phase = command.phase;
  calls.maskForModel = maskForModel;
  calls.historyIds = historyIds;
  const request: ModelRequest = {
    messages,
    tools: command.toolsEnabled ? agent.tools.specs(command.disabledTools) : [],
    settings: agent.settings,
    signal: calls.signal,
    onDelta: calls.onDelta,
    onBreaker: calls.onBreaker,
  };
  if (command.schemaEnabled && agent.outputSpec) request.output = agent.outputSpec;
  return request;
}

/**
 * A plain call of a run with a resource manager reserves an estimate first: usually decided at once, without a
 * promise (a call under a manager holds no async frame while its model answers). Apart from callPlain so that the
 * calls of a run without a manager run (and are optimized as) the short function they need.
 */
function callReserved(
  calls: PlainModelCalls,
  resources: ResourceManager,
  command: ModelCallCommand,
  maskForModel: PiiRun | undefined,
  historyIds: HistoryIds | undefined,
  messages: Message[],
  deliver: ((event: AgentEvent) => void) | undefined,
): Promise<AgentEvent> | undefined {
  const request = plainRequest(calls, command, maskForModel, historyIds, messages, deliver);
  const runtime = calls.runtime;
  // The budget scope the call draws on: a turn with its own budget, else the run (or session).
  const reserved = reserveCall(
    resources,
    runtime.resourceScope?.() ?? runtime.bus.sessionId,
    request,
    runtime.agent.model,
    calls.signal,
  );
  // Decided at once, a refusal is answered as a promise (or to `deliver`), never as the bare event.
  if (!(reserved instanceof Promise))
    return askReserved(calls, resources, request, reserved, deliver, true) as Promise<AgentEvent> | undefined;
  const asked = reserved.then(
    (outcome) =>
      askReserved(calls, resources, request, outcome, deliver, false) as AgentEvent | Promise<AgentEvent>,
    calls.failed,
  );
  return deliver === undefined ? asked : undefined;
}

/**
 * A plain call's reservation is answered: the call is sent with the request it allows, or ends without asking.
 * `request` is the call's own (made for it by plainRequest), so the grant's output cap is set on it, not on a copy.
 */
function askReserved(
  calls: PlainModelCalls,
  resources: ResourceManager,
  request: ModelRequest,
  outcome: ReservationOutcome,
  deliver: ((event: AgentEvent) => void) | undefined,
  atOnce: boolean,
): AgentEvent | Promise<AgentEvent> | undefined {
  if (!outcome.granted) {
    const refused = hasEnded(calls.signal, calls.end) ? abortedEvent() : deniedEvent(calls.runtime, outcome);
    return calls.endWithout(refused, deliver, atOnce);
  }
  const grant = outcome.grant;
  if (hasEnded(calls.signal, calls.end)) {
    // Granted after the run was aborted: the reservation goes back at once.
    resources.release(grant);
    return calls.endWithout(abortedEvent(), deliver, atOnce);
  }
  calls.held ??= new HeldGrant(resources, calls.signal);
  calls.held.hold(grant);
  // Under a budget the call may write no more than its budgets have left (the request carries that cap).
  const cap = outputCapOf(request, grant);
  if (cap !== undefined) request.settings = calls.held.cappedSettings(request.settings, cap);
  return askPlain(calls, request, deliver);
}

/** Sends a granted plain call's request to the provider; its answer goes through the run's plain calls. */
function askPlain(
  calls: PlainModelCalls,
  request: ModelRequest,
  deliver: ((event: AgentEvent) => void) | undefined,
): Promise<AgentEvent> | undefined {
  let answer: ModelResponse | Promise<ModelResponse>;
  try {
    answer = calls.runtime.agent.model.generate(request);
  } catch (error) {
    return calls.askFailed(error, deliver);
  }
  const answered = Promise.resolve(answer).then(calls.answered, calls.failed);
  return deliver === undefined ? answered : undefined;
}

/** The run's plain model calls on this signal: made at the first, kept on the runtime for the next ones. */
function plainCallsOf(runtime: RunRuntime, signal: AbortSignal, end: RunEnd | undefined): PlainModelCalls {
  const known = runtime.plainCalls;
  if (known !== undefined && known.signal === signal && known.end === end) return known;
  const made = new PlainModelCalls(runtime, signal, end, checksAnswers(runtime));
  runtime.plainCalls = made;
  return made;
}

/**
 * What a run's model calls without hooks of their own share: the request's delta and breaker hooks and the
 * continuation that makes the provider's answer the machine's event, one of each per run (and signal), where each
 * call made four closures and their two scopes, which a run waiting for its model held. A run has one such call in
 * flight at a time (its machine waits for the answer): that call's own parts are kept in fields until it is
 * answered.
 */
export class PlainModelCalls implements AnsweredCall {
  /** Streamed tool arguments of the call in flight stop showing once a secret key appears in them. */
  guard: ((index: number, text: string) => string) | undefined = undefined;
  /**
   * What the answer of the call in flight reads of its command (not the command itself, which the run then does
   * not hold while it waits).
   */
  call = 0;
  history: ModelCallCommand['history'] = noMessages;
  phase: ModelCallCommand['phase'] = 'toolUse';
  maskForModel: PiiRun | undefined = undefined;
  historyIds: HistoryIds | undefined = undefined;
  /** Where the event of the call in flight goes when its caller gave a receiver (else: the promise's value). */
  deliver: ((event: AgentEvent) => void) | undefined = undefined;
  /** The grant of the call in flight, when the run has a resource manager (made at its first reserved call). */
  held: HeldGrant | undefined = undefined;

  constructor(
    readonly runtime: RunRuntime,
    readonly signal: AbortSignal,
    /** Says whether `signal` is aborted without asking it, when the run's effects gave it. */
    readonly end: RunEnd | undefined,
    /** Whether the agent's output guardrails check whole answers (their text does not stream). */
    private readonly holdsText: boolean,
  ) {}

  /**
   * A provider may still deliver a delta after the call was aborted: it must not follow the run's end. Text the
   * output guardrails will check whole does not stream: it leaves with their verdict.
   */
  readonly onDelta = (delta: ModelDelta): void => {
    if (hasEnded(this.signal, this.end)) return;
    if (this.holdsText && delta.type === 'text') return;
    const runtime = this.runtime;
    if (delta.type !== 'tool_call' || !runtime.bus.listening) runtime.onDelta(delta);
    else {
      this.guard ??= streamedArgumentsGuard(secretKeysOf(runtime.agent));
      showArguments(runtime, this.guard, delta);
    }
  };

  /** A circuit breaker the call goes through reports its changes of state on this run's bus. */
  readonly onBreaker = (change: RunEventData['breaker']): void => {
    if (this.runtime.bus.listening && !hasEnded(this.signal, this.end))
      emitFrom(this.runtime, 'breaker', change);
  };

  readonly answered = (given: ModelResponse): AgentEvent => {
    const event = answered(
      this.runtime,
      this,
      this.signal,
      this.end,
      this.maskForModel,
      this.held,
      given,
      this.historyIds,
    );
    this.#settled(event);
    return event;
  };

  readonly failed = (error: unknown): AgentEvent => {
    const event = failed(this.runtime, this.signal, this.end, this.held, error);
    this.#settled(event);
    return event;
  };

  /**
   * The provider threw when asked: the call's event is answered after the call that asked, as a promise's reaction
   * would be (not from inside the machine's step).
   */
  askFailed(
    error: unknown,
    deliver: ((event: AgentEvent) => void) | undefined,
  ): Promise<AgentEvent> | undefined {
    this.deliver = undefined;
    const event = this.failed(error);
    if (deliver === undefined) return Promise.resolve(event);
    queueMicrotask(() => deliver(event));
    return undefined;
  }

  /**
   * The call ends without asking its model (its reservation was refused, or the run ended meanwhile). Decided
   * `atOnce` (inside the call that asked), the event is answered after it, as a promise's reaction would be.
   */
  endWithout(
    event: AgentEvent,
    deliver: ((event: AgentEvent) => void) | undefined,
    atOnce: boolean,
  ): AgentEvent | Promise<AgentEvent> | undefined {
    if (!atOnce) {
      this.#settled(event);
      return deliver === undefined ? event : undefined;
    }
    this.deliver = undefined;
    this.#settled(event);
    if (deliver === undefined) return Promise.resolve(event);
    queueMicrotask(() => deliver(event));
    return undefined;
  }

  /** The call is answered: its event goes to its receiver, and the run holds nothing of it until its next. */
  #settled(event: AgentEvent): void {
    this.history = noMessages;
    this.historyIds = undefined;
    this.maskForModel = undefined;
    this.held?.clear();
    const deliver = this.deliver;
    if (deliver !== undefined) {
      this.deliver = undefined;
      deliver(event);
    }
  }
}

const noMessages: ModelCallCommand['history'] = Object.freeze([]) as unknown as ModelCallCommand['history'];

/** A streamed tool-call delta, with what the guard lets show of its arguments. */
function showArguments(
  runtime: RunRuntime,
  guard: (index: number, text: string) => string,
  delta: Extract<ModelDelta, { type: 'tool_call' }>,
): void {
  const shown = guard(delta.index, delta.argsDelta);
  if (shown === delta.argsDelta) runtime.onDelta(delta);
  else if (shown !== '' || delta.id !== undefined || delta.name !== undefined)
    runtime.onDelta({ ...delta, argsDelta: shown });
}

/** The general path of a model call: instructions, tool sources and the budget may each be waited for first. */
async function callModelWhenReady(
  runtime: RunRuntime,
  command: ModelCallCommand,
  signal: AbortSignal,
  hooks: CallHooks | undefined,
  built: Message | undefined | Promise<Message | undefined>,
  historyIds: HistoryIds | undefined,
): Promise<AgentEvent> {
  const { agent, bus } = runtime;
  let system: Message | undefined;
  try {
    system = built instanceof Promise ? await built : built;
  } catch (error) {
    return instructionsFailed(runtime, error);
  }
  if (signal.aborted) return abortedEvent();
  const maskForModel = modelMaskOf(runtime);
  const messages = messagesOf(runtime, system, command, maskForModel);
  // Tools listed at run time (MCP servers) are brought up to date first; a source that stays unreachable fails
  // the run with its error rather than letting the model answer without tools it was given.
  // An agent without tool sources has nothing to list: no scope (an object and a closure) per model call.
  const preparing =
    agent.tools.sources.length === 0
      ? undefined
      : agent.tools.prepare({
          sessionId: runtime.sessionId ?? bus.sessionId,
          signal,
          context: runtime.context,
          hold: runtime.holdings?.hold,
          unavailable: ({ source, error, retryInMs }) =>
            emitFrom(runtime, 'mcp_server_unavailable', {
              server: source,
              error: toErrorInfo(error),
              retryInMs,
            }),
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
  const request = requestOf(runtime, command, signal, hooks, messages);
  // A run with a resource manager reserves an estimate first; a spent budget stops the run (budget_exhausted).
  // The budget scope the call draws on: a turn with its own budget, else the run (or session).
  const scope = runtime.resourceScope?.() ?? bus.sessionId;
  const resources = runtime.resources;
  let reservation: Extract<ModelReservation, { granted: true }> | undefined;
  let sent = request;
  if (resources) {
    const outcome = await reserveModelCall(resources, scope, request, agent.model, signal);
    if (signal.aborted) return abortedEvent();
    if (!outcome.granted) return deniedEvent(runtime, outcome.denial);
    reservation = outcome;
    // Under a budget the call may write no more than its budgets have left (the request carries that cap).
    sent = outcome.request;
  }
  let answer: ModelResponse;
  try {
    hooks?.onGenerate?.();
    answer = await agent.model.generate(sent);
  } catch (error) {
    return failed(runtime, signal, undefined, reservation, error);
  }
  return answered(runtime, command, signal, undefined, maskForModel, reservation, answer, historyIds);
}

/** The event of a call its reservation refused: a spent budget stops the run (budget_exhausted). */
function deniedEvent(
  runtime: RunRuntime,
  denial: Extract<ModelReservation, { granted: false }>['denial'],
): AgentEvent {
  if (denial.reason === 'budget_exhausted')
    return { type: 'model.denied', reason: denial.reason, message: denial.message };
  // Not a spent budget (a call larger than a quota, an unpriced model): the run fails with an error naming it.
  const info = denialError(denial);
  emitFrom(runtime, 'error', { message: info.message, type: info.name, code: info.code });
  return { type: 'model.error', error: info };
}

/** The user's instruction function failed: the run fails with its error, before anything is spent. */
function instructionsFailed(runtime: RunRuntime, error: unknown): AgentEvent {
  const info = toErrorInfo(error);
  const failure = { ...info, code: 'instructions_failed', message: `instructions: ${info.message}` };
  emitFrom(runtime, 'error', { message: failure.message, type: failure.name, code: failure.code });
  return { type: 'model.error', error: failure };
}

/** The masker of a run that masks personal data for the model (the provider sees placeholders), if it does. */
function modelMaskOf(runtime: RunRuntime): PiiRun | undefined {
  const pii = piiOf(runtime.bus);
  return pii?.options.model ? pii : undefined;
}

/** The request's messages: the system message first, then the history (masked for the model when it masks). */
function messagesOf(
  runtime: RunRuntime,
  system: Message | undefined,
  command: ModelCallCommand,
  maskForModel: PiiRun | undefined,
): Message[] {
  const history = command.history;
  let messages: Message[] = system === undefined ? (history as Message[]) : withFirst(system, history);
  if (maskForModel) {
    const counts: PiiCounts = {};
    messages = maskMessages(maskForModel, messages, counts);
    if (hasCounts(counts) && runtime.bus.listening)
      emitFrom(runtime, 'redaction', { target: 'model', counts });
  }
  return messages;
}

/**
 * `first` and then `messages`, in a new array made at its final length by a loop: `concat` would go through the
 * runtime's generic C++ builtin (once per model call), a spread would grow the array by push.
 */
function withFirst(first: Message, messages: readonly Message[]): Message[] {
  const length = messages.length;
  const all: Message[] = new Array(length + 1);
  all[0] = first;
  for (let index = 0; index < length; index++) all[index + 1] = messages[index] as Message;
  return all;
}

/** The provider's request: its deltas and breaker changes reach the run's events through one scope. */
function requestOf(
  runtime: RunRuntime,
  command: ModelCallCommand,
  signal: AbortSignal,
  hooks: CallHooks | undefined,
  messages: Message[],
): ModelRequest {
  const { agent, bus } = runtime;
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
      showArguments(runtime, guard, delta);
    },
    // A circuit breaker the call goes through reports its changes of state on this run's bus (as breakerReporter).
    onBreaker: (change) => {
      if (bus.listening && !signal.aborted) emitFrom(runtime, 'breaker', change);
    },
  };
  if (command.schemaEnabled && agent.outputSpec) request.output = agent.outputSpec;
  return request;
}

/** What the answer of a reserved call does with its reservation: settles it, or gives it back on a failure. */
type CallReservation = Pick<Extract<ModelReservation, { granted: true }>, 'settle' | 'fail'>;

/** What the event of a provider's answer reads of its model call's command. */
type AnsweredCall = Pick<ModelCallCommand, 'call' | 'history' | 'phase'>;

/** The event of a provider's answer: normalized, revealed when masked, decoded when the schema asks. */
function answered(
  runtime: RunRuntime,
  command: AnsweredCall,
  signal: AbortSignal,
  end: RunEnd | undefined,
  maskForModel: PiiRun | undefined,
  reservation: CallReservation | undefined,
  answer: ModelResponse,
  historyIds: HistoryIds | undefined,
): AgentEvent {
  try {
    const response = normalizeResponse(
      maskForModel ? revealResponse(maskForModel, answer) : answer,
      command.call,
      command.history,
      historyIds,
    );
    reservation?.settle(response.usage);
    if (hasEnded(signal, end)) return abortedEvent();
    // Decode here, where the schema lives, so the machine only sees data. In the tool-use phase only a text answer
    // is worth decoding; a valid one ends the run without the extra final-output call.
    const schema = runtime.agent.outputSchema;
    const wantsDecode = schema && (command.phase === 'finalOutput' || response.toolCalls.length === 0);
    return wantsDecode
      ? { type: 'model.response', response, decoded: decodeOutput(response.text, schema) }
      : { type: 'model.response', response };
  } catch (error) {
    return failed(runtime, signal, end, reservation, error);
  }
}

/** The event of a call that failed (the provider threw, or its answer could not be read). */
function failed(
  runtime: RunRuntime,
  signal: AbortSignal,
  end: RunEnd | undefined,
  reservation: CallReservation | undefined,
  error: unknown,
): AgentEvent {
  // The call's usage is unknown: its reservation goes back (exactly once; release after settle is a no-op).
  reservation?.fail(error);
  if (hasEnded(signal, end)) return abortedEvent();
  const info = toErrorInfo(error);
  emitFrom(runtime, 'error', { message: info.message, type: info.name, code: info.code });
  return { type: 'model.error', error: info };
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

/** The `usage` event of a response: its own usage and the run's so far. */
export function emitUsage(runtime: RunRuntime, usage: Usage, cumulative: Usage): void {
  emitFrom(runtime, 'usage', {
    usage,
    cumulative,
  });
}

/** Whether the agent's answers wait for its output guardrails (the ones that check the whole answer). */
export function checksAnswers(runtime: RunRuntime): boolean {
  const guardrails = runtime.agent.guardrails;
  return guardrails !== undefined && guardrails.output.length > 0;
}

/** The text an answer shows the caller: a refusal usually comes without text, and then it is the refusal. */
export function answerText(response: ModelResponse): string {
  return response.text === '' && response.refusal !== undefined ? response.refusal : response.text;
}

/** The `model_response` event; `withText` false leaves the text (and any refusal) out. */
export function emitResponse(
  runtime: RunRuntime,
  step: number,
  response: ModelResponse,
  withText: boolean,
): void {
  emitFrom(runtime, 'model_response', {
    step,
    text: withText ? response.text : '',
    toolCallCount: response.toolCalls.length,
    stopReason: response.stopReason ?? null,
    usage: response.usage,
  });
}
