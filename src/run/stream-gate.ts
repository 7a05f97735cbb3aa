import type { GuardrailBlock } from '../core/guardrail-block.ts';
import type { ModelDelta } from '../core/model.ts';

type TextDelta = Extract<ModelDelta, { type: 'text' }>;
type Outcome = GuardrailBlock | null;

/**
 * The gate streaming output guardrails put on one model call's text deltas. Each delta is added to the reply's
 * text so far, and that text is checked at the delta's boundary; a delta is delivered once a check that covers it
 * passed. A synchronous check delivers at once (nothing is held back); while an asynchronous one runs, the deltas
 * after it wait and the next check covers them all. After a block nothing more is delivered: the waiting deltas
 * are dropped and `onBlock` is called once (it cancels the call).
 */
export class StreamGate {
  readonly #check: (text: string, partial: boolean) => Outcome | Promise<Outcome>;
  readonly #deliver: (delta: TextDelta) => void;
  readonly #onBlock: (block: GuardrailBlock) => void;
  #text = '';
  /** Deltas not yet covered by a passed check. */
  #waiting: TextDelta[] = [];
  #checking: Promise<void> | undefined;
  #block: GuardrailBlock | undefined;

  constructor(
    check: (text: string, partial: boolean) => Outcome | Promise<Outcome>,
    deliver: (delta: TextDelta) => void,
    onBlock: (block: GuardrailBlock) => void,
  ) {
    this.#check = check;
    this.#deliver = deliver;
    this.#onBlock = onBlock;
  }

  /** The block, once a check blocked. */
  get blocked(): GuardrailBlock | undefined {
    return this.#block;
  }

  push(delta: TextDelta): void {
    if (this.#block) return;
    this.#text += delta.text;
    this.#waiting.push(delta);
    if (!this.#checking) this.#run(true);
  }

  /**
   * The call returned `text`: once every streamed delta is checked, checks the whole text too if the stream did not
   * carry all of it (a provider that does not stream, or a cut stream). Resolves with the block, if any.
   */
  finish(text: string): Outcome | Promise<Outcome> {
    if (this.#checking) return this.#checking.then(() => this.finish(text));
    if (this.#block) return this.#block;
    if (text === this.#text || text === '') return null;
    this.#text = text;
    const outcome = this.#check(text, false);
    if (outcome instanceof Promise) return outcome.then((block) => this.#settle(block, 0) ?? null);
    return this.#settle(outcome, 0) ?? null;
  }

  #run(partial: boolean): void {
    const covered = this.#waiting.length;
    const outcome = this.#check(this.#text, partial);
    if (!(outcome instanceof Promise)) {
      this.#settle(outcome, covered);
      return;
    }
    this.#checking = outcome.then((block) => {
      this.#checking = undefined;
      this.#settle(block, covered);
      // Deltas that came while the check ran: the next check covers them all.
      if (!this.#block && this.#waiting.length > 0) this.#run(true);
      return this.#checking;
    });
  }

  #settle(block: Outcome, covered: number): GuardrailBlock | undefined {
    if (this.#block) return this.#block;
    if (block) {
      this.#block = block;
      this.#waiting = [];
      this.#onBlock(block);
      return block;
    }
    const passed = this.#waiting.splice(0, covered);
    for (const delta of passed) this.#deliver(delta);
    return undefined;
  }
}
