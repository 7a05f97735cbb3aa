import { createResourceManager, defineAgent, run } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it, vi } from 'vitest';

/**
 * The ledger is written never to throw; should a fault of its own make it throw anyway, the manager must not leave
 * a run waiting for an answer that cannot come. The fault is simulated: a session whose name carries the marker
 * makes the ledger throw on its call's reservation.
 */
const faultMarker = '__fault_in_the_ledger';
vi.mock('../../src/resources/ledger.ts', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../src/resources/ledger.ts')>();
  return {
    ...actual,
    applyResourceEvent(...args: Parameters<typeof actual.applyResourceEvent>) {
      const [, event] = args;
      if (event.type === 'reserve' && event.scope.includes(faultMarker))
        throw new RangeError('simulated fault in the ledger');
      return actual.applyResourceEvent(...args);
    },
  };
});

const agent = (name: string) =>
  defineAgent({
    name,
    instructions: 'Answer.',
    model: scriptedModel([{ text: 'done', stopReason: 'end_turn' }]),
  });

describe('a fault inside the resource manager’s ledger', () => {
  it('fails the run that hit it and every later call with a typed error naming the fault, instead of leaving them waiting', async () => {
    const manager = createResourceManager({ quotas: [{ provider: 'scripted', requestsPerMinute: 1_000 }] });
    const healthy = await run(agent('before'), 'hi', { resources: manager, sessionId: 'before' });
    expect(healthy.status).toBe('completed');

    const hit = await run(agent('hit'), 'hi', { resources: manager, sessionId: `s-${faultMarker}` });
    expect(hit.status).toBe('failed');
    expect(hit.stopReason).toBe('error');
    expect(hit.error).toMatchObject({ name: 'ResourceError', code: 'resources_stopped' });
    expect(hit.error?.message).toMatch(/failed on a reserve event: simulated fault in the ledger/);

    // The ledger takes no more events: a later run is refused the same way, at once.
    const later = await run(agent('later'), 'hi', { resources: manager, sessionId: 'later' });
    expect(later.status).toBe('failed');
    expect(later.error?.message).toMatch(/simulated fault in the ledger/);
    manager.stop();
  });
});
