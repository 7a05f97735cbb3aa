import type { AbortWaiters } from '../core/abort.ts';
import type { ApprovalRequest } from '../core/approvals.ts';
import type { ToolCall } from '../core/messages.ts';
import type { AgentContext, AgentEvent, EffectCommand, ToolOutcome } from '../machines/agent.ts';
import {
  type ClassifiedCalls,
  classifyCalls,
  type DecidedOutcomes,
  needsClassifying,
} from './approval-check.ts';
import type { EffectsHost } from './effects.ts';
import { checkGuardrails } from './guardrail-checks.ts';
import { guardrailPlace } from './guardrail-stage.ts';
import { checkPermission } from './permission-check.ts';
import { emitFrom, type RunRuntime } from './run-runtime.ts';
import { redactArgs, secretKeysOf, toolCallEventData } from './secrets.ts';
import { type BatchListener, startToolBatch, type ToolBatch, type ToolGuardrails } from './tool-runner.ts';

/**
 * The tool gate: one batch of tool calls. Each call is classified first (its arguments checked against the schema
 * once, the agent's permissions asked, people's decisions applied, calls that need a person set aside), then the
 * runnable ones run (timeouts, retries, breakers, tool guardrails), and the batch is answered by one `tools.done`.
 * Its events (`permission`, `tool_call`, `tool_response`, `tool_retry`, `breaker`) leave from here.
 */

type ToolsCommand = Extract<EffectCommand, { type: 'tools.run' }>;

/** Runs a `tools.run` command's batch and answers it with one `tools.done`. */
export function runTools(host: EffectsHost, runtime: RunRuntime, command: ToolsCommand): void {
  // Tools listed at run time (MCP servers) are listed before the calls are looked up: a session recovered after a
  // restart runs the calls that were in flight before any model call of this process has listed them. A source
  // that cannot be listed leaves its calls unknown; the next model call reports why.
  const tools = runtime.agent.tools;
  // The usual batch (no source to list, no permission policy, no decisions, no tool that asks people) runs as it
  // is, from here: one function fewer per step, each compiled on its own some 500 steps after its first call.
  if (
    tools.sources.length === 0 &&
    !runtime.agent.permissions &&
    !needsClassifying(tools, command.calls, command.decisions)
  ) {
    runBatch(host, runtime, command, undefined);
    return;
  }
  prepareAndRun(host, runtime, command);
}

/**
 * The batch of a run whose tools are listed at run time, or whose calls need classifying. Apart from `runTools`:
 * the callback here holds the call's variables, and a function whose closures hold its variables makes a scope for
 * them at every call, whichever branch it takes.
 */
function prepareAndRun(host: EffectsHost, runtime: RunRuntime, command: ToolsCommand): void {
  const tools = runtime.agent.tools;
  const preparing =
    tools.sources.length === 0
      ? undefined
      : tools.prepare({
          sessionId: sessionIdOf(runtime),
          signal: host.signal,
          context: runtime.context,
          hold: runtime.holdings?.hold,
        });
  if (preparing === undefined) classifyAndRun(host, runtime, command);
  else {
    const run = () => {
      if (!host.closed) classifyAndRun(host, runtime, command);
    };
    preparing.then(run, run);
  }
}

/** The session id tools see (the user's). */
function sessionIdOf(runtime: RunRuntime): string {
  return runtime.sessionId ?? runtime.bus.sessionId;
}

function classifyAndRun(host: EffectsHost, runtime: RunRuntime, command: ToolsCommand): void {
  const durable = runtime.durable;
  const registry = runtime.agent.tools;
  // The usual batch (no permission policy, no decisions, no tool that asks people) runs as it is: nothing to sort,
  // no place to build, no closures.
  if (!runtime.agent.permissions && !needsClassifying(registry, command.calls, command.decisions)) {
    runBatch(host, runtime, command, undefined);
    return;
  }
  // Calls people decided on are answered from the decision; undecided calls that need a person wait.
  // Written out rather than spread: this runs once per tool step, and a spread copies through a slower path.
  const classified = classifyCalls(registry, command.calls, command.decisions, {
    sessionId: sessionIdOf(runtime),
    route: runtime.route ?? runtime.agent.name,
    turn: runtime.turn ?? 1,
    step: command.step,
    agent: runtime.agent.name,
    context: runtime.context,
    replayed: (call) => durable?.replayTool(command.step, call.id),
    permit: runtime.agent.permissions ? (call) => checkPermission(runtime, call) : undefined,
  });
  if (classified instanceof Promise)
    void classified.then((sorted) => runBatch(host, runtime, command, sorted));
  else runBatch(host, runtime, command, classified);
}

