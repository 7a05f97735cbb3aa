import { createResourceManager, defineAgent, type ResourceNotice, run } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';

/**
 * A `granted` notice reaches whoever keeps it: the manager's subscribers and a run's own `onNotice`. A run's event
 * stream has no event for it, so the manager need not build it for a run nobody else listens to.
 */

const answering = (name: string) =>
  defineAgent({
    name,
    instructions: '',
    model: scriptedModel([{ text: 'done', stopReason: 'end_turn', usage: { input: 20, output: 10 } }]),
  });

describe('granted notices', () => {
  it("reach the manager's subscribers for a run's calls; the run's stream shows no event for them", async () => {
    const manager = createResourceManager({ budgets: { perRun: { tokens: 10_000 } } });
    const notices: ResourceNotice[] = [];
    manager.events.subscribe((notice) => notices.push(notice));
    const result = await run(answering('a'), 'hi', { resources: manager, sessionId: 'a' });
    expect(result.status).toBe('completed');
    const granted = notices.filter((notice) => notice.type === 'granted');
    expect(granted).toEqual([
      expect.objectContaining({
        type: 'granted',
        session: 'a',
        waitedMs: 0,
        maxOutputTokens: expect.any(Number),
      }),
    ]);
    expect(notices.map((notice) => notice.type)).toEqual(['granted', 'spend']);
  });

  it("reach a run's own onNotice, also when the run is opened again without one", async () => {
    const manager = createResourceManager();
    const seen: ResourceNotice['type'][] = [];
    manager.openRun({
      session: 's',
      provider: 'p',
      model: 'm',
      onNotice: (notice) => seen.push(notice.type),
    });
    const request = { session: 's', provider: 'p', model: 'm', estimate: { input: 10, output: 10 } };
    const first = await manager.reserve(request);
    if (!first.granted) throw new Error('expected a grant');
    manager.settle(first.grant, { input: 10, output: 5, cached: 0, reasoning: 0 });
    manager.openRun({ session: 's', provider: 'p', model: 'm' });
    const second = await manager.reserve(request);
    if (!second.granted) throw new Error('expected a grant');
    expect(seen).toEqual(['granted', 'spend', 'granted']);
  });

  it('reach a subscriber for a run opened without onNotice', async () => {
    const manager = createResourceManager();
    const seen: ResourceNotice[] = [];
    manager.events.subscribe((notice) => seen.push(notice));
    manager.openRun({ session: 's', provider: 'p', model: 'm' });
    const outcome = await manager.reserve({
      session: 's',
      provider: 'p',
      model: 'm',
      estimate: { input: 4, output: 6 },
    });
    if (!outcome.granted) throw new Error('expected a grant');
    expect(seen).toEqual([
      {
        type: 'granted',
        time: expect.any(Number),
        session: 's',
        reservation: outcome.grant.id,
        tokens: 10,
        usd: null,
        maxOutputTokens: null,
        waitedMs: 0,
      },
    ]);
  });

  it('a spend goes to the sink of the run as open when its grant settles, after the run was opened again', async () => {
    const manager = createResourceManager();
    const before: ResourceNotice['type'][] = [];
    const after: ResourceNotice['type'][] = [];
    manager.openRun({
      session: 's',
      provider: 'p',
      model: 'm',
      onNotice: (notice) => before.push(notice.type),
    });
    const outcome = await manager.reserve({
      session: 's',
      provider: 'p',
      model: 'm',
      estimate: { input: 4, output: 6 },
    });
    if (!outcome.granted) throw new Error('expected a grant');
    manager.openRun({
      session: 's',
      provider: 'p',
      model: 'm',
      onNotice: (notice) => after.push(notice.type),
    });
    expect(manager.settle(outcome.grant, { input: 4, output: 2, cached: 0, reasoning: 0 })).toMatchObject({
      tokens: 6,
    });
    expect(before).toEqual(['granted']);
    expect(after).toEqual(['spend']);
  });
});
