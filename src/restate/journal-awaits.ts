import { CancelledError, RestatePromise, type TerminalError } from '@restatedev/restate-sdk';

interface Waiter {
  promise: RestatePromise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

interface Settled {
  id: number;
  value?: unknown;
  failure?: TerminalError;
}

/**
 * The one place a turn awaits Restate. The SDK drives a handler's awaits with a single consumer: two journal
 * promises awaited at once from independent code (two tool calls of a batch, each awaiting its `ctx.run`) fail
 * with "awaitNext already pending". So every promise of the turn is handed to `wait`, and one loop races all the
 * pending ones (`RestatePromise.race`), settles the one that completed and races the rest again. The calls of a
 * batch still run in parallel: every `ctx.run` in the race is started. What completes first may differ on a
 * replay, but nothing the turn journals depends on it (calls are issued in call order, whatever finished first).
 */
export class JournalAwaits {
  readonly #pending = new Map<number, Waiter>();
  readonly #cancelled: () => void;
  #next = 0;
  #driving = false;

  /** `cancelled` is told when the invocation was cancelled (the awaits pending then are dropped). */
  constructor(cancelled: () => void) {
    this.#cancelled = cancelled;
  }

  /** Resolves with the promise's value, or rejects with its TerminalError. Never call `then` on it yourself. */
  wait<T>(promise: RestatePromise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(this.#next++, {
        promise: promise as RestatePromise<unknown>,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      if (!this.#driving) void this.#drive();
    });
  }

  async #drive(): Promise<void> {
    this.#driving = true;
    try {
      while (this.#pending.size > 0) {
        // Let what reacts to the last completion issue its own journal commands first: they join this race.
        await new Promise((resolve) => setImmediate(resolve));
        const racing = [...this.#pending].map(([id, waiter]) =>
          waiter.promise.map((value, failure): Settled => (failure ? { id, failure } : { id, value })),
        );
        let settled: Settled;
        try {
          settled = await RestatePromise.race(racing);
        } catch (error) {
          const dropped = [...this.#pending.values()];
          this.#pending.clear();
          if (error instanceof CancelledError) this.#cancelled();
          else for (const waiter of dropped) waiter.reject(error);
          continue;
        }
        const waiter = this.#pending.get(settled.id);
        if (!waiter) continue;
        this.#pending.delete(settled.id);
        if (settled.failure) waiter.reject(settled.failure);
        else waiter.resolve(settled.value);
      }
    } finally {
      this.#driving = false;
    }
  }
}