/** Runs the batch; `classified` is undefined for the usual batch, whose calls all run as they are. */
function runBatch(
  host: EffectsHost,
  runtime: RunRuntime,
  command: ToolsCommand,
  classified: ClassifiedCalls | undefined,
): void {
  if (host.closed) return;
  if (classified) {
    for (const verdict of classified.permissions) emitFrom(runtime, 'permission', verdict);
    emitDecided(runtime, classified.decided);
  }
  // A long run keeps one batch object: a step reuses the run's last one once it is over (same run, same effects),
  // and sets only what the step changes.
  let batch = runtime.toolBatch;
  if (batch?.isOverIn(host, runtime)) batch.restart(host, runtime, command, classified);
  else {
    batch = new GatedBatch(host, runtime, command, classified);
    // A session's runtime outlives its runs: a kept batch lets go of its run's effects when its step is over.
    if (command.step >= keptFromStep) runtime.toolBatch = batch;
  }
  startToolBatch(batch, batch);
}

/**
 * The tool step from which a run keeps its batch object between steps. A kept batch is held while the run waits for
 * its model (about 0.2 KB per run in flight): a short run makes one per step instead, a long one saves more per
 * step than it holds.
 */
const keptFromStep = 4;

/**
 * A batch as the tool gate hands it to the runner: the run's place, limits and signal, and what the gate does when a
 * call starts, retries or settles, and when the batch is over. Its callbacks are methods, and what it tells the
 * runner is read from the run when asked: one small object per step, no closures. From a run's 4th tool step on, the
 * next step reuses it once its batch is over (see {@link GatedBatch.restart}): what belongs to the run is set once,
 * what belongs to the step for each step.
 */
export class GatedBatch implements ToolBatch, BatchListener {
  // Plain fields, read on every call of the batch: getters would cost a call each in the early, unoptimized runs.
  // Declared, not defined: the constructor sets each once (a defined field is set twice, by a field initializer
  // and then by the constructor).
  // The step's: set again by each step that reuses the batch.
  declare calls: readonly ToolCall[];
  declare checked: ClassifiedCalls['checked'] | undefined;
  declare disabled: readonly string[];
  declare step: number;
  // Where the step sits, as it was when it started: a session's next turn may change what its runtime says.
  declare sessionId: string;
  declare route: string;
  declare turn: number;
  /** The start of the step's idempotency keys, made again only when the session or turn changed. */
  declare keyPrefix: string | undefined;
  declare context: unknown;
  // The run's: the same for every step of the run (its agent, its effects).
  declare readonly registry: ToolBatch['registry'];
  declare readonly concurrency: number;
  declare readonly timeoutMs: number | null;
  declare readonly maxRetries: number;
  declare readonly callPath: string;
  declare readonly caller: RunRuntime;
  declare readonly agent: string;
  declare readonly signal: AbortSignal;
  // The run's effects, while a step is in progress (undefined between steps: nothing keeps a finished run's).
  declare abortWaiters: AbortWaiters | undefined;
  declare ended: EffectsHost | undefined;
  declare readonly clock: ToolBatch['clock'];
  declare readonly executor: ToolBatch['executor'];
  declare readonly guardrails: ToolGuardrails | undefined;
  declare private host: EffectsHost | undefined;
  declare private readonly runAgent: RunRuntime['agent'];
  declare private classified: ClassifiedCalls | undefined;
  /** Whether the step's batch is over (`batchDone` was called): only then may the run's next step reuse it. */
  declare private over: boolean;
  declare private breakerReport: ToolBatch['onBreaker'];
  /** Outcomes known without running the call ({@link GatedBatch.knownOutcome}), when the step can have any. */
  declare known: ToolBatch['known'];

  constructor(
    host: EffectsHost,
    runtime: RunRuntime,
    command: ToolsCommand,
    classified: ClassifiedCalls | undefined,
  ) {
    const agent = runtime.agent;
    const limits = agent.limits;
    this.registry = agent.tools;
    this.concurrency = limits.toolConcurrency;
    this.timeoutMs = limits.toolTimeoutMs;
    this.maxRetries = limits.maxToolRetries;
    this.callPath = runtime.callPath ?? '';
    this.caller = runtime;
    this.agent = agent.name;
    this.signal = host.signal;
    this.clock = runtime.clock;
    this.executor = runtime.runEffect;
    this.guardrails = toolGuardrailsOf(runtime, host.signal);
    this.runAgent = agent;
    this.restart(host, runtime, command, classified);
    this.breakerReport = undefined;
  }

  /**
   * Whether the run's next step may reuse this batch: its own batch is over (no call of it runs or reports any
   * more: each settled, or the run's signal aborted, and then its effects are closed and no step follows), and the
   * step runs in the same run, with the same effects (their signal is theirs alone) and agent: everything the
   * constructor read once.
   */
  isOverIn(host: EffectsHost, runtime: RunRuntime): boolean {
    return (
      this.over && this.caller === runtime && this.runAgent === runtime.agent && this.signal === host.signal
    );
  }

