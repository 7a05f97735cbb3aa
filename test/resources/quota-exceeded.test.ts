import { createResourceManager, defineAgent, type RunEvent, stream } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';

/** A call larger than a tokens-per-minute quota is not a spent budget: the run fails naming the quota. */
describe('a call larger than a tokens-per-minute quota', () => {
  it('ends the run with stop reason error and a quota_exceeded error naming the quota, not budget_exhausted', async () => {
    const manager = createResourceManager({ quotas: [{ provider: 'scripted', tokensPerMinute: 100 }] });
    const agent = defineAgent({
      name: 'verbose',
      // About 250 tokens of prompt: more than the whole quota allows in a minute.
      instructions: 'x'.repeat(1_000),
      model: scriptedModel([{ text: 'never', stopReason: 'end_turn' }]),
    });
    const s = stream(agent, 'hi', { resources: manager, sessionId: 'big' });
    const events: RunEvent[] = [];
    for await (const event of s) events.push(event);
    const result = await s.result;
    expect(result.stopReason).toBe('error');
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ name: 'QuotaExceededError', code: 'quota_exceeded' });
    expect(result.error?.message).toMatch(/100 tokens-per-minute quota of scripted:\*/);
    expect(result.usage).toMatchObject({ input: 0, output: 0 });
    const error = events.find((event) => event.type === 'error');
    expect(error?.data).toMatchObject({ code: 'quota_exceeded', type: 'QuotaExceededError' });
    // Nothing was spent or left reserved, and the tenant's budget is untouched.
    expect(manager.usage({ session: 'big' }).session).toMatchObject({ spentTokens: 0, reservedTokens: 0 });
    manager.stop();
  });
});
