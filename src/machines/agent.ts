import { and, assign, emit, setup } from 'xstate';
import { withLast } from '../core/appended.ts';
import type { ApprovalDecision, HumanRequestKind } from '../core/approvals.ts';
import type { ErrorInfo } from '../core/errors.ts';
import { blockedMessage, type GuardrailBlock } from '../core/guardrail-block.ts';
import { answerUnrunCalls } from '../core/history.ts';
import type { JsonValue } from '../core/json.ts';
import type { ResolvedLimits } from '../core/limits.ts';
import { type AssistantMessage, lastUserText, type Message, type ToolCall } from '../core/messages.ts';
import type { ModelResponse } from '../core/model.ts';
import { addCount, ownValue } from '../core/records.ts';
import type { StopReason } from '../core/stop-reason.ts';
import { addSpend, addUsage, emptyUsage, type NestedSpend, type Usage } from '../core/usage.ts';
import type { PolicyState, TerminationDecision } from '../policies/decision.ts';
import { decodeRetriesLeft, stepLimitReached } from '../policies/step-limit.ts';
import { terminationPolicyFor } from '../policies/termination-policy.ts';
import { toolCallSignatures } from '../policies/tool-call-signature.ts';

/**
 * The agent loop as a statechart: the tool-use and final-output phases, the termination policy's decisions
 * (stop reasons, duplicate calls, per-tool caps), the step limit, structured output with decode retries,
 * timeout and abort. Pure: no I/O, clock or randomness; every effect is a command the machine emits (XState's
 * `emit`), which the actor running it handles (src/run/effects.ts), answering with one event per model call and
 * one per batch of tool calls. About two machine events per loop step keeps the hot path cheap (streamed deltas go
 * to the event bus, never through the machine). Context is plain data.
 *
 *   running
 *     starting (checks the step limit, or resumes) -> checkingInput | toolUse | finalOutput
 *     checkingInput (input guardrails) -> toolUse | finalOutput
 *     toolUse:      callingModel -> runningTools (-> awaitingApproval -> runningTools) -> callingModel ...
 *     finalOutput:  callingModel -> decoding -> (retry) callingModel ...
 *     checkingOutput (output guardrails on the final answer) -> completed
 *   completed | stopped | failed | handingOff  (final)
 *
 * The guardrail states are entered only by agents that have guardrails of their kind (guards read the run's
 * guardrail plan): an agent without guardrails takes exactly the transitions it took before they existed.
 *
 * The tool-use loop has no transient states: what the policy decides about a response, and whether the step limit
 * is reached after a batch of tools, are guards of the `model.response` and `tools.done` transitions themselves.
 * A tool step is then two microsteps (one per event) instead of four: each microstep of XState's interpreter
 * recomputes entry/exit sets and copies the snapshot, which is most of the loop's cost (BENCHMARKS.md).
 */

/** A decoded final answer, or why it did not decode; computed by the run's effects, which hold the schema. */
export type DecodeOutcome = { ok: true; value: JsonValue } | { ok: false; error: string };

/** The outcome of one tool call, as the tool runner reports it. */
export interface ToolOutcome {
  callId: string;
  name: string;
  content: string;
  isError: boolean;
  /** Whether the tool's code ran at all (false for unknown tools, invalid arguments, disabled tools). */
  executed: boolean;
  /** Every attempt failed: the tool is disabled for the rest of the run and the model answers without it. */
  degraded: boolean;
  attempts: number;
  /** A tool guardrail blocked the call (its arguments or its result) and the run must stop. */
  blocked?: GuardrailBlock;
  /** A handoff call the tool gate let through: the agent ends in `handingOff`. */
  handoff?: true;
  /**
   * What the call spent outside the agent's own model calls (an agent used as a tool, MCP sampling): recorded with
   * the outcome, so a call answered from the journal after a restart still counts it.
   */
  spend?: NestedSpend;
}

/** Which guardrail states a run enters: fixed for the run from its agent's guardrails. */
export interface GuardrailPlan {
  /** Input guardrails checked before the first model call (`checkingInput`). */
  input: boolean;
  /** Input guardrails checked beside the first model call (by the run's effects, within `callingModel`). */
  parallelInput: boolean;
  /** Output guardrails checked on the whole final answer (`checkingOutput`). */
  output: boolean;
  /** Tool guardrails: a batch's outcome may carry a block. */
  tools: boolean;
}

const noGuardrails: GuardrailPlan = Object.freeze({
  input: false,
  parallelInput: false,
  output: false,
  tools: false,
});

export type ModelPhase = 'toolUse' | 'finalOutput';

/**
 * The limits at which the model may be asked for one last answer with tools off: the one reached stays the run's
 * stop reason (`limits.finalAnswerOnMaxSteps`, `limits.finalAnswerOnToolLimits`).
 */
export type ForcedAnswerLimit = 'max_steps' | 'duplicate_tool_call' | 'tool_call_limit';

/** The stop reasons of the tool-call limits (`maxDuplicateToolCalls`, `maxToolCallsPerTool` and their conditions). */
function isToolCallLimit(reason: StopReason): reason is 'duplicate_tool_call' | 'tool_call_limit' {
  return reason === 'duplicate_tool_call' || reason === 'tool_call_limit';
}

/** Commands the machine emits for its run's effects (XState's `emit`: the actor running it handles them). */
export type EffectCommand =
  | {
      type: 'model.call';
      phase: ModelPhase;
      /** Model call number in the run, from 1. */
      call: number;
      /** Tool-use step number, from 1 (the step a tool call belongs to). */
      step: number;
      toolsEnabled: boolean;
      schemaEnabled: boolean;
      history: readonly Message[];
      disabledTools: readonly string[];
      /** Run the parallel input guardrails beside this call; a block cancels it and answers `guardrail.blocked`. */
      checkInput: boolean;
    }
  /** Check the run's input or its final answer with the agent's guardrails; answered by `guardrails.done`. */
  | {
      type: 'guardrails.check';
      stage: 'input' | 'output';
      /** Model calls made so far: with the stage, what a durable executor keys the check by. */
      call: number;
      /** The value checked: the input text, the answer's text or its decoded output. */
      value: JsonValue;
      text: string;
    }
  | {
      type: 'tools.run';
      step: number;
      calls: readonly ToolCall[];
      disabledTools: readonly string[];
      /** What people decided on calls that waited for them: approved calls run, the others are answered. */
      decisions: ApprovalState['decided'];
    }
  /** Calls wait for people: the effects persist the pause and announce the requests; nothing answers this command. */
  | { type: 'approval.wait'; step: number; calls: readonly ToolCall[]; pending: readonly PendingApproval[] };

