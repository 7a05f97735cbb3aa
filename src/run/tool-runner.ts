import { isHandoffTool } from '../agent/handoff.ts';
import { type BreakerReporter, type CircuitBreaker, sharedBreaker } from '../breakers/circuit-breaker.ts';
import { type AbortListener, type AbortWaiters, abortError, abortWaitersOf } from '../core/abort.ts';
import type { Clock } from '../core/clock.ts';
import { ToolInputError, ToolTimeoutError } from '../core/errors.ts';
import type { GuardrailBlock } from '../core/guardrail-block.ts';
import type { JsonValue } from '../core/json.ts';
import type { ToolCall } from '../core/messages.ts';
import { reactInvalidReplyTool } from '../core/model.ts';
import type { Guardrail } from '../guardrails/guardrail.ts';
import type { ToolOutcome } from '../machines/agent.ts';
import type { ToolRegistry } from '../tools/registry.ts';
import type { Tool } from '../tools/tool.ts';
import { ToolAnswerError } from '../tools/tool-answer-error.ts';
import { type EffectExecutor, type RunRuntime, takeSpend } from './run-runtime.ts';
import { ToolCallContext } from './tool-call-context.ts';

/** Whether a tool runs an agent (agentTool): such a call is an `agent` effect for durable executors. */
function isAgentTool(found: Tool | undefined): boolean {
  return found !== undefined && Object.hasOwn(found, 'delegate');
}

import type { RunEnd } from './run-end.ts';
import { redactArgs, secretKeySet } from './secrets.ts';

export interface ToolBatch {
  calls: readonly ToolCall[];
  registry: ToolRegistry;
  /** Tools that degraded earlier in the run: answered with an error, not run. */
  disabled: readonly string[];
  concurrency: number;
  timeoutMs: number | null;
  maxRetries: number;
  /** The session id tools see (the user's), and the agent's place and turn in it. */
  sessionId: string;
  route: string;
  turn: number;
  /** Ids of the calls that started this (nested) run, joined by '/', or '' at the top: part of idempotency keys. */
  callPath: string;
  /** `${sessionId}:${turn}:`, the start of every idempotency key of the batch, when its owner keeps it made. */
  keyPrefix?: string | undefined;
  /** The run that calls (agents used as tools find their caller through it); absent outside a run. */
  caller?: RunRuntime | undefined;
  agent: string;
  step: number;
  /** The caller's run context, handed to every tool as `ctx.context`. */
  context?: unknown;
  /** Aborted when the run no longer wants the results (abort, timeout, end of run). */
  signal: AbortSignal;
  /**
   * Says whether `signal` is aborted without asking it, when the batch's owner aborts the signal itself. The batch
   * reads it about six times per call, written out where it is read: a call per read costs more than the read before
   * V8 optimizes the step.
   */
  ended?: RunEnd | undefined;
  /**
   * What waits for `signal`'s abort. Defaults to the signal's own waiters (one listener on the signal); a run's
   * effects, which abort the signal themselves, pass their own (no listener per run).
   */
  abortWaiters?: AbortWaiters | undefined;
  clock: Clock;
  /**
   * Outcomes known without running anything: calls that finished before a restart (replayed from the journal) and
   * calls people rejected or answered. Their call is not started and no event is emitted for it.
   */
  known?: ((call: ToolCall) => ToolOutcome | undefined) | undefined;
  /** A call is about to run (its first attempt starts). Called in call order. */
  onStart: (call: ToolCall) => void;
  /**
   * A call finished (after its retries). The batch waits for what this returns before counting the call as done:
   * a durable session commits the outcome here, so it is never run again after a crash.
   */
  /**
   * `started`: the batch clock's time when the call started (its duration is the clock's time now less this, read
   * only by an owner that reports it). `last`: no other call of the batch is still running (what follows is the
   * agent's next step).
   */
  onSettled: (call: ToolCall, outcome: ToolOutcome, started: number, last: boolean) => void | Promise<void>;
  onRetry: (call: ToolCall, attempt: number, error: string) => void;
  /** A tool's circuit breaker changed state during one of this batch's calls. */
  onBreaker?: BreakerReporter | undefined;
  /** Runs each call (all its attempts) through a durable executor; see RunRuntime.runEffect. */
  executor?: EffectExecutor | undefined;
  /** The agent's tool guardrails; absent when it has none. */
  guardrails?: ToolGuardrails | undefined;
  /**
   * The argument checks the tool gate already made (see classifyCalls), by call id: such a call runs with the value
   * checked there, or is refused with its error, and its schema is not asked a second time.
   */
  checked?: ReadonlyMap<string, ArgumentCheck> | undefined;
}

