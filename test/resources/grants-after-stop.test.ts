import { createResourceManager } from 'troupe';
import { describe, expect, it } from 'vitest';

const usage = { input: 5, output: 5, cached: 0, reasoning: 0 };

/** After `stop()` nothing is decided any more, but a grant still out is returned at most once. */
describe('grants settled after stop()', () => {
  it('a grant out at stop settles once; one settled before stays settled', async () => {
    const manager = createResourceManager({ budgets: { perRun: { tokens: 10_000 } } });
    manager.openRun({ session: 's', provider: 'p', model: 'm' });
    const request = { session: 's', provider: 'p', model: 'm', estimate: { input: 10, output: 10 } };
    const first = await manager.reserve(request);
    const second = await manager.reserve(request);
    if (!first.granted || !second.granted) throw new Error('expected two grants');
    expect(manager.settle(first.grant, usage)).not.toBeNull();
    manager.stop();
    expect(manager.settle(first.grant, usage)).toBeNull();
    manager.settle(second.grant, usage);
    expect(manager.settle(second.grant, usage)).toBeNull();
    expect(manager.release(second.grant)).toBe(false);
    expect(manager.release(first.grant)).toBe(false);
  });
});
