import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { minOutputTokens } from '../../src/resources/ledger.ts';
import {
  createResourceManager,
  type Grant,
  type ReservationOutcome,
  type ResourceManager,
} from '../../src/resources/resource-manager.ts';

/**
 * Properties of the resource manager under random schedules on a simulated clock: concurrent
 * reservations from runs of two tenants (one run nested in another), settlements (actual usage at most the
 * estimate's prompt and the grant's output cap), releases (twice, on purpose), aborts of
 * waiting calls, 429s and time passing. After each schedule every outstanding call is settled or released and time
 * runs on until nothing waits. Then:
 *   (1) no budget's spend exceeds it: each call reads at most its prompt's estimate and writes at most the output
 *       its grant allows (`maxOutputTokens`), so the grants alone must keep every budget;
 *   (2) no quota window is exceeded: requests and tokens per minute, calls in flight, nothing during a retry-after;
 *   (3) every call was granted or denied (or aborted by its caller); waiting calls are granted first come, first served,
 *       except that a call held back by its budget's calls in flight lets the calls behind it pass;
 *   (4) a reservation is returned exactly once, and nothing stays reserved;
 *   (5) a call is denied for a budget only once that budget's spend leaves no room for a prompt and a minimal output:
 *       reservations alone make it wait.
 */

const numRuns = process.env.CI ? 500 : 120;
/** The largest prompt estimate a command asks for. */
const maxInput = 150;
const minute = 60_000;

type Command =
  | { kind: 'reserve'; session: number; input: number; output: number }
  | { kind: 'settle'; pick: number; fraction: number }
  | { kind: 'release'; pick: number; twice: boolean }
  | { kind: 'abort'; pick: number }
  | { kind: 'rate_limited'; retryAfterMs: number }
  | { kind: 'advance'; ms: number };

const commandArb: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('reserve' as const),
      session: fc.integer({ min: 0, max: 2 }),
      input: fc.integer({ min: 1, max: maxInput }),
      output: fc.integer({ min: 0, max: 100 }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('settle' as const),
      pick: fc.nat(),
      fraction: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat(), twice: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('abort' as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('rate_limited' as const),
      retryAfterMs: fc.integer({ min: 0, max: 30_000 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 40_000 }) }),
  },
);

const worldArb = fc.record({
  requestsPerMinute: fc.integer({ min: 1, max: 10 }),
  tokensPerMinute: fc.integer({ min: 250, max: 800 }),
  maxInFlight: fc.integer({ min: 1, max: 3 }),
  tenantTokens: fc.integer({ min: 200, max: 2_000 }),
  runTokens: fc.integer({ min: 100, max: 1_000 }),
});

interface Call {
  seq: number;
  session: number;
  /** The prompt's estimate, and the estimate with the expected output. */
  input: number;
  estimate: number;
  requestedAt: number;
  controller: AbortController;
  outcome: ReservationOutcome | undefined;
  grantOrder: number | undefined;
  grantedAt: number | undefined;
  /** Calls still unresolved when this one was asked for. */
  queuedBehind: number[];
  /** Tokens the quota counts for it: the actual usage once settled, else the estimate. */
  counted: number;
  /** Tokens spent: the actual usage once settled; 0 if released. */
  spent: number;
  closedAt: number | undefined;
  returned: number;
}