/** Events the machine receives: answers from the run's effects, and abort / timeout from the runner. */
export type AgentEvent =
  | { type: 'model.response'; response: ModelResponse; decoded?: DecodeOutcome }
  | { type: 'model.error'; error: ErrorInfo }
  /** The resource manager refused the call (a budget is used up): the run stops with budget_exhausted. */
  | { type: 'model.denied'; reason: string; message: string }
  | {
      type: 'tools.done';
      results: ToolOutcome[];
      /** Steps that nested agents (agentTool) used during this batch: they count against this run's limit. */
      nestedSteps?: number;
      /** Calls that must wait for a person (approval, or an answer) before they can be answered. */
      pending?: PendingApproval[];
    }
  /** A person decided on a call that waited for them. */
  | { type: 'approval.decided'; callId: string; decision: ApprovalDecision }
  /** The guardrails of a `guardrails.check` decided: `blocked` says which one blocked, if one did. */
  | { type: 'guardrails.done'; blocked?: GuardrailBlock }
  /**
   * A guardrail blocked while the model was called (a parallel input guardrail, or a streaming output guardrail):
   * the call was cancelled. `usage` is the call's, when it had finished; `modelCalled` whether the model was asked.
   */
  | { type: 'guardrail.blocked'; block: GuardrailBlock; modelCalled: boolean; usage?: Usage }
  /** The state that decides the next effect could not be made durable: the effect never started. */
  | { type: 'effects.failed'; error: ErrorInfo }
  | { type: 'abort'; reason?: string }
  | { type: 'timeout' };

export interface AgentMachineInput {
  sessionId: string;
  agent: string;
  limits: ResolvedLimits;
  toolNames: readonly string[];
  hasOutputSchema: boolean;
  /** The caller's history followed by this run's user message. */
  history: Message[];
  /** Length of the caller's history: where this run's delta starts. */
  baseLength: number;
  /** Handoff tools offered to the model: tool name -> target agent name. Taking one ends in `handingOff`. */
  handoffTools?: Record<string, string>;
  /** Resume from a checkpoint (a restart after a crash, or a refused handoff): counters, history, open calls. */
  resume?: AgentCheckpoint;
  /** Which guardrail states the run enters; default none. */
  guardrails?: GuardrailPlan;
}

/** The handoff the model asked for: the call stays open; the session answers it (accepted or refused). */
export interface HandoffRequest {
  target: string;
  call: ToolCall;
}

/** What is fixed for the run: set from the input and never assigned again, so no step copies it. */
export interface AgentRunConfig {
  sessionId: string;
  agent: string;
  limits: ResolvedLimits;
  toolNames: readonly string[];
  hasOutputSchema: boolean;
  /** Length of the caller's history: where this run's delta starts. */
  baseLength: number;
  /** Handoff tools offered to the model: tool name -> target agent name. */
  handoffTools: Record<string, string>;
  /** The phase a resumed run continues in ('toolUse' for a fresh run). */
  resumePhase: ModelPhase;
  guardrails: GuardrailPlan;
}

/** The last model reply read as an answer. Every model response writes all of it at once. */
export interface AgentAnswer {
  text: string;
  /** The answer was cut by max_tokens. */
  truncated: boolean;
  /** The decoded final output, when the agent has an output schema. */
  output: JsonValue | null;
  /** Whether `output` holds a decoded value (it may legitimately be null). */
  outputDecoded: boolean;
  decodeError: string | null;
}

/**
 * The agent machine's context. Kept to at most 19 top-level keys on purpose: every `assign` copies the context with
 * Object.assign, which V8 does in ~0.05 µs up to 19 keys and 4-6 µs from 20 on (bench/experiments/context-copy.ts).
 * Fields are grouped by what is written together (`config` never, `answer` by each model response); the counters a
 * checkpoint keeps stay top-level. The machine's output flattens the groups again (AgentMachineOutput).
 */
export interface AgentContext extends PolicyState {
  config: AgentRunConfig;
  history: Message[];
  /** Model calls made in the tool-use phase. */
  step: number;
  /** All model calls made. */
  modelCalls: number;
  /** Decode retries used in the final-output phase. */
  retryCount: number;
  /** Tool calls answered by running (or trying to run) a tool. */
  toolCallsRun: number;
  /** Tools whose every attempt failed; not offered to the model again. */
  degradedTools: string[];
  usage: AgentUsage;
  decision: TerminationDecision | null;
  /** Tool calls asked for in the last assistant message and not answered yet. */
  openCalls: ToolCall[];
  answer: AgentAnswer;
  /** A limit was reached and one last tool-less answer was asked for: which one (it stays the stop reason); else false. */
  forcedFinalAnswer: ForcedAnswerLimit | false;
  stopReason: StopReason | null;
  error: ErrorInfo | null;
  /** Set when the run ended in `handingOff`. */
  handoff: HandoffRequest | null;
  /** Tool calls of the current batch that wait for people (approval or an answer), and the decisions so far. */
  approvals: ApprovalState | null;
  /** The guardrail that ended the run, when it ended with guardrail_blocked. */
  guardrail: GuardrailBlock | null;
}

/**
 * The usage of the agent's own model calls, with what its tool calls spent outside them (`nested`: agents used as
 * tools, MCP sampling). Kept in one field so the context keeps its key count; a checkpoint without `nested` (an
 * older one) resumes with none.
 */
export type AgentUsage = Usage & { nested?: NestedSpend };

/** `usage` with one more own model call's usage added; what was spent outside the agent's calls stays. */
function withOwnUsage(usage: AgentUsage, added: Usage): AgentUsage {
  const sum: AgentUsage = addUsage(usage, added);
  if (usage.nested) sum.nested = usage.nested;
  return sum;
}

/** A tool call that waits for a person before it can be answered. */
export interface PendingApproval {
  callId: string;
  kind: HumanRequestKind;
}

/** The approvals of the batch in progress: what waits, and what people decided (in the order they decided). */
export interface ApprovalState {
  pending: PendingApproval[];
  decided: { callId: string; decision: ApprovalDecision }[];
}

/**
 * Where a run resumes after a crash, a suspend or a supervised restart: the state that decided the next effect,
 * taken when the agent is about to call the model, about to run a batch of tools, or waiting for people to decide
 * on tool calls. A store keeps it as JSON.
 */
export type AgentCheckpoint = Pick<
  AgentContext,
  | 'history'
  | 'step'
  | 'modelCalls'
  | 'retryCount'
  | 'toolCallsRun'
  | 'toolCallCounts'
  | 'callSignatures'
  | 'degradedTools'
  | 'usage'
  | 'openCalls'
  | 'decision'
  | 'approvals'
> & {
  /** As the context's; a stored `true` names the step limit (a checkpoint that records only that one was asked for). */
  forcedFinalAnswer: ForcedAnswerLimit | boolean;
  /** The phase the checkpoint was taken in: a final-output checkpoint resumes there (decode retries included). */
  phase: ModelPhase;
};