/** A call's arguments checked against its tool's schema: the parsed value, or the error the model reads. */
export type ArgumentCheck = { ok: true; value: unknown } | { ok: false; content: string };

/**
 * Checks a call's arguments against its tool's input schema, once: the value it gives is the one the tool runs
 * with. A schema that throws (a refinement or transform with a bug) fails the check, like invalid arguments.
 */
export function checkArguments(found: Tool, call: ToolCall): ArgumentCheck {
  let parsed: ReturnType<Tool['input']['safeParse']>;
  try {
    parsed = found.input.safeParse(call.args);
  } catch (error) {
    return {
      ok: false,
      content: `Error: checking the arguments of tool "${call.name}" failed: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  if (parsed.success) return { ok: true, value: parsed.data };
  return {
    ok: false,
    content: `Error: invalid arguments for tool "${call.name}": ${parsed.error.issues
      .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`)
      .join('; ')}. Arguments received: ${safeJson(redactArgs(call.args, secretKeysOfTool(found)))}`,
  };
}

/** Tool guardrails: checked on a call's validated arguments before it runs, and on its result before the model. */
export interface ToolGuardrails {
  input: readonly Guardrail[];
  output: readonly Guardrail[];
  /** Runs `guardrails` on one value of `call`; resolves with the block, if one blocked. */
  check(
    guardrails: readonly Guardrail[],
    stage: 'tool_input' | 'tool_output',
    value: unknown,
    text: string,
    call: ToolCall,
  ): GuardrailBlock | null | Promise<GuardrailBlock | null>;
}

/** Told once when a batch is over: every call answered, or the run aborted it (then only the outcomes that came). */
export interface BatchListener {
  batchDone(outcomes: ToolOutcome[]): void;
}

/**
 * Runs one turn's tool calls in parallel up to `concurrency`, each with its timeout and retries, and
 * resolves with one outcome per call, in call order. It never rejects: every failure becomes an error result that
 * goes back to the model. If the batch's signal is aborted it resolves early with what it has; the caller discards it.
 */
export function runToolBatch(batch: ToolBatch): Promise<ToolOutcome[]> {
  return new Promise((resolve) => startToolBatch(batch, { batchDone: resolve }));
}

/**
 * Runs a batch as {@link runToolBatch} does and tells `listener` when it is over, never before this function
 * returns: the tool gate's way, without a promise and a callback per batch.
 */
export function startToolBatch(batch: ToolBatch, listener: BatchListener): void {
  new BatchRun(batch, listener).start();
}

/**
 * One batch on its way: which call starts next, the outcomes so far. One object whose steps are methods, and one
 * object per call ({@link PlainCall}) for the usual call: a tool step makes a few objects, not a chain of closures,
 * async frames and promises per call.
 */
class BatchRun implements AbortListener {
  // Declared, not defined: the constructor sets each field once (defined fields and private names are set by a
  // field initializer first, and a private name is read through a keyed load; one batch is made per tool step).
  declare readonly batch: ToolBatch;
  declare private readonly listener: BatchListener;
  declare private readonly outcomes: (ToolOutcome | undefined)[];
  declare private nextIndex: number;
  declare private settledCount: number;
  declare private over: boolean;
  declare private starting: boolean;
  /** What the batch waits on for the run's abort, while it waits. */
  declare private waiters: AbortWaiters | undefined;

  constructor(batch: ToolBatch, listener: BatchListener) {
    this.batch = batch;
    this.listener = listener;
    this.outcomes = new Array(batch.calls.length);
    this.nextIndex = 0;
    this.settledCount = 0;
    this.over = false;
    this.starting = true;
    this.waiters = undefined;
  }

  start(): void {
    const batch = this.batch;
    const count = batch.calls.length;
    // An already aborted signal never fires: the batch is over at once instead of waiting forever.
    if (count === 0 || (batch.ended?.closed ?? batch.signal.aborted)) this.finish();
    else {
      // The batch itself waits (see `aborted`): no callback, and no function to stop waiting, per batch.
      const waiters = batch.abortWaiters ?? abortWaitersOf(batch.signal);
      this.waiters = waiters;
      waiters.listen(this);
      const starting = Math.min(batch.concurrency, count);
      for (let i = 0; i < starting; i++) this.startNext();
    }
    this.starting = false;
  }

  /** The run's signal aborted: the batch is over with the outcomes that came. */
  aborted(): void {
    this.finish();
  }

  /** Every call answered: the outcomes are the array itself; after an abort, only the ones that came. */
  private finish(): void {
    if (this.over) return;
    this.over = true;
    const batch = this.batch;
    const all = this.outcomes;
    const outcomes =
      this.settledCount === batch.calls.length
        ? (all as ToolOutcome[])
        : all.filter((o): o is ToolOutcome => o !== undefined);
    // The listener hears of the batch from a later job than the one that started it or aborted the run, as it
    // would from a promise.
    const listener = this.listener;
    if (this.starting || (batch.ended?.closed ?? batch.signal.aborted))
      queueMicrotask(() => listener.batchDone(outcomes));
    else listener.batchDone(outcomes);
  }

  private callDone(index: number, outcome: ToolOutcome): void {
    this.outcomes[index] = outcome;
    // The count and the batch read once each: every call ends here, often before V8 has optimized it, where each
    // property read is an inline-cache call.
    const settled = this.settledCount + 1;
    this.settledCount = settled;
    const batch = this.batch;
    if (batch.ended?.closed ?? batch.signal.aborted) return;
    if (settled === batch.calls.length) {
      this.waiters?.remove(this);
      this.finish();
    } else this.startNext();
  }

  /** A call's outcome is known: the batch's owner hears of it (a durable run commits it) before it counts. */
  settle(index: number, call: ToolCall, started: number, outcome: ToolOutcome): void {
    const batch = this.batch;
    if (batch.ended?.closed ?? batch.signal.aborted) return;
    // A durable run commits the outcome here first; a plain run goes on in the same tick.
    let settling: void | Promise<void> | undefined;
    try {
      settling = batch.onSettled(call, outcome, started, this.settledCount + 1 === batch.calls.length);
    } catch {
      // onSettled reports its own failures; the outcome still answers the call.
    }
    if (settling instanceof Promise) {
      this.settleWhenCommitted(settling, index, outcome);
      return;
    }
    // callDone, written out for the usual call, whose outcome is committed at once: one function fewer per step,
    // each compiled on its own some 500 steps after its first call.
    this.outcomes[index] = outcome;
    const settled = this.settledCount + 1;
    this.settledCount = settled;
    if (batch.ended?.closed ?? batch.signal.aborted) return;
    if (settled !== batch.calls.length) {
      this.startNext();
      return;
    }
    this.waiters?.remove(this);
    // finish, written out for a batch whose every call is answered: the outcomes are the array itself.
    if (this.over) return;
    this.over = true;
    const outcomes = this.outcomes as ToolOutcome[];
    const listener = this.listener;
    if (this.starting) queueMicrotask(() => listener.batchDone(outcomes));
    else listener.batchDone(outcomes);
  }

  /**
   * Counts the call once its owner committed the outcome. Apart from `settle`, as the other callbacks of this class
   * are apart from the functions that need them: a function whose closures hold its variables makes a scope for them
   * at every call, whichever branch it takes.
   */
  private settleWhenCommitted(settling: Promise<void>, index: number, outcome: ToolOutcome): void {
    const done = () => this.callDone(index, outcome);
    settling.then(done, done);
  }

  /** Settles from a later job: an outcome known at once keeps its place among the others' (a tool answers later). */
  private settleSoon(index: number, call: ToolCall, started: number, outcome: ToolOutcome): void {
    void Promise.resolve(withSpend(outcome, this.batch.caller)).then((known) =>
      this.settle(index, call, started, known),
    );
  }

  private startNext(): void {
    const batch = this.batch;
    const calls = batch.calls;
    if (this.nextIndex >= calls.length || (batch.ended?.closed ?? batch.signal.aborted)) return;
    const index = this.nextIndex++;
    const call = calls[index] as ToolCall;
    const known = batch.known?.(call);
    if (known) {
      this.callDone(index, known);
      return;
    }
    const started = batch.clock.now();
    const found = batch.registry.find(call.name);
    // A handoff runs nothing: a call the gate lets through goes to the agent machine, which hands off (the
    // session announces it); one refused here (its arguments) is answered like any refused call.
    // What the call spent outside the run's model calls goes with its outcome (a durable executor records both).
    // The checks of this function are written out, not called: each function the step calls once is compiled on
    // its own about 500 steps after its first (see isHandoffTool and the plain path's conditions below).
    if (found !== undefined && Object.hasOwn(found, 'handoffTo')) {
      this.runHandoff(index, call, started);
      return;
    }
    batch.onStart(call);
    if (batch.executor) {
      this.runThroughExecutor(batch.executor, index, call, found, started);
      return;
    }
    const guardrails = batch.guardrails;
    if (
      found !== undefined &&
      !found.breaker &&
      (guardrails === undefined || (guardrails.input.length === 0 && guardrails.output.length === 0)) &&
      !batch.disabled.includes(found.name)
    ) {
      // The usual call (a known tool, no breaker, no tool guardrails, the tool not disabled, nothing journaled)
      // runs without the general path's async steps; it gives the same outcome.
      let checked: ArgumentCheck;
      try {
        checked = batch.checked?.get(call.id) ?? checkArguments(found, call);
      } catch (error) {
        this.settleSoon(index, call, started, unexpected(call, error));
        return;
      }
      if (!checked.ok) this.settleSoon(index, call, started, refused(call, checked.content));
      else new PlainCall(this, index, call, found, checked.value, started).attempt();
      return;
    }
    this.runGeneral(index, call, started);
  }

  // The paths below are apart from `startNext` because their callbacks hold the call's variables: a function whose
  // closures hold its variables makes a scope for them at every call, whichever branch it takes (the usual call's
  // too).

  /** A handoff call the gate let through runs nothing; one refused here is answered like any refused call. */
  private runHandoff(index: number, call: ToolCall, started: number): void {
    const batch = this.batch;
    void runCallWithSpend(call, batch).then((outcome) => {
      if (outcome.handoff) return this.callDone(index, outcome);
      batch.onStart(call);
      this.settle(index, call, started, outcome);
    });
  }

  /** A call run through a durable executor, which records it (all its attempts) as one effect. */
  private runThroughExecutor(
    executor: EffectExecutor,
    index: number,
    call: ToolCall,
    found: Tool | undefined,
    started: number,
  ): void {
    const batch = this.batch;
    void executor(`${batch.route}/tool/${batch.step}/${call.id}`, isAgentTool(found) ? 'agent' : 'tool', () =>
      runCallWithSpend(call, batch),
    ).then((outcome) => this.settle(index, call, started, outcome));
  }

  /** A call with a breaker, tool guardrails, or a tool unknown or disabled: the general path's async steps. */
  private runGeneral(index: number, call: ToolCall, started: number): void {
    void runCallWithSpend(call, this.batch).then((outcome) => this.settle(index, call, started, outcome));
  }
}

/**
 * One call on the plain path, with its arguments checked: its attempts (with the timeout and retries of
 * {@link runToolCall}), then its outcome to the batch. The same outcomes as the general path, in one object.
 */
class PlainCall {
  readonly #run: BatchRun;
  readonly #index: number;
  readonly #call: ToolCall;
  readonly #found: Tool;
  readonly #args: unknown;
  readonly #started: number;
  readonly #attempts: number;
  #attempt = 0;
  readonly #onValue = (value: unknown): void => this.#answered(value);
  readonly #onError = (error: unknown): void => this.#threw(error);

  constructor(run: BatchRun, index: number, call: ToolCall, found: Tool, args: unknown, started: number) {
    this.#run = run;
    this.#index = index;
    this.#call = call;
    this.#found = found;
    this.#args = args;
    this.#started = started;
    this.#attempts = 1 + (found.maxRetries ?? run.batch.maxRetries);
  }

  attempt(): void {
    const batch = this.#run.batch;
    if (batch.ended?.closed ?? batch.signal.aborted) {
      this.#deliver(refused(this.#call, 'Not run: the run was aborted.'));
      return;
    }
    const attempt = this.#attempt + 1;
    this.#attempt = attempt;
    const found = this.#found;
    const timeoutMs = found.timeoutMs ?? batch.timeoutMs;
    if (timeoutMs !== null) {
      attemptTool(found, this.#args, this.#call, batch, attempt, timeoutMs).then(
        this.#onValue,
        this.#onError,
      );
      return;
    }
    // attemptTool without a timeout, written out: the attempt's signal is the run's own (see attemptTool), and the
    // usual step calls one function fewer, each compiled on its own some 500 steps after its first call.
    let answer: Promise<unknown>;
    try {
      answer = Promise.resolve(
        found.execute(this.#args, new ToolCallContext(batch, this.#call.id, attempt, batch.caller)),
      );
    } catch (error) {
      answer = Promise.reject(error);
    }
    answer.then(this.#onValue, this.#onError);
  }

  #answered(value: unknown): void {
    const call = this.#call;
    this.#deliver(answered(call, value, this.#attempt));
  }

  #threw(error: unknown): void {
    const call = this.#call;
    const batch = this.#run.batch;
    const attempt = this.#attempt;
    try {
      // The tool refused these arguments, or the call was carried out and answered with an error (an MCP
      // server's): the model reads why, and retrying would fail the same way.
      if (
        (error instanceof ToolInputError || error instanceof ToolAnswerError) &&
        !(batch.ended?.closed ?? batch.signal.aborted)
      ) {
        this.#deliver(answeredWithError(call, error, attempt));
        return;
      }
      const lastError = error instanceof Error ? error.message : String(error);
      if (attempt < this.#attempts) {
        if (!(batch.ended?.closed ?? batch.signal.aborted)) batch.onRetry(call, attempt, lastError);
        this.attempt();
        return;
      }
      this.#deliver({
        callId: call.id,
        name: call.name,
        content: `Error: tool "${call.name}" failed after ${this.#attempts} attempt(s): ${lastError}`,
        isError: true,
        executed: true,
        degraded: true,
        attempts: this.#attempts,
      });
    } catch (failure) {
      this.#deliver(unexpected(call, failure));
    }
  }

  #deliver(outcome: ToolOutcome): void {
    const run = this.#run;
    // withSpend, written out (see startNext).
    const caller = run.batch.caller;
    const spend = caller?.spentByCall === undefined ? undefined : takeSpend(caller, outcome.callId);
    run.settle(this.#index, this.#call, this.#started, spend ? { ...outcome, spend } : outcome);
  }
}

