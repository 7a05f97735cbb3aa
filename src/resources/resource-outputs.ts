import type { ResourceOutput, ResourceState } from './ledger.ts';
import type { ReservationWaiters } from './reservation-waiters.ts';
import type { ResourceNotices } from './resource-notices.ts';
import { sessionOf } from './scope-names.ts';

/**
 * Acts on one decision of the manager's logic: answers the waiting call it concerns and tells the subscribers.
 * Spend and closed scopes are reported by `settle()` and `closeRun()`, which know the usage and the tenant.
 */
export function dispatchOutput(
  output: ResourceOutput,
  now: number,
  state: ResourceState,
  waiters: ReservationWaiters,
  notices: ResourceNotices,
): void {
  switch (output.kind) {
    case 'granted': {
      const reservation = state.reservations.get(output.id);
      const waiter = waiters.grant(output.id, reservation, output.waitedMs);
      // Built only when someone keeps it: a run's event stream has no event for it, and usually nobody subscribed.
      const sink = waiter?.run?.grantSink;
      if (waiter && reservation && (sink !== undefined || notices.subscribed))
        notices.notifyRun(
          {
            type: 'granted',
            time: now,
            session: waiter.request.session,
            reservation: output.id,
            tokens: reservation.tokens,
            usd: reservation.usd,
            maxOutputTokens: output.maxOutputTokens,
            waitedMs: output.waitedMs,
          },
          sink,
        );
      return;
    }
    case 'denied': {
      const session = waiters.sessionOf(output.id) ?? output.scope;
      waiters.deny(output.id, output.reason, output.blocking, output.message);
      notices.notify({
        type: 'denied',
        time: now,
        session,
        reason: output.reason,
        scope: output.blocking,
        message: output.message,
      });
      return;
    }
    case 'waiting': {
      const session = waiters.sessionOf(output.id);
      if (session !== undefined)
        notices.notify({
          type: 'quota_wait',
          time: now,
          session,
          quota: output.quota,
          position: output.position,
        });
      return;
    }
    case 'budget_wait': {
      const session = waiters.sessionOf(output.id);
      if (session !== undefined)
        notices.notify({
          type: 'budget_wait',
          time: now,
          session,
          scope: output.blocking,
          reservation: output.id,
          dimension: output.dimension,
          spent: output.spent,
          reserved: output.reserved,
          limit: output.limit,
        });
      return;
    }
    case 'released':
      waiters.released(output.id);
      return;
    case 'budget_warning':
      notices.notify({
        type: 'budget_warning',
        time: now,
        session: sessionOf(output.origin),
        scope: output.scope,
        dimension: output.dimension,
        spent: output.spent,
        limit: output.limit,
        threshold: output.threshold,
      });
      return;
    case 'rate_limited':
      notices.notify({ type: 'rate_limited', time: now, quota: output.quota, until: output.until });
      return;
    case 'spend':
    case 'scope_closed':
      return;
  }
}