/** The machine's output, everything the run result is built from: the context with its groups flattened. */
export type AgentMachineOutput = Omit<AgentContext, 'config' | 'answer'> & AgentRunConfig & AgentAnswer;

/** The flat form of a context (the machine's output; also what a runner builds a result from mid-run). */
export function agentOutputOf(context: AgentContext): AgentMachineOutput {
  // Written out, in the order the spreads of the groups would give: one object of one shape. A rest pattern and three
  // spreads would build a temporary object and grow the output past its in-object fields (every run ends here).
  const { config, answer } = context;
  return {
    sessionId: config.sessionId,
    agent: config.agent,
    limits: config.limits,
    toolNames: config.toolNames,
    hasOutputSchema: config.hasOutputSchema,
    baseLength: config.baseLength,
    handoffTools: config.handoffTools,
    resumePhase: config.resumePhase,
    guardrails: config.guardrails,
    text: answer.text,
    truncated: answer.truncated,
    output: answer.output,
    outputDecoded: answer.outputDecoded,
    decodeError: answer.decodeError,
    history: context.history,
    step: context.step,
    modelCalls: context.modelCalls,
    retryCount: context.retryCount,
    toolCallsRun: context.toolCallsRun,
    toolCallCounts: context.toolCallCounts,
    callSignatures: context.callSignatures,
    degradedTools: context.degradedTools,
    usage: context.usage,
    decision: context.decision,
    openCalls: context.openCalls,
    forcedFinalAnswer: context.forcedFinalAnswer,
    stopReason: context.stopReason,
    error: context.error,
    handoff: context.handoff,
    approvals: context.approvals,
    guardrail: context.guardrail,
  };
}

/** Everything a run spent: its own model calls and what its tool calls spent outside them (`nested`). */
export interface RunSpend {
  usage: Usage;
  modelCalls: number;
  /** Absent when the tool calls spent nothing outside the agent's own model calls. */
  nested?: NestedSpend;
}

/**
 * What an agent's run spent in all (a result's figures), from its own counters (which number its model calls in
 * the journal and go into checkpoints as they are).
 */
export function runSpendOf(counters: Pick<AgentContext, 'usage' | 'modelCalls'>): RunSpend {
  const { nested, ...own } = counters.usage;
  if (!nested) return { usage: own, modelCalls: counters.modelCalls };
  return {
    usage: addUsage(own, nested.usage),
    modelCalls: counters.modelCalls + nested.modelCalls,
    nested,
  };
}

/**
 * The checkpoint's fields only: a checkpoint comes from a store as JSON, and whatever else it holds must not
 * become context (nor push the context over the key count above).
 */
function resumedFrom(
  checkpoint: AgentCheckpoint,
): Omit<AgentCheckpoint, 'phase' | 'forcedFinalAnswer'> & Pick<AgentContext, 'forcedFinalAnswer'> {
  return {
    history: checkpoint.history,
    step: checkpoint.step,
    modelCalls: checkpoint.modelCalls,
    retryCount: checkpoint.retryCount ?? 0,
    forcedFinalAnswer:
      checkpoint.forcedFinalAnswer === true ? 'max_steps' : (checkpoint.forcedFinalAnswer ?? false),
    approvals: checkpoint.approvals ?? null,
    toolCallsRun: checkpoint.toolCallsRun,
    toolCallCounts: checkpoint.toolCallCounts,
    callSignatures: checkpoint.callSignatures,
    degradedTools: checkpoint.degradedTools,
    usage: checkpoint.usage,
    openCalls: checkpoint.openCalls,
    decision: checkpoint.decision,
  };
}

/**
 * A run's empty records and lists at its start, shared by every run: nothing writes them (a step that counts a
 * call or degrades a tool makes a new one), so a run in flight holds none of its own until it has something in it.
 */
const noCounts: Record<string, number> = Object.freeze({});
const noRecord: Record<string, string> = Object.freeze({});
const noTools: string[] = Object.freeze([]) as unknown as string[];

const noAnswer: AgentAnswer = Object.freeze({
  text: '',
  truncated: false,
  output: null,
  outputDecoded: false,
  decodeError: null,
});

/** The answer a tool-use response gives; the common empty one (a turn of tool calls) is shared, not copied. */
function answerOf(text: string, truncated: boolean, decoded: DecodeOutcome | undefined): AgentAnswer {
  if (text === '' && !truncated && decoded === undefined) return noAnswer;
  return {
    text,
    truncated,
    output: decoded?.ok ? decoded.value : null,
    outputDecoded: decoded?.ok === true,
    decodeError: decoded && !decoded.ok ? decoded.error : null,
  };
}

/** The answer's text; a refusal usually comes without text, and then the refusal is what the caller reads. */
function answerTextOf(response: ModelResponse): string {
  return response.text === '' && response.refusal !== undefined ? response.refusal : response.text;
}

/**
 * The answer's text. After a paused turn (see ModelStopReason `pause_turn`) the response continues it: its text
 * follows the paused part's, as a new paragraph, so the answer is the whole turn's text.
 */
function continuedTurnText(context: AgentContext, text: string): string {
  const previous = context.decision;
  if (previous?.kind !== 'continue_thinking' || previous.continuesTurn !== true) return text;
  const before = context.answer.text;
  if (before === '') return text;
  return text === '' ? before : `${before}\n\n${text}`;
}

function appendAssistant(context: AgentContext, response: ModelResponse, keepToolCalls: boolean): Message[] {
  const toolCalls = response.toolCalls;
  const withCalls = keepToolCalls && toolCalls.length > 0;
  // The usual turn of tool calls is one literal with every field: a field added after the literal would take a
  // property array of its own, held for as long as the history holds the message. (Same keys in the same order.)
  const message: AssistantMessage = withCalls
    ? { role: 'assistant', content: response.text, agent: context.config.agent, toolCalls }
    : { role: 'assistant', content: response.text, agent: context.config.agent };
  if (response.reasoning && response.reasoning.length > 0) message.reasoning = response.reasoning;
  return withLast(context.history, message);
}

type ModelResponseEvent = Extract<AgentEvent, { type: 'model.response' }>;

/**
 * The policy's decision on a tool-use response, memoized on the (context, event) pair: the guards that choose the
 * `model.response` transition and the action that records it all ask for it within one transition, and the policy
 * hashes every call's arguments (duplicate detection). Contexts and events are immutable, so the identity check is
 * exact. One slot is enough (the asks come back to back) and, unlike a WeakMap, costs the collector nothing; the
 * recording action clears it, so it never keeps a finished run's history alive.
 */
let memoEvent: ModelResponseEvent | undefined;
let memoContext: AgentContext | undefined;
let memoDecision: TerminationDecision | undefined;