  /** Sets what belongs to the step (the first one from the constructor) and makes the batch run. */
  restart(
    host: EffectsHost,
    runtime: RunRuntime,
    command: ToolsCommand,
    classified: ClassifiedCalls | undefined,
  ): void {
    this.host = host;
    this.abortWaiters = host.abortWaiters;
    // The effects abort their signal themselves, right after they are closed: the runner reads `closed` instead.
    this.ended = host;
    this.calls = classified ? classified.runnable : command.calls;
    this.checked = classified?.checked;
    this.disabled = command.disabledTools;
    this.step = command.step;
    const sessionId = runtime.sessionId ?? runtime.bus.sessionId;
    const turn = runtime.turn ?? 1;
    if (this.keyPrefix === undefined || sessionId !== this.sessionId || turn !== this.turn)
      this.keyPrefix = `${sessionId}:${turn}:`;
    this.sessionId = sessionId;
    this.route = runtime.route ?? this.agent;
    this.turn = turn;
    this.context = runtime.context;
    this.classified = classified;
    // Nothing to ask for the usual step (no decisions, not durable): the runner skips the call.
    this.known = classified !== undefined || runtime.durable ? this.knownOutcome : undefined;
    this.over = false;
  }

  /** The batch is over: the machine gets its results in one `tools.done`. */
  batchDone(results: ToolOutcome[]): void {
    // Over before the answer: the machine may start the run's next step from it.
    const host = this.host as EffectsHost;
    this.over = true;
    this.host = undefined;
    this.abortWaiters = undefined;
    this.ended = undefined;
    const runtime = this.caller;
    const nestedSteps = runtime.nestedSteps;
    runtime.nestedSteps = 0;
    // Reports of calls whose outcomes were not made (the batch was aborted) go nowhere.
    runtime.spentByCall?.clear();
    const event: Extract<AgentEvent, { type: 'tools.done' }> = { type: 'tools.done', results };
    if (nestedSteps > 0) event.nestedSteps = nestedSteps;
    const pending = this.classified?.pending;
    if (pending !== undefined && pending.length > 0) event.pending = pending;
    host.answer(event);
  }

  /** Calls people decided on, and (in a durable run) calls that finished before a restart. */
  knownOutcome(call: ToolCall): ToolOutcome | undefined {
    return this.classified?.decided.get(call.id) ?? this.caller.durable?.replayTool(this.step, call.id);
  }

  onStart(call: ToolCall): void {
    // Listeners see secret arguments redacted; the tool itself gets the real values.
    const runtime = this.caller;
    if (runtime.bus.listening)
      emitFrom(runtime, 'tool_call', toolCallEventData(call, secretKeysOf(runtime.agent)));
  }

  onSettled(call: ToolCall, outcome: ToolOutcome, started: number, last: boolean): void | Promise<void> {
    const runtime = this.caller;
    // A failed `fatal: true` tool fails the agent actor: the session's supervisor decides. Its outcome is not
    // recorded, so a restart runs it again.
    const fatal = outcome.isError && outcome.executed && runtime.agent.tools.find(call.name)?.fatal;
    if (fatal) runtime.onFatal?.({ name: 'FatalToolError', code: 'tool_fatal', message: outcome.content });
    // The clock is read for the duration only when an event shows it.
    if (runtime.bus.listening) emitToolResponse(runtime, call, outcome, this.clock.now() - started);
    const durable = runtime.durable;
    if (!durable || fatal || this.signal.aborted) return;
    try {
      return durable.recordTool(this.step, call.id, outcome, last);
    } catch (error) {
      (this.host as EffectsHost).fail(error);
    }
  }

  /** Made when a breaker first reports (the runner hands it to the breaker as a function). */
  get onBreaker(): ToolBatch['onBreaker'] {
    this.breakerReport ??= breakerReportOf(this.caller);
    return this.breakerReport;
  }

  onRetry(call: ToolCall, attempt: number, error: string): void {
    emitFrom(this.caller, 'tool_retry', { callId: call.id, name: call.name, attempt, error });
  }
}

/**
 * What a breaker's change of state does: an event when someone listens. Made by a call, not stored straight into a
 * property, which V8 would allocate in the old generation, keeping the run reachable after it ends.
 */
function breakerReportOf(runtime: RunRuntime): NonNullable<ToolBatch['onBreaker']> {
  return (change) => {
    if (runtime.bus.listening) emitFrom(runtime, 'breaker', change);
  };
}

/** The requests of an `approval.wait` command, for the store and the events. */
export function approvalRequests(
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

/**
 * The tool guardrails of a batch, checked with the run's signal; none (and nothing made) when the agent has no tool
 * guardrails, whatever other guardrails it has.
 */
function toolGuardrailsOf(runtime: RunRuntime, signal: AbortSignal): ToolGuardrails | undefined {
  const guardrails = runtime.agent.guardrails;
  if (!guardrails || (guardrails.toolInput.length === 0 && guardrails.toolOutput.length === 0))
    return undefined;
  return {
    input: guardrails.toolInput,
    output: guardrails.toolOutput,
    check: (list, stage, value, text, call) =>
      checkGuardrails(
        list,
        value,
        text,
        { ...guardrailPlace(runtime, stage), tool: call.name, callId: call.id },
        signal,
      ),
  };
}
