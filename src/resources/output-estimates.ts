/** Output tokens expected of a call when nothing is known yet about what its model writes. */
export const defaultOutputEstimate = 256;

/** The running mean of the output tokens of calls to one model. */
export interface Mean {
  provider: string;
  model: string;
  calls: number;
  tokens: number;
}

/**
 * What a call is expected to write, learned from the calls settled so far: the running mean of the output tokens
 * of this run's calls to the same model, else of every call to that model through the manager. Quotas count it
 * (with the prompt) until the call settles, and a call under no budget reserves it; under a budget the
 * reservation holds the call's output cap instead, since that, not the mean, bounds what the call may spend.
 */
export class OutputEstimates {
  /** Per provider, per model. */
  readonly #byModel = new Map<string, Map<string, Mean>>();

  /**
   * Records a settled call. `run` holds the means of the call's run (usually one model, a few with handoffs); the
   * manager keeps it with the run's other entries, so a call looks its run up once.
   */
  record(run: Mean[] | undefined, provider: string, model: string, outputTokens: number): void {
    if (!(Number.isFinite(outputTokens) && outputTokens >= 0)) return;
    let models = this.#byModel.get(provider);
    if (!models) {
      models = new Map();
      this.#byModel.set(provider, models);
    }
    let overall = models.get(model);
    if (!overall) {
      overall = { provider, model, calls: 0, tokens: 0 };
      models.set(model, overall);
    }
    overall.calls += 1;
    overall.tokens += outputTokens;
    if (!run) return;
    let own = meanOf(run, provider, model);
    if (!own) {
      own = { provider, model, calls: 0, tokens: 0 };
      run.push(own);
    }
    own.calls += 1;
    own.tokens += outputTokens;
  }

  /** The expected output tokens of the run's next call to this model; undefined before any call of it settled. */
  expected(run: readonly Mean[] | undefined, provider: string, model: string): number | undefined {
    const mean = (run && meanOf(run, provider, model)) ?? this.#byModel.get(provider)?.get(model);
    return mean ? Math.ceil(mean.tokens / mean.calls) : undefined;
  }
}

function meanOf(means: readonly Mean[], provider: string, model: string): Mean | undefined {
  for (const mean of means) if (mean.model === model && mean.provider === provider) return mean;
  return undefined;
}
