/*
 * What a session does when one of its agents fails: the policy and its defaults. Data only, so the main entry
 * hands out the defaults without building the session machine.
 */

export type SupervisionStrategy = 'restart' | 'stop' | 'escalate';

/** What happens when an agent actor fails (an exception from our code or a fatal tool). */
export interface SupervisionPolicy {
  strategy: SupervisionStrategy;
  /** Restarts per turn before `onExhausted` applies. */
  maxRestarts: number;
  onExhausted: 'stop' | 'escalate';
  /** First back-off; each further restart multiplies it by `backoffFactor`, up to `maxBackoffMs`. */
  backoffMs: number;
  backoffFactor: number;
  maxBackoffMs: number;
}

/** Supervision as an option: any of the policy's fields (`undefined` = not given), the others from the defaults. */
export type SupervisionOptions = { [K in keyof SupervisionPolicy]?: SupervisionPolicy[K] | undefined };

export const defaultSupervision: SupervisionPolicy = Object.freeze({
  strategy: 'restart',
  maxRestarts: 2,
  onExhausted: 'escalate',
  backoffMs: 100,
  backoffFactor: 2,
  maxBackoffMs: 10_000,
});