/** One call with what it spent outside the run's model calls; a failure nothing foresaw still gives an outcome. */
function runCallWithSpend(call: ToolCall, batch: ToolBatch): Promise<ToolOutcome> {
  return runToolCall(call, batch).then(
    (outcome) => withSpend(outcome, batch.caller),
    (error: unknown) => withSpend(unexpected(call, error), batch.caller),
  );
}

/** One call: look the tool up, validate the arguments, run it with retries. Never rejects. */
async function runToolCall(call: ToolCall, batch: ToolBatch): Promise<ToolOutcome> {
  if (batch.disabled.includes(call.name)) {
    return refused(
      call,
      `Error: tool "${call.name}" is unavailable for the rest of this run after repeated failures. Answer without it.`,
    );
  }
  const found = batch.registry.find(call.name);
  if (!found && call.name === reactInvalidReplyTool) return refused(call, invalidReplyAnswer(call.args));
  if (!found) {
    const known = batch.registry.names;
    return refused(
      call,
      `Error: unknown tool "${call.name}". Available tools: ${known.length > 0 ? known.join(', ') : '(none)'}.`,
    );
  }
  // The schema is asked once: the gate's check when it made one, else here.
  const checked = batch.checked?.get(call.id) ?? checkArguments(found, call);
  if (!checked.ok) return refused(call, checked.content);
  const args = checked.value;
  if (isHandoffTool(found)) return handedOff(call, found.handoffTo);
  const guardrails = batch.guardrails;
  if (guardrails && guardrails.input.length > 0) {
    // The text (what a judge model reads) has the tool's secret arguments redacted; the value is the real one.
    const block = await guardrails.check(
      guardrails.input,
      'tool_input',
      args,
      safeJson(redactArgs(call.args, secretKeysOfTool(found))),
      call,
    );
    if (block) return blockedOutcome(call, block, guardrails.input, 0);
  }
  const attempts = 1 + (found.maxRetries ?? batch.maxRetries);
  const timeoutMs = found.timeoutMs ?? batch.timeoutMs;
  let lastError = '';
  const breaker = found.breaker ? sharedBreaker('tool', found.name, found.breaker) : undefined;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    if (batch.ended?.closed ?? batch.signal.aborted) return refused(call, 'Not run: the run was aborted.');
    try {
      const value = breaker
        ? await throughBreaker(
            breaker,
            () => attemptTool(found, args, call, batch, attempt, timeoutMs),
            batch,
          )
        : await attemptTool(found, args, call, batch, attempt, timeoutMs);
      if (value === breakerOpen) return refused(call, openBreakerAnswer(call.name, breaker));
      if (guardrails && guardrails.output.length > 0) {
        const block = await guardrails.check(guardrails.output, 'tool_output', value, toContent(value), call);
        if (block) return blockedOutcome(call, block, guardrails.output, attempt);
      }
      return answered(call, value, attempt);
    } catch (error) {
      // The tool refused these arguments, or the call was carried out and answered with an error (an MCP
      // server's): the model reads why, and retrying would fail the same way.
      if (
        (error instanceof ToolInputError || error instanceof ToolAnswerError) &&
        !(batch.ended?.closed ?? batch.signal.aborted)
      ) {
        return answeredWithError(call, error, attempt);
      }
      lastError = error instanceof Error ? error.message : String(error);
      if (attempt < attempts && !(batch.ended?.closed ?? batch.signal.aborted))
        batch.onRetry(call, attempt, lastError);
    }
  }
  return {
    callId: call.id,
    name: call.name,
    content: `Error: tool "${call.name}" failed after ${attempts} attempt(s): ${lastError}`,
    isError: true,
    executed: true,
    degraded: true,
    attempts,
  };
}

