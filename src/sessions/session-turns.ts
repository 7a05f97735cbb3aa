import type { RunInput } from '../core/messages.ts';
import type { RunResult } from '../core/result.ts';

/** Options of one turn: `session.send(input, options)`. */
export interface TurnOptions {
  /**
   * The run context of this turn and the turns after it (replaces the session's); see RunOptions.context. Not
   * stored: a turn queued behind another gets it when it starts in this process.
   */
  context?: unknown;
  /** Aborting it ends this turn `aborted`; the session stays open for the next message. */
  signal?: AbortSignal | undefined;
  /** The turn ends `timed_out` after this many milliseconds (on top of each agent's own `timeoutMs`). */
  timeoutMs?: number | undefined;
  /**
   * This turn's budget (tokens and/or USD, every agent of the turn included), on top of the session's: the turn ends
   * `budget_exhausted` when it is spent.
   */
  budget?:
    | {
        tokens?: number | undefined;
        usd?: number | undefined;
        warnAt?: number | undefined;
      }
    | undefined;
}

/** One turn of a session: its input, its result promise, and where its events start in the log. */
export class Turn<TOutput> {
  readonly input: RunInput;
  readonly options: TurnOptions;
  readonly result: Promise<RunResult<TOutput>>;
  /** Seq of the turn's run_start, once it started. */
  firstSeq: number | undefined;
  ended = false;
  readonly #resolve: (result: RunResult<TOutput>) => void;
  #started: (() => void) | undefined;
  /** Resolves when the turn starts (its run_start is emitted). */
  readonly started: Promise<void>;

  constructor(input: RunInput, options: TurnOptions = {}) {
    this.input = input;
    this.options = options;
    let resolve: (result: RunResult<TOutput>) => void = () => undefined;
    this.result = new Promise<RunResult<TOutput>>((done) => {
      resolve = done;
    });
    this.#resolve = resolve;
    this.started = new Promise<void>((done) => {
      this.#started = done;
    });
  }

  markStarted(firstSeq: number): void {
    this.firstSeq = firstSeq;
    this.#started?.();
    this.#started = undefined;
  }

  finish(result: RunResult<TOutput>): void {
    if (this.ended) return;
    this.ended = true;
    // A turn that never started (the session closed first) still lets its events() readers finish.
    this.#started?.();
    this.#started = undefined;
    this.#resolve(result);
  }
}
