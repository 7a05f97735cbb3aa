import type { Actor, Observer, SnapshotFrom } from 'xstate';
import { abortReason } from '../core/abort.ts';
import type { Message, RunInput } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';
import type { ResourceHoldings } from '../core/session-resources.ts';
import {
  type AgentContext,
  type AgentMachine,
  type AgentMachineOutput,
  agentOutputOf,
} from '../machines/agent.ts';
import { endEffects } from './effects.ts';
import { emitRunStart, type OpenedRunScope } from './host.ts';
import { releaseSessionId } from './live-sessions.ts';
import { PhaseReporter } from './phase-events.ts';
import { buildRunResult, failedBeforeAnyStep, runEndData } from './run-result.ts';
import { countRuntime, type PhaseSource, type RunRuntime } from './run-runtime.ts';

type AgentSnapshot = SnapshotFrom<AgentMachine>;

/** What a run started by startRun was given, for its start and its result. */
export interface ObservedRun {
  actor: Actor<AgentMachine>;
  /** The run's runtime, counted in by the host (`hostRuntime`); the observer counts it out when the run ends. */
  runtime: RunRuntime;
  scope: OpenedRunScope;
  input: RunInput;
  /** The caller's history (the run's own starts after it). */
  callerHistory: readonly Message[];
  signal: AbortSignal | undefined;
  /** What the run's tools opened for it, closed when it ends: a plain run's own (a nested run's caller closes its). */
  ownHoldings: ResourceHoldings | undefined;
}

/**
 * Watches one run's root actor from its start to its result: the run's start event, its phase events (for a
 * listener), its timeout and abort signal, and its end, which releases what the run held and resolves the result.
 * One object per run, its callbacks its methods: a run in flight keeps this and nothing else of its start.
 */
export class RunObserver<TOutput> implements Observer<AgentSnapshot>, PhaseSource {
  readonly #actor: Actor<AgentMachine>;
  readonly #runtime: RunRuntime;
  readonly #scope: OpenedRunScope;
  readonly #input: RunInput;
  readonly #callerHistory: readonly Message[];
  readonly #signal: AbortSignal | undefined;
  readonly #ownHoldings: ResourceHoldings | undefined;
  #resolve: ((result: RunResult<TOutput>) => void) | undefined;
  /** Made for a listener only (a plain run() has none): phase events are all it is for. */
  #phases: PhaseReporter | undefined;
  #lastContext: AgentContext | undefined;
  #timer: unknown;
  /** Starting (the actor is being started), observing (it has started), finished (the result is made). */
  #stage: 'starting' | 'observing' | 'finished' = 'starting';

  /** `run` is read, not kept: the observer holds its parts itself. */
  constructor(run: ObservedRun) {
    this.#actor = run.actor;
    this.#runtime = run.runtime;
    this.#scope = run.scope;
    this.#input = run.input;
    this.#callerHistory = run.callerHistory;
    this.#signal = run.signal;
    this.#ownHoldings = run.ownHoldings;
  }

  /** Starts the run; the promise always resolves (never rejects) once the run has ended, however it ended. */
  start(): Promise<RunResult<TOutput>> {
    return new Promise<RunResult<TOutput>>((resolve) => {
      this.#resolve = resolve;
      this.#begin();
    });
  }

  #begin(): void {
    const actor = this.#actor;
    const signal = this.#signal;
    const { agent, bus, clock, origin } = this.#runtime;
    actor.subscribe(this);
    if (bus.listening) emitRunStart(bus, agent, this.#input, this.#callerHistory.length, origin);
    const timeoutMs = agent.limits.timeoutMs;
    if (timeoutMs !== null) this.#timer = clock.setTimeout(() => actor.send({ type: 'timeout' }), timeoutMs);
    signal?.addEventListener('abort', this, { once: true });
    actor.start();
    if (this.#stage !== 'finished') {
      this.#stage = 'observing';
      if (bus.listening) this.#phasesFor().observe(actor.getSnapshot());
    }
    if (signal?.aborted) this.handleEvent();
  }

  /** The run's signal was aborted: the run ends `aborted`. */
  handleEvent(): void {
    const signal = this.#signal;
    if (signal) this.#actor.send({ type: 'abort', reason: abortReason(signal, 'run') });
  }

  /**
   * Phases are reported from the agent's state once it has started, as for an agent a session watches: a check
   * that answered at once during the start left no phase of its own, on either path.
   */
  reportPhase(): void {
    if (this.#stage !== 'observing' || !this.#runtime.bus.listening) return;
    this.#phasesFor().observe(this.#actor.getSnapshot());
  }

  next(snapshot: AgentSnapshot): void {
    this.#lastContext = snapshot.context;
    // Phase events only matter to a listener (a plain run() has none).
    if (this.#runtime.bus.listening && (this.#stage === 'observing' || snapshot.status === 'done'))
      this.#phasesFor().observe(snapshot);
    if (snapshot.status === 'done') this.#finish(snapshot.output);
  }

  /** A root actor without an error observer crashes the process. This one turns the error into a result. */
  error(error: unknown): void {
    endEffects(this.#actor);
    this.#finish(undefined, error);
  }

  #phasesFor(): PhaseReporter {
    if (this.#phases) return this.#phases;
    const { agent, bus, origin } = this.#runtime;
    this.#phases = new PhaseReporter((type, data) => bus.emit(agent.name, type, data, origin));
    return this.#phases;
  }

  #finish(output: AgentMachineOutput | undefined, internalError?: unknown): void {
    if (this.#stage === 'finished') return;
    this.#stage = 'finished';
    const { agent, bus, clock, origin, key: sessionId } = this.#runtime;
    if (this.#timer !== undefined) clock.clearTimeout(this.#timer);
    this.#signal?.removeEventListener('abort', this);
    const final = output ?? (this.#lastContext && agentOutputOf(this.#lastContext));
    const runResult = final
      ? buildRunResult<TOutput>(internalError === undefined ? final : failedContext(final, internalError))
      : failedBeforeAnyStep<TOutput>(sessionId, agent.name, this.#callerHistory, this.#input, {
          name: 'InternalError',
          code: 'internal',
          message: internalError instanceof Error ? internalError.message : String(internalError),
        });
    if (bus.listening) bus.emit(agent.name, 'run_end', runEndData(runResult), origin);
    this.#scope.close();
    countRuntime(-1);
    releaseSessionId(sessionId);
    const resolve = this.#resolve;
    // A plain run closes what its tools opened for it (per-session MCP servers) before its result is given.
    const releasing = this.#ownHoldings?.release();
    if (releasing) void releasing.then(() => resolve?.(runResult));
    else resolve?.(runResult);
  }
}

/** A machine that errored (a bug of ours) still yields an honest failed result with the transcript so far. */
function failedContext(output: AgentMachineOutput, error: unknown): AgentMachineOutput {
  const message = error instanceof Error ? error.message : String(error);
  return { ...output, stopReason: 'error', error: { name: 'InternalError', code: 'internal', message } };
}