/** What an attempt gives when the tool's breaker is open and the tool was not run. */
const breakerOpen: unique symbol = Symbol('breaker open');

/** One attempt through the tool's breaker: a failed attempt counts (unless the run was aborted meanwhile). */
async function throughBreaker(
  breaker: CircuitBreaker,
  run: () => Promise<unknown>,
  batch: ToolBatch,
): Promise<unknown> {
  const guarded = await breaker.run(
    () =>
      run().then(
        (value): { ok: true; value: unknown } => ({ ok: true, value }),
        (error: unknown): { ok: false; error: unknown } => ({ ok: false, error }),
      ),
    (settled) =>
      settled.ok
        ? 'success'
        : (batch.ended?.closed ?? batch.signal.aborted)
          ? 'uncounted'
          : { failure: settled.error instanceof Error ? settled.error.message : String(settled.error) },
    batch.onBreaker,
  );
  if (guarded.open) return breakerOpen;
  if (!guarded.result.ok) throw guarded.result.error;
  return guarded.result.value;
}

function openBreakerAnswer(name: string, breaker: CircuitBreaker | undefined): string {
  const seconds = Math.ceil((breaker?.options.halfOpenAfterMs ?? 0) / 1000);
  return `Error: tool "${name}" is unavailable right now: it failed repeatedly, so its circuit breaker is open and the call was not run. It will be tried again in about ${seconds} s; answer without it or try later.`;
}