function decisionOn(context: AgentContext, event: ModelResponseEvent): TerminationDecision {
  if (memoEvent === event && memoContext === context) return memoDecision as TerminationDecision;
  const decision = terminationPolicyFor(context.config.limits)(event.response, context);
  memoEvent = event;
  memoContext = context;
  memoDecision = decision;
  return decision;
}

/** The decision for the action that records the response: the last ask, so the memo is released here. */
function takeDecision(context: AgentContext, event: ModelResponseEvent): TerminationDecision {
  const decision = decisionOn(context, event);
  memoEvent = undefined;
  memoContext = undefined;
  memoDecision = undefined;
  return decision;
}

/**
 * The decision on the event being handled, for the guards; null for any other event. Guards never throw: if the
 * policy does (a bug of ours), every decision guard fails, the last `model.response` transition is taken, and its
 * `recordToolUseResponse` asks again and throws there, so the actor errors with the policy's own error as before.
 */
function responseDecision(context: AgentContext, event: AgentEvent): TerminationDecision | null {
  if (event.type !== 'model.response') return null;
  try {
    return decisionOn(context, event);
  } catch {
    return null;
  }
}

/**
 * Steps used once this event is recorded: a tool-use response is one, and steps of nested agents (agents used as
 * tools) count too, so they share the caller's step limit.
 */
function stepsAfter(context: AgentContext, event: AgentEvent): number {
  if (event.type === 'model.response') return context.step + 1;
  if (event.type === 'tools.done') return context.step + (event.nestedSteps ?? 0);
  return context.step;
}

/** The context changes that end a run: the stop reason, why, and answers for any tool call left open. */
function stopPatch(context: AgentContext, reason: StopReason, message: string | null): Partial<AgentContext> {
  return {
    stopReason: reason,
    error: message === null ? context.error : { name: 'RunStopped', code: reason, message },
    history:
      context.openCalls.length > 0
        ? [...context.history, ...answerUnrunCalls(context.openCalls, message ?? reason)]
        : context.history,
    openCalls: [],
  };
}

/** The turn's handoff call (the first, when the model asked for several), if the turn asked for one. */
function handoffCallOf(context: AgentContext): ToolCall | undefined {
  const { handoffTools } = context.config;
  // An indexed loop, not `find` or `for...of`: this is asked three times per tool step, and a callback is an
  // allocation each time, as is each step of an iterator while the code runs in V8's baseline tiers.
  const { openCalls } = context;
  const count = openCalls.length;
  for (let index = 0; index < count; index++) {
    const open = openCalls[index] as ToolCall;
    if (Object.hasOwn(handoffTools, open.name)) return open;
  }
  return undefined;
}

/**
 * The open calls the tool gate is asked about: in a turn that asks for a handoff, the handoff call alone (the
 * turn's other calls are not run: a handoff that passes ends the agent's turn), else every open call.
 */
function gatedCalls(context: AgentContext): ToolCall[] {
  const handoff = handoffCallOf(context);
  return handoff ? [handoff] : context.openCalls;
}

const noDecisions: ApprovalState['decided'] = Object.freeze([]) as unknown as ApprovalState['decided'];

/**
 * The context once `calls` are answered by `results` (the runner reports in call order): history and counters, the
 * calls left open, the decision and approvals that follow, and the steps nested agents used. One object, the
 * update `assign` copies into the context (a spread of a smaller patch into a bigger one would make two per step).
 */
function toolResultsPatch(
  context: AgentContext,
  calls: readonly ToolCall[],
  results: readonly ToolOutcome[],
  openCalls: ToolCall[],
  decision: TerminationDecision | null,
  approvals: ApprovalState | null,
  nestedSteps: number | undefined,
): Pick<
  AgentContext,
  | 'history'
  | 'toolCallCounts'
  | 'callSignatures'
  | 'degradedTools'
  | 'toolCallsRun'
  | 'usage'
  | 'openCalls'
  | 'decision'
  | 'approvals'
  | 'step'
> {
  // The answers are written straight into one copy of the history, made at its final length: the history stays in
  // the context until the next step (an array grown by push keeps half its length again in spare slots), and a
  // separate array of answers would be garbage at once.
  const before = context.history;
  const length = before.length;
  const history = new Array<Message>(length + calls.length);
  for (let index = 0; index < length; index++) history[index] = before[index] as Message;
  let usage = context.usage;
  const toolCallCounts = { ...context.toolCallCounts };
  const callSignatures = { ...context.callSignatures };
  let degradedTools = context.degradedTools;
  let toolCallsRun = context.toolCallsRun;
  // The same calls the policy decided on, usually: their signatures were computed then.
  const signatures = toolCallSignatures(calls);
  // Each member read once into a local (this runs in V8's baseline tiers for a while, where each property read is
  // an inline-cache call).
  const count = calls.length;
  for (let index = 0; index < count; index++) {
    const call = calls[index] as ToolCall;
    const { id, name } = call;
    // The runner reports in call order; look further only if it did not.
    const inOrder = results[index];
    const result = inOrder?.callId === id ? inOrder : results.find((r) => r.callId === id);
    if (result === undefined)
      history[length + index] = {
        role: 'tool',
        toolCallId: id,
        name,
        content: 'Not run: the tool runner returned no result for this call.',
        isError: true,
      };
    else {
      history[length + index] = {
        role: 'tool',
        toolCallId: id,
        name,
        content: result.content ?? 'Not run: the tool runner returned no result for this call.',
        isError: result.isError,
      };
      if (result.executed) toolCallsRun += 1;
      if (result.degraded && !degradedTools.includes(name)) degradedTools = [...degradedTools, name];
      const spend = result.spend;
      if (spend) usage = { ...usage, nested: addSpend(usage.nested, spend) };
    }
    addCount(toolCallCounts, name);
    addCount(callSignatures, signatures[index] as string);
  }
  return {
    history,
    toolCallCounts,
    callSignatures,
    degradedTools,
    toolCallsRun,
    usage,
    openCalls,
    decision,
    approvals,
    step: nestedSteps ? context.step + nestedSteps : context.step,
  };
}

/** The guardrail block an event carries: a check's answer, a block during a model call, or a tool batch's. */
function blockOf(event: AgentEvent): GuardrailBlock | undefined {
  if (event.type === 'guardrails.done') return event.blocked;
  if (event.type === 'guardrail.blocked') return event.block;
  if (event.type === 'tools.done') return event.results.find((result) => result.blocked)?.blocked;
  return undefined;
}

/** What stands in the history for an answer an output guardrail blocked: the text itself is not kept. */
function withheldAnswer(context: AgentContext, block: GuardrailBlock): Message[] {
  const last = context.history[context.history.length - 1];
  if (last?.role !== 'assistant') return context.history;
  return [
    ...context.history.slice(0, -1),
    { ...last, content: `(answer withheld: blocked by guardrail "${block.name}")` },
  ];
}

