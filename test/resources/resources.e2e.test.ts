import {
  ConfigError,
  createAgentSystem,
  createResourceManager,
  defineAgent,
  ModelError,
  type RunEvent,
  run,
  stream,
  tool,
  validateHistory,
} from 'troupe';
import { type ScriptedTurn, scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { z } from 'zod';

/** A tool the model can call forever: distinct arguments each time, so no duplicate or cap policy stops it. */
const lookup = tool({
  name: 'lookup',
  description: 'Looks a number up',
  input: z.object({ n: z.number() }),
  execute: ({ n }) => `value ${n}`,
});

const turnUsage = { input: 300, output: 100 };

/** A model that keeps asking for tools (400 tokens a call) and would never stop on its own. */
function toolHungryAgent(name = 'hungry', model = 'scripted') {
  return defineAgent({
    name,
    instructions: 'Look things up.',
    model: scriptedModel(
      (_request, index): ScriptedTurn => ({
        toolCalls: [{ name: 'lookup', args: { n: index } }],
        stopReason: 'tool_use',
        usage: turnUsage,
      }),
      { model },
    ),
    tools: [lookup],
    limits: { maxSteps: 1000, maxToolCallsPerTool: null },
  });
}

function answeringAgent(name: string, usage = { input: 10, output: 5 }, model = 'scripted') {
  return defineAgent({
    name,
    instructions: '',
    model: scriptedModel(() => ({ text: 'done', stopReason: 'end_turn', usage }), { model }),
  });
}

async function collect(events: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const all: RunEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

describe('budgets end to end', () => {
  it('a 2,000-token budget stops a tool-hungry agent with budget_exhausted and a valid partial history', async () => {
    const s = stream(toolHungryAgent(), 'go', { budget: { tokens: 2_000 } });
    const events = await collect(s);
    const result = await s.result;
    expect(result.status).toBe('stopped');
    expect(result.stopReason).toBe('budget_exhausted');
    expect(result.error?.message).toMatch(/token budget of session:.* exhausted/);
    expect(() => validateHistory(result.history)).not.toThrow();
    expect(result.toolCallCount).toBeGreaterThan(0);
    const spent = result.usage.input + result.usage.output;
    // Spend may pass the budget by at most one call: 5 calls of 400 reach exactly 2,000 here.
    expect(spent).toBeGreaterThanOrEqual(2_000);
    expect(spent).toBeLessThanOrEqual(2_000 + 400);
    const spends = events.filter((event) => event.type === 'spend');
    expect(spends).toHaveLength(result.modelCalls);
    expect(spends[0]?.data).toMatchObject({ tokens: 400, usd: null });
    const warnings = events.filter((event) => event.type === 'budget_warning');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.data).toMatchObject({ dimension: 'tokens', limit: 2_000, threshold: 0.8 });
    expect(events.at(-1)?.type).toBe('run_end');
  });

  it('two tenants do not share budgets; usage() reports spend and remaining per tenant and session', async () => {
    const manager = createResourceManager({ budgets: { perTenant: { tokens: 1_000 } } });
    const exhausted = await run(toolHungryAgent('a'), 'go', {
      resources: manager,
      tenant: 'acme',
      sessionId: 'acme-1',
    });
    expect(exhausted.stopReason).toBe('budget_exhausted');
    const other = await run(answeringAgent('b'), 'hi', {
      resources: manager,
      tenant: 'globex',
      sessionId: 'g-1',
    });
    expect(other.stopReason).toBe('completed');

    const acme = manager.usage({ tenant: 'acme' });
    expect(acme.tenant?.spentTokens).toBe(1_200);
    expect(acme.tenant?.remainingTokens).toBe(0);
    const globex = manager.usage({ session: 'g-1' });
    expect(globex.tenant?.scope).toBe('tenant:globex');
    expect(globex.tenant?.spentTokens).toBe(15);
    expect(globex.tenant?.remainingTokens).toBe(985);
    expect(globex.session).toMatchObject({ spentTokens: 15, calls: 1, open: false, reservedTokens: 0 });
    // The exhausted tenant stays exhausted for its next run.
    const again = await run(answeringAgent('c'), 'hi', { resources: manager, tenant: 'acme' });
    expect(again.stopReason).toBe('budget_exhausted');
    expect(again.modelCalls).toBe(0);
    manager.stop();
  });

  it("a nested run spends on its caller's budget", async () => {
    const manager = createResourceManager();
    let childSpent = 0;
    const delegate = tool({
      name: 'delegate',
      description: 'Asks a helper agent',
      input: z.object({}),
      execute: async (_args, ctx) => {
        const child = await run(answeringAgent('helper', { input: 200, output: 50 }), 'help', {
          parent: ctx,
          sessionId: `${ctx.sessionId}/helper`,
        });
        childSpent = child.usage.input + child.usage.output;
        return child.text;
      },
    });
    const parent = defineAgent({
      name: 'boss',
      instructions: '',
      model: scriptedModel([
        {
          toolCalls: [{ name: 'delegate', args: {} }],
          stopReason: 'tool_use',
          usage: { input: 10, output: 10 },
        },
        { text: 'ok', stopReason: 'end_turn', usage: { input: 10, output: 10 } },
      ]),
      tools: [delegate],
    });
    const result = await run(parent, 'go', {
      resources: manager,
      budget: { tokens: 10_000 },
      sessionId: 'boss-1',
    });
    expect(result.stopReason).toBe('completed');
    expect(childSpent).toBe(250);
    const usage = manager.usage({ session: 'boss-1' });
    // 40 tokens of its own plus the helper's 250.
    expect(usage.session?.spentTokens).toBe(290);
    expect(usage.session?.remainingTokens).toBe(10_000 - 290);
    expect(manager.usage({ session: 'boss-1/helper' }).session?.spentTokens).toBe(250);
    manager.stop();
  });

  it("a nested run is stopped by its caller's exhausted budget", async () => {
    const manager = createResourceManager();
    let childStop = '';
    const delegate = tool({
      name: 'delegate',
      description: 'Asks a helper agent',
      input: z.object({}),
      execute: async (_args, ctx) => {
        const child = await run(toolHungryAgent('helper'), 'help', { parent: ctx });
        childStop = child.stopReason;
        return child.stopReason;
      },
    });
    const parent = defineAgent({
      name: 'boss',
      instructions: '',
      model: scriptedModel(() => ({
        toolCalls: [{ name: 'delegate', args: {} }],
        stopReason: 'tool_use',
        usage: { input: 10, output: 10 },
      })),
      tools: [delegate],
      limits: { maxDuplicateToolCalls: 100 },
    });
    const result = await run(parent, 'go', { resources: manager, budget: { tokens: 1_500 } });
    expect(childStop).toBe('budget_exhausted');
    expect(result.stopReason).toBe('budget_exhausted');
    expect(() => validateHistory(result.history)).not.toThrow();
    manager.stop();
  });

  it('a USD budget with an unknown model is a ConfigError naming the model; a price makes it work', async () => {
    await expect(
      run(answeringAgent('x', undefined, 'my-model'), 'hi', { budget: { usd: 1 } }),
    ).rejects.toThrow(ConfigError);
    await expect(
      run(answeringAgent('x', undefined, 'my-model'), 'hi', { budget: { usd: 1 } }),
    ).rejects.toThrow(/"my-model" has no price/);
    const tenantUsd = createResourceManager({ budgets: { tenants: { acme: { usd: 5 } } } });
    expect(() => stream(answeringAgent('x'), 'hi', { resources: tenantUsd, tenant: 'acme' })).toThrow(
      /model "scripted" has no price, but tenant:acme has a USD budget/,
    );
    tenantUsd.stop();

    const priced = createResourceManager({ prices: { 'my-model': { input: 1_000, output: 2_000 } } });
    const s = stream(answeringAgent('x', { input: 100, output: 50 }, 'my-model'), 'hi', {
      resources: priced,
      budget: { usd: 1 },
      sessionId: 'usd-1',
    });
    const events = await collect(s);
    expect((await s.result).stopReason).toBe('completed');
    const spend = events.find((event) => event.type === 'spend');
    // 100 × $1,000/M + 50 × $2,000/M = $0.2
    expect(spend?.type === 'spend' && spend.data.usd).toBeCloseTo(0.2, 10);
    expect(priced.usage({ session: 'usd-1' }).session?.remainingUsd).toBeCloseTo(0.8, 10);
    priced.stop();
  });

  it('known models are priced by family: dated snapshots find their entry', () => {
    const manager = createResourceManager();
    expect(manager.priceOf('gpt-4o-mini-2024-07-18')).toEqual(manager.priceOf('gpt-4o-mini'));
    expect(manager.priceOf('claude-sonnet-4-6')?.output).toBe(15);
    expect(manager.priceOf('gemini-2.5-flash-lite')).not.toEqual(manager.priceOf('gemini-2.5-flash'));
    expect(manager.priceOf('scripted')).toBeUndefined();
    manager.stop();
  });

  it('bad budgets and quotas are ConfigErrors', async () => {
    expect(() => createResourceManager({ quotas: [{ provider: 'p', requestsPerMinute: 0 }] })).toThrow(
      ConfigError,
    );
    expect(() => createResourceManager({ budgets: { perRun: { tokens: -1 } } })).toThrow(ConfigError);
    expect(() => createResourceManager({ prices: { m: { input: Number.NaN, output: 1 } } })).toThrow(
      ConfigError,
    );
    await expect(run(answeringAgent('x'), 'hi', { budget: { tokens: 0 } })).rejects.toThrow(ConfigError);
  });
});

describe('the agent system', () => {
  it('createAgentSystem({ resources }) shares tenant budgets across sessions; system.usage() reports them', async () => {
    const system = createAgentSystem({ resources: { budgets: { tenants: { acme: { tokens: 500 } } } } });
    const first = await system.spawn(answeringAgent('one', { input: 300, output: 100 }), 'hi', {
      tenant: 'acme',
      sessionId: 'one',
    }).result;
    expect(first.stopReason).toBe('completed');
    // 400 of 500 spent: the next session of the tenant may still start one call, its output cut to what the budget
    // has left after its prompt's estimate (5 tokens: 95); it reads 300, so the budget is passed by that estimate's
    // error. The session after it may not start.
    const second = await system.spawn(answeringAgent('two', { input: 300, output: 100 }), 'hi', {
      tenant: 'acme',
    }).result;
    expect(second.stopReason).toBe('completed');
    const third = await system.spawn(answeringAgent('three'), 'hi', { tenant: 'acme' }).result;
    expect(third.stopReason).toBe('budget_exhausted');
    const other = await system.spawn(answeringAgent('four'), 'hi', { tenant: 'globex' }).result;
    expect(other.stopReason).toBe('completed');
    expect(system.usage({ tenant: 'acme' }).tenant).toMatchObject({ spentTokens: 795, remainingTokens: 0 });
    expect(system.usage({ session: 'one' })).toMatchObject({
      tenant: { scope: 'tenant:acme' },
      session: { spentTokens: 400 },
    });
    expect(system.usage({ tenant: 'globex' }).tenant?.spentTokens).toBe(15);
    await system.shutdown();
    expect(createAgentSystem().usage()).toEqual({ tenant: null, session: null });
  });
});

describe('quotas end to end (simulated clock)', () => {
  it('a call over the requests-per-minute quota waits its turn (quota_wait event) and runs when the window allows', async () => {
    const clock = new SimulatedClock();
    const manager = createResourceManager({
      clock,
      quotas: [{ provider: 'scripted', requestsPerMinute: 1 }],
    });
    const first = await run(answeringAgent('one'), 'hi', { resources: manager, clock });
    expect(first.stopReason).toBe('completed');
    const s = stream(answeringAgent('two'), 'hi', { resources: manager, clock });
    const events: RunEvent[] = [];
    const done = (async () => {
      for await (const event of s) events.push(event);
    })();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(events.some((event) => event.type === 'quota_wait')).toBe(true);
    expect(events.some((event) => event.type === 'model_response')).toBe(false);
    clock.increment(60_000);
    await done;
    expect((await s.result).stopReason).toBe('completed');
    manager.stop();
  });

  it('a 429 blocks the quota until its retry-after; an abort while waiting releases the reservation', async () => {
    const clock = new SimulatedClock();
    const manager = createResourceManager({ clock });
    const limited = defineAgent({
      name: 'limited',
      instructions: '',
      model: scriptedModel([
        { error: new ModelError('rate_limited', 'slow down', { status: 429, retryAfterMs: 5_000 }) },
      ]),
    });
    const failed = await run(limited, 'hi', { resources: manager, clock });
    expect(failed.stopReason).toBe('error');
    const controller = new AbortController();
    const waiting = run(answeringAgent('next'), 'hi', {
      resources: manager,
      clock,
      signal: controller.signal,
    });
    await new Promise((resolve) => setTimeout(resolve, 0));
    controller.abort();
    expect((await waiting).stopReason).toBe('aborted');
    // Still blocked: the next call waits, then runs once the retry-after has passed.
    const later = run(answeringAgent('later'), 'hi', { resources: manager, clock, sessionId: 'later' });
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(manager.usage({ session: 'later' }).session?.calls).toBe(0);
    clock.increment(5_000);
    expect((await later).stopReason).toBe('completed');
    manager.stop();
  });
});

describe('the reservation estimate', () => {
  it('counts the prompt at about four characters a token plus the expected output, capped by max output tokens', async () => {
    const { estimateRequest, defaultOutputEstimate } = await import(
      '../../src/resources/resource-binding.ts'
    );
    const request = {
      messages: [
        { role: 'system' as const, content: 'x'.repeat(400) },
        { role: 'user' as const, content: [{ type: 'text' as const, text: 'y'.repeat(400) }] },
      ],
      tools: [],
      settings: {},
      signal: new AbortController().signal,
    };
    expect(estimateRequest(request)).toEqual({ input: 200 + 8, output: defaultOutputEstimate });
    const withTools = {
      ...request,
      tools: [{ name: 'lookup', description: 'd', parameters: { type: 'object' } }],
    };
    const size = 'lookup'.length + 1 + JSON.stringify({ type: 'object' }).length;
    expect(estimateRequest({ ...withTools, settings: { maxOutputTokens: 50 } })).toEqual({
      input: Math.ceil((800 + size) / 4) + 8,
      output: 50,
    });
    expect(estimateRequest(request, 30)).toEqual({ input: 208, output: 30 });
    expect(estimateRequest({ ...request, settings: { maxOutputTokens: 20 } }, 30).output).toBe(20);
  });
});