/** One attempt, with its own AbortSignal: aborted by the timeout or by the run. Rejects on failure or timeout. */
function attemptTool(
  found: Tool,
  args: unknown,
  call: ToolCall,
  batch: ToolBatch,
  attempt: number,
  timeoutMs: number | null,
): Promise<unknown> {
  // The batch holds the fields every call of it shares (context, signal, session, route, turn, agent, step).
  const context = new ToolCallContext(batch, call.id, attempt, batch.caller);
  if (timeoutMs === null) {
    // Without a timeout the attempt's signal is the run's own: no controller, timer or listeners per call (about
    // 3 µs of the hot path). A tool that ignores an abort does not hold the loop: runToolBatch settles on it.
    try {
      return Promise.resolve(found.execute(args, context));
    } catch (error) {
      return Promise.reject(error);
    }
  }
  const controller = new AbortController();
  context.signal = controller.signal;
  const abortAttempt = () => controller.abort(batch.signal.reason);
  const stopWaiting = (batch.abortWaiters ?? abortWaitersOf(batch.signal)).add(abortAttempt);
  let timer: unknown;
  return new Promise<unknown>((resolve, reject) => {
    // A tool that ignores its signal must not hold the loop: the race settles on abort either way.
    controller.signal.addEventListener('abort', () => reject(abortError(controller.signal)), { once: true });
    if (timeoutMs !== null) {
      timer = batch.clock.setTimeout(
        () => controller.abort(new ToolTimeoutError(call.name, timeoutMs)),
        timeoutMs,
      );
    }
    try {
      Promise.resolve(found.execute(args, context)).then(resolve, reject);
    } catch (error) {
      reject(error);
    }
  }).finally(() => {
    if (timer !== undefined) batch.clock.clearTimeout(timer);
    stopWaiting();
  });
}

