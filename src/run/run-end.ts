/**
 * What says whether a run's signal is aborted without asking the signal, when the run's owner aborts it itself (a
 * run's effects): `closed` is true exactly when the signal is aborted. Node's `signal.aborted` is a getter that calls
 * two functions; the model gate and the tool runner ask several times per step, often before V8 has optimized it.
 */
export interface RunEnd {
  readonly closed: boolean;
}

/** Whether the run ended: its owner's `closed` when it has one, else the signal. */
export function hasEnded(signal: AbortSignal, end: RunEnd | undefined): boolean {
  return end === undefined ? signal.aborted : end.closed;
}
