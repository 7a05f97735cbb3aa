import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import {
  liveRequests,
  type ResourceBranch,
  type ResourceEvent,
  type ResourceState,
  reservationsOf,
  resourceBranches,
  resourceLogic,
} from '../../src/resources/ledger.ts';
import {
  generateHarnessPaths,
  type HarnessEvent,
  harnessInitial,
  harnessKey,
  harnessStep,
  harnessWorlds,
} from './ledger-paths.ts';

/**
 * Tests generated from the resource manager's transition function: xstate/graph
 * enumerates shortest paths to every abstract state (and every branch taken into it) of small worlds; each path is
 * replayed on the runtime actor (the in-place logic that createResourceManager runs), which must end in the
 * abstract state the traversal reached and in exactly the state the pure (copying) function computes for the same
 * events, with the invariants holding after every event. Together the paths must
 * take every branch of the function, so a new branch without a path fails this suite.
 */

function checkInvariants(state: ResourceState, where: string): void {
  for (const scope of Object.values(state.scopes)) {
    expect(scope.reservedTokens, where).toBeGreaterThanOrEqual(0);
    expect(scope.reservedUsd, where).toBeGreaterThanOrEqual(-1e-9);
    expect(scope.windowTokens, where).toBeLessThanOrEqual(scope.spentTokens);
    const own = [...state.reservations.values()].filter((r) => r.scope === scope.id);
    expect(reservationsOf(state, scope).sort(), where).toEqual(own.map((r) => r.id).sort());
  }
  const granted = [...state.reservations.values()].filter((r) => r.status === 'granted');
  for (const scope of Object.values(state.scopes)) {
    // A scope counts the granted calls whose estimates it holds; with none it holds nothing.
    expect(scope.callsInFlight, where).toBe(granted.filter((r) => r.chain.includes(scope.id)).length);
    if (scope.callsInFlight === 0) expect([scope.reservedTokens, scope.reservedUsd], where).toEqual([0, 0]);
  }
  for (const r of granted) {
    expect(r.heldBy, where).toBeNull();
    // A bounded grant holds its prompt plus its output cap, never more output than the call asked for.
    if (r.bound && r.outputCap !== null) {
      expect(r.tokens, where).toBe(r.bound.inputTokens + r.outputCap);
      expect(r.outputCap, where).toBeLessThanOrEqual(r.bound.maxTokens);
    }
  }
  for (const quota of Object.values(state.quotas)) {
    expect(quota.inFlight, where).toBe(granted.filter((r) => r.quotas.includes(quota.key)).length);
    if (quota.requestsPerMinute !== null)
      expect(liveRequests(quota), where).toBeLessThanOrEqual(quota.requestsPerMinute);
  }
  const waiting = [...state.reservations.values()].filter((r) => r.status === 'waiting');
  expect(new Set(state.waiting), where).toEqual(new Set(waiting.map((r) => r.id)));
}

/** Replays a path on the runtime actor; returns its final state and the branches it took. */
function replay(events: HarnessEvent[]): { state: ResourceState; branches: Set<ResourceBranch> } {
  const initial = harnessInitial();
  const actor = createActor(resourceLogic, {
    input: { quotas: [{ provider: 'p', model: 'm', requestsPerMinute: 1, tokensPerMinute: 300 }] },
  });
  actor.start();
  // The same three scopes as the harness (it builds them the same way, at time 0).
  for (const scope of Object.values(initial.rm.scopes)) {
    const limit = {
      ...(scope.tokensLimit !== null ? { tokens: scope.tokensLimit } : {}),
      ...(scope.usdLimit !== null ? { usd: scope.usdLimit } : {}),
      ...(scope.windowMs !== null ? { windowMs: scope.windowMs } : {}),
    };
    actor.send({ type: 'scope.open', scope: scope.id, parent: scope.parent, limit, now: 0 });
  }
  const branches = new Set<ResourceBranch>();
  let now = 0;
  for (const [index, event] of events.entries()) {
    if (event.type === 'advance') {
      now += event.ms;
      continue;
    }
    actor.send({ ...event, now } as ResourceEvent);
    const state = actor.getSnapshot().context;
    for (const branch of state.trace) branches.add(branch);
    checkInvariants(state, `after step ${index} of ${JSON.stringify(events)}`);
  }
  const state = actor.getSnapshot().context;
  actor.stop();
  return { state, branches };
}

describe('resource manager: generated paths replayed on the runtime actor', () => {
  const covered = new Set<ResourceBranch>();
  let replayed = 0;

  for (const world of harnessWorlds) {
    it(`every shortest path ends where the traversal says (${world.name})`, () => {
      const paths = generateHarnessPaths(world.events);
      expect(paths.length).toBeGreaterThan(40);
      for (const path of paths) {
        const events = path.steps.slice(1).map((step) => step.event);
        const { state, branches } = replay(events);
        const description = JSON.stringify(events);
        // The runtime actor (in place) and the pure function (copying) agree exactly, outbox and trace included.
        const pure = events.reduce(harnessStep, harnessInitial());
        const comparable = (rm: ResourceState) =>
          events.every((event) => event.type === 'advance') ? { ...rm, outbox: [], trace: [] } : rm;
        expect(comparable(state), description).toEqual(comparable(pure.rm));
        // And the run ends in the abstract state the traversal reached with this path.
        expect(harnessKey({ ...pure, rm: state }), description).toBe(harnessKey(path.state.context));
        for (const branch of branches) covered.add(branch);
        replayed++;
      }
    });
  }

  it('the replayed paths take every branch of the transition function', () => {
    expect(replayed).toBeGreaterThan(300);
    expect(resourceBranches.filter((branch) => !covered.has(branch))).toEqual([]);
  });
});
