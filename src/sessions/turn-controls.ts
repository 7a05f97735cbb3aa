import type { AnyActorRef } from 'xstate';
import { abortReason } from '../core/abort.ts';
import type { Clock } from '../core/clock.ts';
import type { TurnOptions } from './session-turns.ts';

/**
 * The per-turn options of `session.send(input, { signal, timeoutMs })`: the signal aborts the turn (not the
 * session), the timeout ends it `timed_out`. Both reach whichever agent holds the conversation when they fire;
 * a timeout that fires between agents (during a handoff) reaches the next one as it starts.
 */
export class TurnControls {
  readonly #clock: Clock;
  readonly #activeAgent: () => AnyActorRef | undefined;
  readonly #openBudget: OpenTurnBudget;
  #undo: (() => void)[] = [];
  #timedOut = false;
  #scope: string | undefined;

  constructor(clock: Clock, activeAgent: () => AnyActorRef | undefined, openBudget: OpenTurnBudget) {
    this.#clock = clock;
    this.#activeAgent = activeAgent;
    this.#openBudget = openBudget;
  }

  /** The budget scope of the turn in progress, when it has a budget of its own. */
  get scope(): string | undefined {
    return this.#scope;
  }

  /** Arms a turn's options (clearing the previous turn's). Throws (ConfigError) for a budget that cannot apply. */
  apply(options: TurnOptions, turn: number): void {
    this.clear();
    const { signal, timeoutMs, budget } = options;
    if (budget) {
      const opened = this.#openBudget(budget, turn);
      this.#scope = opened.scope;
      this.#undo.push(() => {
        this.#scope = undefined;
        opened.close();
      });
    }
    if (signal) {
      const onAbort = () => this.#activeAgent()?.send({ type: 'abort', reason: abortReason(signal, 'turn') });
      signal.addEventListener('abort', onAbort, { once: true });
      this.#undo.push(() => signal.removeEventListener('abort', onAbort));
      if (signal.aborted) queueMicrotask(onAbort);
    }
    if (timeoutMs !== undefined) {
      const timer = this.#clock.setTimeout(() => {
        this.#timedOut = true;
        this.#activeAgent()?.send({ type: 'timeout' });
      }, timeoutMs);
      this.#undo.push(() => this.#clock.clearTimeout(timer));
    }
  }

  /** A new agent holds the conversation: a turn that already timed out ends there too. */
  agentStarted(agent: AnyActorRef): void {
    if (this.#timedOut) agent.send({ type: 'timeout' });
  }

  clear(): void {
    for (const undo of this.#undo) undo();
    this.#undo = [];
    this.#timedOut = false;
  }
}

/** Opens a budget scope for one turn (under the session's): its name, and what closes it. */
export type OpenTurnBudget = (
  budget: NonNullable<TurnOptions['budget']>,
  turn: number,
) => { scope: string; close: () => void };
