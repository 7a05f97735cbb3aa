import type { ErrorInfo } from '../core/errors.ts';
import type { ReservationOutcome } from './reservation-waiters.ts';

type Denial = Extract<ReservationOutcome, { granted: false }>;

/**
 * The error a run ends with when the manager refuses a call for a reason other than a spent budget (a spent budget
 * ends the run `budget_exhausted` instead): a call larger than a tokens-per-minute quota can never be granted
 * however long it waits, and a model without a price cannot be counted against a USD budget. Both are errors of
 * the setup, so the run fails with stop reason `error` and an error that names the quota or the model.
 */
export function denialError(denial: Denial): ErrorInfo {
  switch (denial.reason) {
    case 'exceeds_quota':
      return {
        name: 'QuotaExceededError',
        code: 'quota_exceeded',
        message: `The call can never run: ${denial.message}. Raise that quota's tokensPerMinute or send a smaller request.`,
      };
    case 'unpriced_model':
      return { name: 'ConfigError', code: 'config_invalid', message: denial.message };
    default:
      return { name: 'ResourceError', code: `resources_${denial.reason}`, message: denial.message };
  }
}
