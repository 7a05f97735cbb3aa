import { onAbort } from '../core/abort.ts';
import type { ModelSettings } from '../core/model.ts';
import type { Usage } from '../core/usage.ts';
import { returnFailedGrant } from '../resources/model-reservation.ts';
import { type Grant, type ResourceManager, settleAndForget } from '../resources/resource-manager.ts';

/**
 * The grant a run's model call in flight holds under a resource manager, one such holder per run (and signal), made
 * at its first reserved call: the answer settles the grant with its usage, a failure gives it back (a 429 paces the
 * next calls), and an abort of the run gives it back at once (the run no longer waits for the answer, which would
 * otherwise hold the budget). Kept apart from the run's plain calls so that a run without a manager carries none of
 * it.
 */
export class HeldGrant {
  /** The grant of the call in flight, until its answer, its failure or the run's abort. */
  private grant: Grant | undefined = undefined;
  /** Stops the call in flight from giving its grant back on an abort. */
  private stopWaiting: () => void = noWait;
  /** The run's settings with the output cap of its grants, made again only when the cap or the settings change. */
  private capped: { from: ModelSettings; cap: number; settings: ModelSettings } | undefined = undefined;

  constructor(
    private readonly manager: ResourceManager,
    private readonly signal: AbortSignal,
  ) {}

  /** The call in flight was granted. */
  hold(grant: Grant): void {
    this.grant = grant;
    this.stopWaiting = onAbort(this.signal, this.abandon);
  }

  /** The callback each granted call leaves on the run's signal: made once per run. */
  private readonly abandon = (): void => {
    const grant = this.grant;
    if (grant !== undefined) this.manager.release(grant);
  };

  /** Records the usage of the granted call in flight. */
  settle(usage: Usage): void {
    const grant = this.grant;
    if (grant === undefined) return;
    this.stopWaiting();
    settleAndForget(this.manager, grant, usage);
  }

  /** The granted call in flight failed: its grant goes back. */
  fail(error: unknown): void {
    const grant = this.grant;
    if (grant === undefined) return;
    this.stopWaiting();
    // The grant names the model it was made for (a handoff may have changed the run's agent since).
    returnFailedGrant(this.manager, grant, grant, error);
  }

  /** The call in flight is over: the holder forgets its grant and stops waiting for an abort for it. */
  clear(): void {
    if (this.grant === undefined) return;
    this.grant = undefined;
    this.stopWaiting();
    this.stopWaiting = noWait;
  }

  /** `settings` with `maxOutputTokens` lowered to `cap`: the same object call after call while neither changes. */
  cappedSettings(settings: ModelSettings, cap: number): ModelSettings {
    const known = this.capped;
    if (known !== undefined && known.from === settings && known.cap === cap) return known.settings;
    const made = { ...settings, maxOutputTokens: cap };
    this.capped = { from: settings, cap, settings: made };
    return made;
  }
}

/** What a call without a grant stops waiting for: nothing. */
function noWait(): void {}
