import { createResourceManager, defineAgent, type ResourceNotice, run } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';

/**
 * A budget that only the estimates of calls in flight fill makes a call wait for them, not fail: the free-tier case
 * of many small calls under a small tenant budget, where estimates run far above the real spend.
 */

/** $1 per million input tokens, $4 per million output: $0.001 buys about 250 output tokens. */
const prices = { tiny: { input: 1, output: 4 } };

/** A promise to hold a scripted answer back until `open()`. */
function gate() {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** A model whose first answer waits for the gate; later calls answer at once. */
function gatedModel(held: ReturnType<typeof gate>, usage = { input: 20, output: 10 }) {
  return scriptedModel(
    async (_request, index) => {
      if (index === 0) await held.opened;
      return { text: 'done', stopReason: 'end_turn', usage };
    },
    { model: 'tiny' },
  );
}

const agentOn = (name: string, model: ReturnType<typeof scriptedModel>) =>
  defineAgent({ name, instructions: '', model });

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('calls held back only by reservations in flight', () => {
  it('$0 spent of a $0.001 tenant budget: a second run waits for the first call, then completes', async () => {
    const manager = createResourceManager({ prices, budgets: { tenants: { free: { usd: 0.001 } } } });
    const notices: ResourceNotice[] = [];
    manager.events.subscribe((notice) => notices.push(notice));
    const first = gate();
    const a = run(agentOn('a', gatedModel(first)), 'hi', {
      resources: manager,
      tenant: 'free',
      sessionId: 'a',
    });
    await tick();
    // The first call holds the whole budget: its prompt, and the output the rest of the budget buys (its cap).
    const reserved = manager.usage({ tenant: 'free' }).tenant?.reservedUsd ?? 0;
    expect(reserved).toBeLessThanOrEqual(0.001);
    expect(reserved).toBeGreaterThan(0.001 - 4 / 1_000_000);
    const b = run(
      agentOn(
        'b',
        scriptedModel(() => ({ text: 'ok', usage: { input: 20, output: 10 } }), { model: 'tiny' }),
      ),
      'hi',
      {
        resources: manager,
        tenant: 'free',
        sessionId: 'b',
      },
    );
    await tick();
    const wait = notices.find((notice) => notice.type === 'budget_wait');
    expect(wait).toMatchObject({
      session: 'b',
      scope: 'tenant:free',
      dimension: 'usd',
      spent: 0,
      limit: 0.001,
    });
    expect(manager.usage({ session: 'b' }).session?.calls).toBe(0);
    first.open();
    const [resultA, resultB] = await Promise.all([a, b]);
    expect(resultA.stopReason).toBe('completed');
    expect(resultB.stopReason).toBe('completed');
    // Both ran for $0.00012 of the $0.001.
    expect(manager.usage({ tenant: 'free' }).tenant?.spentUsd).toBeCloseTo(0.00012, 10);
    expect(notices.some((notice) => notice.type === 'denied')).toBe(false);
    manager.stop();
  });

  it('a waiting call honours its AbortSignal; one whose budget the calls in flight did spend is denied', async () => {
    // The first call's reservation (its prompt and the rest of the budget as its output cap) fills the 200 tokens.
    const manager = createResourceManager({ budgets: { tenants: { free: { tokens: 200 } } } });
    const first = gate();
    const big = gatedModel(first, { input: 150, output: 50 });
    const a = run(agentOn('a', big), 'hi', { resources: manager, tenant: 'free' });
    await tick();
    const controller = new AbortController();
    const aborted = run(agentOn('b', scriptedModel([{ text: 'never' }])), 'hi', {
      resources: manager,
      tenant: 'free',
      signal: controller.signal,
    });
    const denied = run(agentOn('c', scriptedModel([{ text: 'never' }])), 'hi', {
      resources: manager,
      tenant: 'free',
    });
    await tick();
    controller.abort();
    expect((await aborted).stopReason).toBe('aborted');
    first.open();
    expect((await a).stopReason).toBe('completed');
    const result = await denied;
    expect(result.stopReason).toBe('budget_exhausted');
    expect(result.error?.message).toMatch(/token budget of tenant:free exhausted: 200 spent of 200/);
    expect(manager.usage({ tenant: 'free' }).tenant).toMatchObject({ spentTokens: 200, reservedTokens: 0 });
    manager.stop();
  });
});
