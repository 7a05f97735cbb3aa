import { createResourceManager, type Grant } from 'troupe';
import { describe, expect, it } from 'vitest';

/**
 * A grant goes back exactly once: its first settlement or release counts, any later one does nothing; and only a
 * granted reservation goes back through a grant (a call still waiting goes back through its signal).
 */

const usage = { input: 10, output: 5, cached: 0, reasoning: 0 };
const request = (session: string) => ({
  session,
  provider: 'p',
  model: 'm',
  estimate: { input: 10, output: 10 },
});

async function granted(manager: ReturnType<typeof createResourceManager>, session: string): Promise<Grant> {
  const outcome = await manager.reserve(request(session));
  if (!outcome.granted) throw new Error(`denied: ${outcome.message}`);
  return outcome.grant;
}

describe('a grant goes back once', () => {
  it('settles once: a second settlement and a later release do nothing', async () => {
    const manager = createResourceManager({ budgets: { perTenant: { tokens: 1_000 } } });
    manager.openRun({ session: 's', provider: 'p', model: 'm' });
    const grant = await granted(manager, 's');
    expect(manager.settle(grant, usage)).toMatchObject({ tokens: 15 });
    expect(manager.settle(grant, usage)).toBeNull();
    expect(manager.release(grant)).toBe(false);
    expect(manager.usage({ session: 's' }).session).toMatchObject({ spentTokens: 15, calls: 1 });
  });

  it('releases once: a second release and a later settlement do nothing', async () => {
    const manager = createResourceManager({ budgets: { perTenant: { tokens: 1_000 } } });
    manager.openRun({ session: 's', provider: 'p', model: 'm' });
    const grant = await granted(manager, 's');
    expect(manager.release(grant)).toBe(true);
    expect(manager.release(grant)).toBe(false);
    expect(manager.settle(grant, usage)).toBeNull();
    expect(manager.usage({ session: 's' }).session).toMatchObject({ spentTokens: 0, reservedTokens: 0 });
  });

  it('a grant naming a call that still waits does not release it', async () => {
    const manager = createResourceManager({ concurrency: 1 });
    manager.openRun({ session: 'a', provider: 'p', model: 'm' });
    manager.openRun({ session: 'b', provider: 'p', model: 'm' });
    const first = await granted(manager, 'a');
    let answered = false;
    const second = manager.reserve(request('b')).then((outcome) => {
      answered = true;
      return outcome;
    });
    await Promise.resolve();
    // The waiting call's id is the next one after the first grant's.
    const forged: Grant = { ...first, id: `r${Number(first.id.slice(1)) + 1}`, session: 'b' };
    expect(manager.release(forged)).toBe(false);
    expect(answered).toBe(false);
    manager.settle(first, usage);
    expect(await second).toMatchObject({ granted: true });
  });
});