export const agentMachine = setup({
  types: {
    context: {} as AgentContext,
    events: {} as AgentEvent,
    input: {} as AgentMachineInput,
    output: {} as AgentMachineOutput,
    emitted: {} as EffectCommand,
  },
  guards: {
    hasTools: ({ context }) => context.config.toolNames.length > 0,
    /** A fresh run (no model call yet) of an agent with blocking input guardrails. */
    checksInput: ({ context }) => context.config.guardrails.input && context.modelCalls === 0,
    checksOutput: ({ context }) => context.config.guardrails.output,
    guardrailBlocked: ({ event }) => event.type === 'guardrails.done' && event.blocked !== undefined,
    toolGuardrailBlocked: ({ context, event }) =>
      context.config.guardrails.tools &&
      event.type === 'tools.done' &&
      event.results.some((result) => result.blocked !== undefined),
    /**
     * A fresh run starts at step 0 (maxSteps is at least 1): only a resume from a checkpoint taken after the last
     * step (in the final-output phase) starts at the limit.
     */
    resumedAtStepLimit: ({ context }) =>
      context.config.toolNames.length > 0 && stepLimitReached(context.step, context.config.limits.maxSteps),
    /** The step limit, counting the steps the event being handled adds (the limit check follows every step). */
    stepLimitReached: ({ context, event }) =>
      stepLimitReached(stepsAfter(context, event), context.config.limits.maxSteps),
    finalAnswerOnMaxSteps: ({ context }) => context.config.limits.finalAnswerOnMaxSteps,
    /** The policy refused the turn's calls at a tool-call limit, and the limits ask for one last answer then. */
    answersAtToolCallLimit: ({ context, event }) => {
      if (!context.config.limits.finalAnswerOnToolLimits) return false;
      const decision = responseDecision(context, event);
      return decision?.kind === 'terminate' && isToolCallLimit(decision.reason);
    },
    // The tool-use policy's decisions on the response being handled (model.response in toolUse.callingModel).
    decidedToRunTools: ({ context, event }) =>
      responseDecision(context, event)?.kind === 'continue_with_tools',
    /** The tool gate let a handoff call through: the agent hands the conversation off. */
    handsOff: ({ context, event }) => {
      if (event.type !== 'tools.done') return false;
      // The results first: the usual batch has no handoff result, and then the turn's calls are not searched.
      const { results } = event;
      for (let index = 0; index < results.length; index++) {
        const result = results[index] as ToolOutcome;
        if (result.handoff !== true) continue;
        const call = handoffCallOf(context);
        if (call === undefined) return false;
        if (result.callId === call.id) return true;
      }
      return false;
    },
    resumingTools: ({ context }) =>
      context.openCalls.length > 0 && context.decision?.kind === 'continue_with_tools',
    resumingApproval: ({ context }) =>
      context.openCalls.length > 0 &&
      context.approvals !== null &&
      context.approvals.decided.length < context.approvals.pending.length,
    resumingFinalOutput: ({ context }) => context.config.resumePhase === 'finalOutput',
    waitsForPeople: ({ event }) => event.type === 'tools.done' && (event.pending?.length ?? 0) > 0,
    /** A decision on a call that still waits (a decision for another call, or a second one, is ignored). */
    decidesPendingCall: ({ context, event }) =>
      event.type === 'approval.decided' &&
      context.approvals !== null &&
      context.approvals.pending.some((pending) => pending.callId === event.callId) &&
      !context.approvals.decided.some((decided) => decided.callId === event.callId),
    decidesLastPendingCall: ({ context, event }) =>
      event.type === 'approval.decided' &&
      context.approvals !== null &&
      context.approvals.decided.length + 1 === context.approvals.pending.length,
    decidedToThink: ({ context, event }) => responseDecision(context, event)?.kind === 'continue_thinking',
    /**
     * A final-output call the provider paused (pause_turn): it is continued within the step limit, never taken as
     * the answer; at the limit the run stops with max_steps.
     */
    pausedTurn: ({ event }) => event.type === 'model.response' && event.response.stopReason === 'pause_turn',
    pausedTurnWithinLimit: ({ context, event }) =>
      event.type === 'model.response' &&
      event.response.stopReason === 'pause_turn' &&
      !stepLimitReached(context.step + 1, context.config.limits.maxSteps),
    decidedToStop: ({ context, event }) => {
      const decision = responseDecision(context, event);
      return decision?.kind === 'terminate' && decision.reason !== 'error';
    },
    decidedToFail: ({ context, event }) => {
      const decision = responseDecision(context, event);
      return decision?.kind === 'terminate' && decision.reason === 'error';
    },
    /** Text answer accepted as is: the agent has no schema, or the text already decodes against it. */
    outputAccepted: ({ context, event }) =>
      responseDecision(context, event)?.kind === 'terminate_with_output' &&
      (!context.config.hasOutputSchema || (event.type === 'model.response' && event.decoded?.ok === true)),
    /** The model refused (or a content filter stopped it): what it said is an answer the output checks cover. */
    modelRefused: ({ event }) =>
      event.type === 'model.response' &&
      (event.response.stopReason === 'refusal' || event.response.stopReason === 'content_filter'),
    refused: ({ context }) =>
      context.decision?.kind === 'terminate' && context.decision.reason === 'guardrail_blocked',
    decoded: ({ context }) => context.answer.decodeError === null,
    decodeRetriesLeft: ({ context }) =>
      decodeRetriesLeft(context.retryCount, context.config.limits.maxDecodeRetries),
  },
  actions: {
    requestModel: emit(({ context }) => {
      // Each member read once: every tool step makes this command, in V8's baseline tiers for a while, where each
      // property read is an inline-cache call.
      const { config, degradedTools, modelCalls } = context;
      const toolsEnabled = degradedTools.length < config.toolNames.length;
      return {
        type: 'model.call' as const,
        phase: 'toolUse' as const,
        call: modelCalls + 1,
        step: context.step + 1,
        toolsEnabled,
        // While tools are on the output schema is not sent (it is for the final phase); an agent whose every tool
        // degraded is treated as tool-less.
        schemaEnabled: config.hasOutputSchema && !toolsEnabled,
        history: context.history,
        disabledTools: degradedTools,
        checkInput: config.guardrails.parallelInput && modelCalls === 0,
      };
    }),
    requestFinalOutput: emit(({ context }) => ({
      type: 'model.call' as const,
      phase: 'finalOutput' as const,
      call: context.modelCalls + 1,
      step: context.step,
      toolsEnabled: false,
      schemaEnabled: context.config.hasOutputSchema,
      history: context.history,
      disabledTools: context.degradedTools,
      checkInput: context.config.guardrails.parallelInput && context.modelCalls === 0,
    })),
    requestInputCheck: emit(({ context }) => {
      const text = lastUserText(context.history);
      return { type: 'guardrails.check' as const, stage: 'input' as const, call: 0, value: text, text };
    }),
    requestOutputCheck: emit(({ context }) => ({
      type: 'guardrails.check' as const,
      stage: 'output' as const,
      call: context.modelCalls,
      value: context.answer.outputDecoded ? context.answer.output : context.answer.text,
      text: context.answer.text,
    })),
    /**
     * A guardrail blocked: the run stops with guardrail_blocked, naming it. A call cancelled by a block counts as
     * made, with its usage when it had finished; what it had said is not kept.
     */
    stopGuardrailBlocked: assign(({ context, event }) => {
      const block = blockOf(event);
      if (!block) return {};
      const patch: Partial<AgentContext> = {
        ...stopPatch(context, 'guardrail_blocked', blockedMessage(block)),
        guardrail: block,
      };
      if (event.type === 'guardrail.blocked') {
        patch.answer = noAnswer;
        if (event.modelCalled) patch.modelCalls = context.modelCalls + 1;
        if (event.usage) patch.usage = withOwnUsage(context.usage, event.usage);
      }
      return patch;
    }),
    /** An output guardrail blocked the final answer: neither its text nor its decoded output is kept. */
    withholdAnswer: assign(({ context }) =>
      context.guardrail ? { history: withheldAnswer(context, context.guardrail), answer: noAnswer } : {},
    ),
    requestTools: emit(({ context }) => ({
      type: 'tools.run' as const,
      step: context.step,
      calls: gatedCalls(context),
      disabledTools: context.degradedTools,
      decisions: context.approvals?.decided ?? noDecisions,
    })),
    requestApproval: emit(({ context }) => ({
      type: 'approval.wait' as const,
      step: context.step,
      calls: context.openCalls,
      pending: context.approvals?.pending ?? [],
    })),
    /** Records the calls that ran and keeps the ones waiting for people open. */
    recordWaitingResults: assign(({ context, event }) => {
      if (event.type !== 'tools.done' || !event.pending) return {};
      const waiting = new Set(event.pending.map((pending) => pending.callId));
      const answered = gatedCalls(context).filter((call) => !waiting.has(call.id));
      return toolResultsPatch(
        context,
        answered,
        event.results,
        context.openCalls.filter((call) => !answered.includes(call)),
        context.decision,
        { pending: event.pending, decided: [] },
        event.nestedSteps,
      );
    }),
    recordApprovalDecision: assign(({ context, event }) => {
      if (event.type !== 'approval.decided' || context.approvals === null) return {};
      return {
        approvals: {
          pending: context.approvals.pending,
          decided: [...context.approvals.decided, { callId: event.callId, decision: event.decision }],
        },
      };
    }),
    failOnEffects: assign(({ context, event }) => {
      if (event.type !== 'effects.failed') return {};
      return { ...stopPatch(context, 'error', event.error.message), error: event.error };
    }),
    recordToolUseResponse: assign(({ context, event }) => {
      if (event.type !== 'model.response') return {};
      const { response } = event;
      const decision = takeDecision(context, event);
      let history = appendAssistant(context, response, true);
      let openCalls: ToolCall[] = response.toolCalls;
      if (decision.kind === 'continue_with_tools') openCalls = decision.calls;
      else if (decision.kind !== 'terminate' && response.toolCalls.length > 0) {
        // The policy took the text as the answer (e.g. stop_sequence) although calls were asked for: answer them
        // at once so the history stays valid (every call answered exactly once).
        history = [
          ...history,
          ...answerUnrunCalls(
            response.toolCalls,
            `the turn ended with stop reason ${response.stopReason ?? 'none'}`,
          ),
        ];
        openCalls = [];
      }
      return {
        history,
        step: context.step + 1,
        modelCalls: context.modelCalls + 1,
        usage: withOwnUsage(context.usage, response.usage),
        decision,
        openCalls,
        answer: answerOf(
          continuedTurnText(context, answerTextOf(response)),
          decision.kind === 'terminate_with_output' && decision.truncated,
          event.decoded,
        ),
      };
    }),
    /** A paused final-output call: kept in the history as it came, to be sent back and continued. */
    recordPausedTurn: assign(({ context, event }) => {
      if (event.type !== 'model.response') return {};
      const { response } = event;
      return {
        history: appendAssistant(context, response, false),
        step: context.step + 1,
        modelCalls: context.modelCalls + 1,
        usage: withOwnUsage(context.usage, response.usage),
        decision: { kind: 'continue_thinking' as const, continuesTurn: true },
        answer: answerOf(continuedTurnText(context, answerTextOf(response)), false, undefined),
      };
    }),
    recordFinalResponse: assign(({ context, event }) => {
      if (event.type !== 'model.response') return {};
      const { response } = event;
      const refused = response.stopReason === 'refusal' || response.stopReason === 'content_filter';
      // Without a schema any text is the answer; with one, an undecoded reply counts as a failed decode.
      const decoded: DecodeOutcome =
        event.decoded ??
        (context.config.hasOutputSchema
          ? { ok: false, error: 'The reply was not decoded.' }
          : { ok: true, value: response.text });
      return {
        // Tools are off in this phase: a stray tool call is dropped so no call is left unanswered.
        history: appendAssistant(context, response, false),
        modelCalls: context.modelCalls + 1,
        usage: withOwnUsage(context.usage, response.usage),
        decision: refused
          ? {
              kind: 'terminate' as const,
              reason: 'guardrail_blocked' as const,
              message: `The model refused to answer${response.refusal ? `: ${response.refusal}` : '.'}`,
            }
          : {
              kind: 'terminate_with_output' as const,
              text: response.text,
              truncated: response.stopReason === 'max_tokens',
            },
        answer: {
          text: continuedTurnText(context, answerTextOf(response)),
          truncated: response.stopReason === 'max_tokens',
          output: decoded.ok && context.config.hasOutputSchema ? decoded.value : null,
          outputDecoded: decoded.ok && context.config.hasOutputSchema,
          decodeError: decoded.ok ? null : decoded.error,
        },
      };
    }),
    recordDecodeRetry: assign(({ context }) => ({
      retryCount: context.retryCount + 1,
      history: [
        ...context.history,
        {
          role: 'user' as const,
          content: `Your answer could not be used. ${context.answer.decodeError ?? ''}\nReply again with only the JSON value, no prose and no code fence.`,
        },
      ],
    })),
    recordToolResults: assign(({ context, event }) => {
      if (event.type !== 'tools.done') return {};
      const handoff = handoffCallOf(context);
      if (handoff) {
        // The gate refused the handoff: the model reads why, and the turn's other calls were not run.
        const patch = toolResultsPatch(context, [handoff], event.results, [], null, null, undefined);
        const target = ownValue(context.config.handoffTools, handoff.name) as string;
        const others = context.openCalls.filter((open) => open !== handoff);
        if (others.length > 0)
          patch.history.push(
            ...answerUnrunCalls(
              others,
              `the handoff to ${target} asked for in the same turn did not happen; call it again if it is still needed`,
            ),
          );
        return patch;
      }
      return toolResultsPatch(context, context.openCalls, event.results, [], null, null, event.nestedSteps);
    }),
    recordModelError: assign(({ context, event }) => {
      if (event.type !== 'model.error') return {};
      return {
        stopReason: 'error' as const,
        error: event.error,
        modelCalls: context.modelCalls + 1,
        history:
          context.openCalls.length > 0
            ? [...context.history, ...answerUnrunCalls(context.openCalls, 'the model call failed')]
            : context.history,
        openCalls: [],
      };
    }),
    stopOnDecision: assign(({ context }) =>
      context.decision?.kind === 'terminate'
        ? stopPatch(context, context.decision.reason, context.decision.message)
        : {},
    ),
    completeWithOutput: assign(({ context }) => ({
      stopReason:
        context.forcedFinalAnswer !== false
          ? context.forcedFinalAnswer
          : context.degradedTools.length > 0
            ? ('tool_failure_degraded' as const)
            : ('completed' as const),
    })),
    markForcedFinalAnswer: assign({ forcedFinalAnswer: 'max_steps' as const }),
    /**
     * A tool-call limit refused the turn's calls: each is answered with the limit (every call answered exactly once),
     * and the last answer, asked for with tools off, ends the run with the limit as its stop reason.
     */
    refuseCallsAtToolCallLimit: assign(({ context }) => {
      const decision = context.decision;
      if (decision?.kind !== 'terminate' || !isToolCallLimit(decision.reason)) return {};
      return {
        history: [
          ...context.history,
          ...answerUnrunCalls(
            context.openCalls,
            `${decision.message} No more tools can run: answer with what you have.`,
          ),
        ],
        openCalls: [],
        forcedFinalAnswer: decision.reason,
      };
    }),
    /**
     * The gate let the turn's handoff call through: it stays open for the session, which answers it (accepted or
     * refused); the turn's other calls are answered as not run.
     */
    recordHandoff: assign(({ context }) => {
      const call = handoffCallOf(context) as ToolCall;
      const target = ownValue(context.config.handoffTools, call.name) as string;
      const others = context.openCalls.filter((open) => open !== call);
      return {
        approvals: null,
        handoff: { target, call },
        history:
          others.length > 0
            ? [
                ...context.history,
                ...answerUnrunCalls(others, `the conversation was handed off to ${target}`),
              ]
            : context.history,
        openCalls: [call],
      };
    }),
    stopMaxSteps: assign(({ context }) => stopPatch(context, 'max_steps', null)),
    stopDecodeFailed: assign(({ context }) =>
      stopPatch(
        context,
        'decode_failed',
        `The final answer did not decode after ${context.retryCount + 1} attempt(s): ${context.answer.decodeError ?? ''}`,
      ),
    ),
    stopAborted: assign(({ context, event }) =>
      stopPatch(
        context,
        'aborted',
        event.type === 'abort' && event.reason ? event.reason : 'the run was aborted',
      ),
    ),
    stopTimedOut: assign(({ context }) => stopPatch(context, 'timed_out', 'the run timed out')),
    stopBudgetExhausted: assign(({ context, event }) =>
      stopPatch(
        context,
        'budget_exhausted',
        event.type === 'model.denied' ? event.message : 'budget exhausted',
      ),
    ),
  },
}).createMachine({
  id: 'agent',
  options: { maxIterations: 1000 },
  context: ({ input }) => ({
    config: {
      sessionId: input.sessionId,
      agent: input.agent,
      limits: input.limits,
      toolNames: input.toolNames,
      hasOutputSchema: input.hasOutputSchema,
      baseLength: input.baseLength,
      handoffTools: input.handoffTools ?? noRecord,
      resumePhase: input.resume?.phase ?? 'toolUse',
      guardrails: input.guardrails ?? noGuardrails,
    },
    history: input.history,
    step: 0,
    modelCalls: 0,
    retryCount: 0,
    toolCallsRun: 0,
    toolCallCounts: noCounts,
    callSignatures: noCounts,
    degradedTools: noTools,
    usage: emptyUsage,
    decision: null,
    openCalls: [],
    answer: noAnswer,
    forcedFinalAnswer: false,
    stopReason: null,
    error: null,
    handoff: null,
    approvals: null,
    guardrail: null,
    ...(input.resume ? resumedFrom(input.resume) : {}),
  }),
  initial: 'running',
  states: {
    running: {
      on: {
        abort: { target: 'stopped', actions: 'stopAborted' },
        timeout: { target: 'stopped', actions: 'stopTimedOut' },
        'effects.failed': { target: 'failed', actions: 'failOnEffects' },
      },
      initial: 'starting',
      states: {
        // The run's entry, or a resume from a checkpoint (open calls, or a resume at the step limit).
        starting: {
          always: [
            // Input guardrails first, before anything is asked of the model (also after a crash while checking).
            { guard: 'checksInput', target: 'checkingInput' },
            { guard: 'resumingApproval', target: 'toolUse.awaitingApproval' },
            { guard: 'resumingTools', target: 'toolUse.runningTools' },
            { guard: 'resumingFinalOutput', target: 'finalOutput' },
            // At the step limit, the optional last answer with tools off; the stop reason stays max_steps.
            {
              guard: and(['resumedAtStepLimit', 'finalAnswerOnMaxSteps']),
              target: 'finalOutput',
              actions: 'markForcedFinalAnswer',
            },
            {
              guard: 'resumedAtStepLimit',
              target: '#agent.stopped',
              actions: 'stopMaxSteps',
            },
            { guard: 'hasTools', target: 'toolUse' },
            { target: 'finalOutput' },
          ],
        },
        /** The blocking input guardrails check the run's input; a block ends the run before any model call. */
        checkingInput: {
          entry: 'requestInputCheck',
          on: {
            'guardrails.done': [
              { guard: 'guardrailBlocked', target: '#agent.stopped', actions: 'stopGuardrailBlocked' },
              { guard: 'hasTools', target: 'toolUse' },
              { target: 'finalOutput' },
            ],
          },
        },
        /** The output guardrails check the final answer (its text, or its decoded output) before it is returned. */
        checkingOutput: {
          entry: 'requestOutputCheck',
          on: {
            'guardrails.done': [
              {
                guard: 'guardrailBlocked',
                target: '#agent.stopped',
                actions: ['stopGuardrailBlocked', 'withholdAnswer'],
              },
              // A refusal that passed its check still ends the run as the refusal it is.
              { guard: 'refused', target: '#agent.stopped', actions: 'stopOnDecision' },
              { target: '#agent.completed', actions: 'completeWithOutput' },
            ],
          },
        },
        toolUse: {
          initial: 'callingModel',
          states: {
            callingModel: {
              entry: 'requestModel',
              on: {
                // The policy's decision on the response picks the transition (the guards compute it, once).
                'model.response': [
                  // A refusal is an answer too: the output guardrails check it before anyone reads it.
                  {
                    guard: and(['checksOutput', 'modelRefused']),
                    target: '#agent.running.checkingOutput',
                    actions: 'recordToolUseResponse',
                  },
                  // The usual turn, asked first: the three below need a 'terminate' decision, so the order among
                  // these four does not change which is taken.
                  { guard: 'decidedToRunTools', target: 'runningTools', actions: 'recordToolUseResponse' },
                  // A tool-call limit refused the calls: one last answer with tools off, unless the limits say no.
                  {
                    guard: 'answersAtToolCallLimit',
                    target: '#agent.running.finalOutput',
                    actions: ['recordToolUseResponse', 'refuseCallsAtToolCallLimit'],
                  },
                  {
                    guard: 'decidedToStop',
                    target: '#agent.stopped',
                    actions: ['recordToolUseResponse', 'stopOnDecision'],
                  },
                  {
                    guard: 'decidedToFail',
                    target: '#agent.failed',
                    actions: ['recordToolUseResponse', 'stopOnDecision'],
                  },
                  // Thinking only: another call, unless this response used the last step.
                  {
                    guard: and(['decidedToThink', 'stepLimitReached', 'finalAnswerOnMaxSteps']),
                    target: '#agent.running.finalOutput',
                    actions: ['recordToolUseResponse', 'markForcedFinalAnswer'],
                  },
                  {
                    guard: and(['decidedToThink', 'stepLimitReached']),
                    target: '#agent.stopped',
                    actions: ['recordToolUseResponse', 'stopMaxSteps'],
                  },
                  {
                    guard: 'decidedToThink',
                    target: 'callingModel',
                    reenter: true,
                    actions: 'recordToolUseResponse',
                  },
                  {
                    guard: and(['checksOutput', 'outputAccepted']),
                    target: '#agent.running.checkingOutput',
                    actions: 'recordToolUseResponse',
                  },
                  {
                    guard: 'outputAccepted',
                    target: '#agent.completed',
                    actions: ['recordToolUseResponse', 'completeWithOutput'],
                  },
                  { target: '#agent.running.finalOutput', actions: 'recordToolUseResponse' },
                ],
                'model.error': { target: '#agent.failed', actions: 'recordModelError' },
                'model.denied': { target: '#agent.stopped', actions: 'stopBudgetExhausted' },
                'guardrail.blocked': { target: '#agent.stopped', actions: 'stopGuardrailBlocked' },
              },
            },
            runningTools: {
              entry: 'requestTools',
              on: {
                // The results count toward the limits at once: the next call, or the end at the step limit.
                'tools.done': [
                  // A tool guardrail blocked a call: the results are recorded (the blocked one answered as such).
                  {
                    guard: 'toolGuardrailBlocked',
                    target: '#agent.stopped',
                    actions: ['recordToolResults', 'stopGuardrailBlocked'],
                  },
                  // Some calls wait for people: the others are answered, the run pauses in awaitingApproval.
                  { guard: 'waitsForPeople', target: 'awaitingApproval', actions: 'recordWaitingResults' },
                  // A handoff call passed the gate: the session moves the conversation on (or refuses).
                  { guard: 'handsOff', target: '#agent.handingOff', actions: 'recordHandoff' },
                  {
                    guard: and(['stepLimitReached', 'finalAnswerOnMaxSteps']),
                    target: '#agent.running.finalOutput',
                    actions: ['recordToolResults', 'markForcedFinalAnswer'],
                  },
                  {
                    guard: 'stepLimitReached',
                    target: '#agent.stopped',
                    actions: ['recordToolResults', 'stopMaxSteps'],
                  },
                  { target: 'callingModel', actions: 'recordToolResults' },
                ],
              },
            },
            /**
             * Tool calls wait for people (an approval, or an answer to a question). The pause is persisted; each
             * decision is recorded, and once every waiting call is decided the batch runs again: approved calls run,
             * rejected ones are answered with the reason, questions with the answer.
             */
            awaitingApproval: {
              entry: 'requestApproval',
              on: {
                'approval.decided': [
                  {
                    guard: and(['decidesPendingCall', 'decidesLastPendingCall']),
                    target: 'runningTools',
                    actions: 'recordApprovalDecision',
                  },
                  { guard: 'decidesPendingCall', actions: 'recordApprovalDecision' },
                ],
              },
            },
          },
        },
        finalOutput: {
          initial: 'callingModel',
          states: {
            callingModel: {
              entry: 'requestFinalOutput',
              on: {
                'model.response': [
                  {
                    guard: 'pausedTurnWithinLimit',
                    target: 'callingModel',
                    reenter: true,
                    actions: 'recordPausedTurn',
                  },
                  {
                    guard: 'pausedTurn',
                    target: '#agent.stopped',
                    actions: ['recordPausedTurn', 'stopMaxSteps'],
                  },
                  { target: 'decoding', actions: 'recordFinalResponse' },
                ],
                'model.error': { target: '#agent.failed', actions: 'recordModelError' },
                'model.denied': { target: '#agent.stopped', actions: 'stopBudgetExhausted' },
                'guardrail.blocked': { target: '#agent.stopped', actions: 'stopGuardrailBlocked' },
              },
            },
            decoding: {
              always: [
                { guard: and(['checksOutput', 'refused']), target: '#agent.running.checkingOutput' },
                { guard: 'refused', target: '#agent.stopped', actions: 'stopOnDecision' },
                { guard: and(['checksOutput', 'decoded']), target: '#agent.running.checkingOutput' },
                { guard: 'decoded', target: '#agent.completed', actions: 'completeWithOutput' },
                { guard: 'decodeRetriesLeft', target: 'callingModel', actions: 'recordDecodeRetry' },
                { target: '#agent.stopped', actions: 'stopDecodeFailed' },
              ],
            },
          },
        },
      },
    },
    completed: { type: 'final' },
    stopped: { type: 'final' },
    failed: { type: 'final' },
    /**
     * The model took a handoff tool and the tool gate let the call through (its arguments, the permission policy,
     * a person's approval): the session moves the conversation to the target (or refuses).
     */
    handingOff: { type: 'final' },
  },
  output: ({ context }) => agentOutputOf(context),
});

export type AgentMachine = typeof agentMachine;