const sessions = ['s0', 's1', 's2'];
/** s0 and s2 belong to tenant acme (s2 nested in s0), s1 to globex. */
function openRuns(manager: ResourceManager, runTokens: number): void {
  manager.openRun({
    session: 's0',
    tenant: 'acme',
    provider: 'p',
    model: 'm',
    budget: { tokens: runTokens },
  });
  manager.openRun({
    session: 's1',
    tenant: 'globex',
    provider: 'p',
    model: 'm',
    budget: { tokens: runTokens },
  });
  manager.openRun({ session: 's2', parentSession: 's0', provider: 'p', model: 'm' });
}

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('resource manager properties (simulated clock)', () => {
  it('budgets, quotas, FIFO waits and exactly-once releases hold for random schedules', async () => {
    await fc.assert(
      fc.asyncProperty(
        worldArb,
        fc.array(commandArb, { minLength: 1, maxLength: 40 }),
        async (world, commands) => {
          const clock = new SimulatedClock();
          const manager = createResourceManager({
            clock,
            quotas: [
              {
                provider: 'p',
                requestsPerMinute: world.requestsPerMinute,
                tokensPerMinute: world.tokensPerMinute,
                maxInFlight: world.maxInFlight,
              },
            ],
            budgets: { perTenant: { tokens: world.tenantTokens } },
          });
          openRuns(manager, world.runTokens);
          const calls: Call[] = [];
          /** Reservations that waited for their budget's calls in flight at some point. */
          const heldByBudget = new Set<string>();
          const deniedWhileUnspent: string[] = [];
          manager.events.subscribe((notice) => {
            if (notice.type === 'budget_wait') heldByBudget.add(notice.reservation);
            if (notice.type === 'denied' && notice.reason === 'budget_exhausted') {
              // (5) checked when the denial happens, against the spend of the scope that denied it.
              const tenant = notice.scope.startsWith('tenant:');
              const name = notice.scope.slice(notice.scope.indexOf(':') + 1);
              const usage = tenant
                ? manager.usage({ tenant: name }).tenant
                : manager.usage({ session: name }).session;
              // The largest prompt and the minimal output would still have fitted: a denial by reservations.
              if (
                usage?.tokensLimit == null ||
                usage.windowTokens + maxInput + minOutputTokens <= usage.tokensLimit
              )
                deniedWhileUnspent.push(`${notice.scope}: ${JSON.stringify(usage)}`);
            }
          });
          /** Retry-after blocks: no grant after the 429 (`grantsBefore` grants had happened) before `until`. */
          const blocked: { grantsBefore: number; until: number }[] = [];
          let grants = 0;
          let inFlight = 0;
          let maxInFlightSeen = 0;

          const reserve = (session: number, input: number, output: number) => {
            const call: Call = {
              seq: calls.length,
              session,
              input,
              estimate: input + output,
              requestedAt: clock.now(),
              controller: new AbortController(),
              outcome: undefined,
              grantOrder: undefined,
              grantedAt: undefined,
              queuedBehind: calls.filter((other) => other.outcome === undefined).map((other) => other.seq),
              counted: input + output,
              spent: 0,
              closedAt: undefined,
              returned: 0,
            };
            calls.push(call);
            const estimate = { input, output };
            void manager
              .reserve(
                { session: sessions[session] as string, provider: 'p', model: 'm', estimate },
                call.controller.signal,
              )
              .then((outcome) => {
                call.outcome = outcome;
                if (outcome.granted) {
                  call.grantOrder = grants++;
                  call.grantedAt = clock.now();
                  inFlight++;
                  maxInFlightSeen = Math.max(maxInFlightSeen, inFlight);
                }
              });
          };
          const openGrants = () =>
            calls.filter((call) => call.outcome?.granted === true && call.closedAt === undefined);
          const grantOf = (call: Call) => (call.outcome as { grant: Grant }).grant;
          const settle = (call: Call, fraction: number) => {
            const grant = grantOf(call);
            // A call reads at most its prompt's estimate here and writes at most the output its grant allows (and
            // its expected output, so the quotas' estimates stay upper bounds: property (2) is about quotas).
            const expected = call.estimate - call.input;
            const input = Math.floor(call.input * fraction);
            const output = Math.floor(Math.min(grant.maxOutputTokens ?? expected, expected) * fraction);
            const actual = input + output;
            const settlement = manager.settle(grant, { input, output, cached: 0, reasoning: 0 });
            expect(settlement).not.toBeNull();
            expect(settlement?.returnedTokens).toBe(grant.tokens - actual);
            call.counted = actual;
            call.spent = actual;
            call.closedAt = clock.now();
            inFlight--;
            // (4) a settled grant cannot be released or settled again.
            expect(manager.release(grantOf(call))).toBe(false);
            expect(
              manager.settle(grantOf(call), { input: 1, output: 0, cached: 0, reasoning: 0 }),
            ).toBeNull();
          };
          const release = (call: Call, twice: boolean) => {
            expect(manager.release(grantOf(call))).toBe(true);
            call.returned++;
            call.closedAt = clock.now();
            inFlight--;
            if (twice) expect(manager.release(grantOf(call))).toBe(false);
          };

          for (const command of commands) {
            switch (command.kind) {
              case 'reserve':
                reserve(command.session, command.input, command.output);
                break;
              case 'settle': {
                const open = openGrants();
                const call = open[command.pick % Math.max(1, open.length)];
                if (call) settle(call, command.fraction);
                break;
              }
              case 'release': {
                const open = openGrants();
                const call = open[command.pick % Math.max(1, open.length)];
                if (call) release(call, command.twice);
                break;
              }
              case 'abort': {
                const waiting = calls.filter((call) => call.outcome === undefined);
                waiting[command.pick % Math.max(1, waiting.length)]?.controller.abort();
                break;
              }
              case 'rate_limited':
                manager.report429({ provider: 'p', model: 'm', retryAfterMs: command.retryAfterMs });
                blocked.push({ grantsBefore: grants, until: clock.now() + command.retryAfterMs });
                break;
              case 'advance':
                clock.increment(command.ms);
                break;
            }
            await flush();
          }
          // (3) Drain: close what is open, let time pass; every call must end granted, denied or aborted.
          for (
            let round = 0;
            round < 100 && calls.some((call) => call.outcome === undefined || openGrants().includes(call));
            round++
          ) {
            for (const call of openGrants()) settle(call, 1);
            // Settling grants waiting calls now; let their callbacks record the time before the clock moves on.
            await flush();
            clock.increment(minute);
            await flush();
          }
          expect(calls.filter((call) => call.outcome === undefined)).toEqual([]);
          expect(openGrants()).toEqual([]);

          const granted = calls.filter((call) => call.outcome?.granted === true);
          // (2) Quota windows: at each grant, the calls granted in the minute up to it fit the limits.
          for (const call of granted) {
            const at = call.grantedAt as number;
            // The manager's own account of the wait agrees with the time the test saw the grant.
            expect(call.requestedAt + grantOf(call).waitedMs).toBe(at);
            const window = granted.filter((other) => {
              const t = other.grantedAt as number;
              return t > at - minute && t <= at;
            });
            expect(window.length).toBeLessThanOrEqual(world.requestsPerMinute);
            expect(window.reduce((sum, other) => sum + other.counted, 0)).toBeLessThanOrEqual(
              world.tokensPerMinute,
            );
            for (const block of blocked)
              expect((call.grantOrder as number) >= block.grantsBefore && at < block.until).toBe(false);
          }
          expect(maxInFlightSeen).toBeLessThanOrEqual(world.maxInFlight);
          // (3) FIFO: a call granted after waiting was never overtaken by a later call, unless the earlier one was
          // held back by its own budget (then calls of other budgets may pass it).
          for (const call of granted) {
            for (const earlier of call.queuedBehind.map((seq) => calls[seq] as Call)) {
              if (earlier.outcome?.granted && !heldByBudget.has(grantOf(earlier).id))
                expect(earlier.grantOrder as number).toBeLessThan(call.grantOrder as number);
            }
          }
          // (1) Budgets: no call reads more than its prompt's estimate here, so no budget is passed at all.
          const spentOf = (session: number) =>
            granted.filter((call) => call.session === session).reduce((sum, call) => sum + call.spent, 0);
          const s0 = manager.usage({ session: 's0' });
          const s1 = manager.usage({ session: 's1' });
          // The nested run's spend shows on its caller's budget.
          expect(s0.session?.spentTokens).toBe(spentOf(0) + spentOf(2));
          expect(s1.session?.spentTokens).toBe(spentOf(1));
          for (const usage of [s0.session, s1.session, s0.tenant, s1.tenant]) {
            const limit = usage?.tokensLimit as number;
            expect(usage?.spentTokens as number).toBeLessThanOrEqual(limit);
          }
          expect(s0.tenant?.spentTokens).toBe(spentOf(0) + spentOf(2));
          expect(s1.tenant?.spentTokens).toBe(spentOf(1));
          // (4) Nothing stays reserved; every release counted once.
          for (const usage of [
            s0.session,
            s1.session,
            s0.tenant,
            s1.tenant,
            manager.usage({ session: 's2' }).session,
          ])
            expect(usage?.reservedTokens).toBe(0);
          for (const call of calls) expect(call.returned).toBeLessThanOrEqual(1);
          // (5) Denied only by spend, never by reservations alone.
          expect(deniedWhileUnspent).toEqual([]);
          manager.stop();
        },
      ),
      { numRuns },
    );
  });

  it('stop() resolves every waiting call and leaves no timer', async () => {
    const clock = new SimulatedClock();
    const manager = createResourceManager({ clock, quotas: [{ provider: 'p', requestsPerMinute: 1 }] });
    manager.openRun({ session: 's', provider: 'p', model: 'm' });
    const request = { session: 's', provider: 'p', model: 'm', estimate: { input: 1, output: 1 } };
    expect((await manager.reserve(request)).granted).toBe(true);
    const waiting = manager.reserve(request);
    manager.stop();
    expect(await waiting).toMatchObject({ granted: false, reason: 'stopped' });
    // The simulated clock holds no timeout any more: advancing it runs nothing.
    const timeouts = (clock as unknown as { timeouts: Map<unknown, unknown> }).timeouts;
    expect(timeouts.size).toBe(0);
  });
});