/** The outcome of a call whose handling failed in a way nothing above foresaw: the batch still settles. */
function unexpected(call: ToolCall, error: unknown): ToolOutcome {
  return refused(
    call,
    `Error: tool "${call.name}" could not be run: ${error instanceof Error ? error.message : String(error)}`,
  );
}

/** The outcome of a handoff call the gate let through: nothing ran; the agent machine hands the conversation off. */
function handedOff(call: ToolCall, target: string): ToolOutcome {
  return {
    callId: call.id,
    name: call.name,
    content: `Transferred to ${target}.`,
    isError: false,
    executed: false,
    degraded: false,
    attempts: 0,
    handoff: true,
  };
}

/** A call the tool carried out and answered with `value`. */
function answered(call: ToolCall, value: unknown, attempts: number): ToolOutcome {
  return {
    callId: call.id,
    name: call.name,
    content: toContent(value),
    isError: false,
    executed: true,
    degraded: false,
    attempts,
  };
}

/** A call the tool carried out and answered with an error, or whose arguments it refused: the model reads why. */
function answeredWithError(call: ToolCall, error: Error, attempts: number): ToolOutcome {
  return {
    callId: call.id,
    name: call.name,
    content: `Error: ${error.message}`,
    isError: true,
    executed: true,
    degraded: false,
    attempts,
  };
}

