import type { Usage } from '../core/usage.ts';
import type { DenialReason } from './ledger.ts';

/** What the manager reports to its subscribers (and, for a run's own calls, to the run's event stream). */
export type ResourceNotice =
  | {
      type: 'budget_warning';
      time: number;
      session: string;
      scope: string;
      dimension: 'tokens' | 'usd';
      spent: number;
      limit: number;
      threshold: number;
    }
  | { type: 'quota_wait'; time: number; session: string; quota: string; position: number }
  | {
      /** A call was granted: what its budgets hold for it until it settles, and the most output it may write. */
      type: 'granted';
      time: number;
      session: string;
      /** The grant's id (`Grant.id`). */
      reservation: string;
      tokens: number;
      usd: number | null;
      /** Null when no budget applies to the call. */
      maxOutputTokens: number | null;
      waitedMs: number;
    }
  | {
      /** A call waits because the calls in flight hold the rest of a budget; it is granted or denied once they settle. */
      type: 'budget_wait';
      time: number;
      session: string;
      /** The scope whose budget holds it back. */
      scope: string;
      /** The id its grant will carry. */
      reservation: string;
      dimension: 'tokens' | 'usd';
      spent: number;
      reserved: number;
      limit: number;
    }
  | {
      type: 'spend';
      time: number;
      session: string;
      provider: string;
      model: string;
      tokens: number;
      usd: number | null;
      usage: Usage;
      returnedTokens: number;
      returnedUsd: number | null;
    }
  | { type: 'denied'; time: number; session: string; reason: DenialReason; scope: string; message: string }
  | { type: 'rate_limited'; time: number; quota: string; until: number };

export type Listener = (notice: ResourceNotice) => void;

/**
 * Marks the options of a run whose `onNotice` ignores `granted` notices (the sink that turns notices into events on
 * the run's stream has no event for them): the manager then builds a `granted` notice only for its subscribers.
 */
export const sinkIgnoresGranted: unique symbol = Symbol('troupe.sinkIgnoresGranted');

/**
 * Where notices go: the run they concern (its sink, which turns them into events on its stream) and every
 * subscriber of the manager. A subscriber that throws is reported, never allowed to break the call that caused
 * the notice.
 */
export class ResourceNotices {
  readonly #sinkOf: (session: string) => Listener | undefined;
  readonly #listeners = new Set<Listener>();

  /** `sinkOf` gives the sink of an open run (see OpenRunOptions.onNotice). */
  constructor(sinkOf: (session: string) => Listener | undefined) {
    this.#sinkOf = sinkOf;
  }

  notify(notice: ResourceNotice): void {
    this.notifyRun(notice, 'session' in notice ? this.#sinkOf(notice.session) : undefined);
  }

  /** Like `notify`, given the sink of the run the notice concerns (the caller has looked its run up already). */
  notifyRun(notice: ResourceNotice, sink: Listener | undefined): void {
    sink?.(notice);
    // Usually nobody subscribed: no iterator over an empty set (one per notice, two notices per model call).
    if (this.#listeners.size === 0) return;
    for (const listener of this.#listeners) {
      try {
        listener(notice);
      } catch (error) {
        queueMicrotask(() => console.error('troupe: a resource listener threw', error));
      }
    }
  }

  /** Whether anyone subscribed: a notice that no run's sink keeps is built only then. */
  get subscribed(): boolean {
    return this.#listeners.size > 0;
  }

  subscribe(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  clear(): void {
    this.#listeners.clear();
  }
}
