/**
 * An unbounded single-consumer queue exposed as an AsyncIterable: producers push without waiting, the consumer
 * pulls with `for await`. Ending the queue lets the consumer drain what is left; failing it throws after that.
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  #items: T[] = [];
  #head = 0;
  #waiting: ((result: IteratorResult<T>) => void) | undefined;
  #ended = false;
  #onReturn: (() => void) | undefined;

  /** Called once when the consumer stops early (`break` out of `for await`). */
  onReturn(callback: () => void): void {
    this.#onReturn = callback;
  }

  push(item: T): void {
    if (this.#ended) return;
    const waiting = this.#waiting;
    if (waiting) {
      this.#waiting = undefined;
      waiting({ value: item, done: false });
      return;
    }
    this.#items.push(item);
  }

  end(): void {
    this.#ended = true;
    const waiting = this.#waiting;
    if (waiting) {
      this.#waiting = undefined;
      waiting({ value: undefined, done: true });
    }
  }

  #next(): Promise<IteratorResult<T>> {
    if (this.#head < this.#items.length) {
      const value = this.#items[this.#head] as T;
      this.#head++;
      if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
        this.#items = this.#items.slice(this.#head);
        this.#head = 0;
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.#ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => {
      this.#waiting = resolve;
    });
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => this.#next(),
      return: () => {
        // The consumer stopped early (break): drop what is buffered and ignore later pushes.
        this.#ended = true;
        this.#items = [];
        this.#head = 0;
        const onReturn = this.#onReturn;
        this.#onReturn = undefined;
        onReturn?.();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