/** The outcome of a call that was not run (unknown or disabled tool, invalid arguments, aborted run). */
function refused(call: ToolCall, content: string): ToolOutcome {
  return {
    callId: call.id,
    name: call.name,
    content,
    isError: true,
    executed: false,
    degraded: false,
    attempts: 0,
  };
}

/**
 * The outcome of a call a tool guardrail blocked: the model reads that it was blocked (never the blocked result).
 * With the guardrail's `onBlock: 'stop'` (the default) the outcome carries the block and the run stops.
 */
function blockedOutcome(
  call: ToolCall,
  block: GuardrailBlock,
  guardrails: readonly Guardrail[],
  attempts: number,
): ToolOutcome {
  const outcome: ToolOutcome = {
    callId: call.id,
    name: call.name,
    content: `Error: blocked by guardrail "${block.name}": ${block.message}`,
    isError: true,
    executed: attempts > 0,
    degraded: false,
    attempts,
  };
  const blocking = guardrails.find((guardrail) => guardrail.name === block.name);
  if (blocking?.onBlock !== 'answer') outcome.blocked = block;
  return outcome;
}

/** Each tool's secret names (its declared ones and the defaults), built once per tool. */
const toolSecrets = new WeakMap<Tool, ReadonlySet<string>>();

function secretKeysOfTool(found: Tool): ReadonlySet<string> {
  let keys = toolSecrets.get(found);
  if (!keys) {
    keys = secretKeySet(found.secret);
    toolSecrets.set(found, keys);
  }
  return keys;
}

/** What the model reads: strings as they are, anything else as JSON. */
function toContent(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  return safeJson(value);
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** The answer to a malformed ReAct reply: the parse error itself, so events and history say what went wrong. */
function invalidReplyAnswer(args: JsonValue): string {
  const error =
    typeof args === 'object' && args !== null && !Array.isArray(args) && typeof args.error === 'string'
      ? args.error
      : 'the reply could not be parsed.';
  return `Error: your reply did not follow the format. ${error}`;
}

/** The outcome with what its call reported spending outside the run's own model calls, if it reported any. */
function withSpend(outcome: ToolOutcome, caller: RunRuntime | undefined): ToolOutcome {
  const spend = caller ? takeSpend(caller, outcome.callId) : undefined;
  return spend ? { ...outcome, spend } : outcome;
}
