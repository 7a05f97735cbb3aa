import {
  agentTool,
  createResourceManager,
  defineAgent,
  type ModelRequest,
  type ResourceManager,
  type RunEvent,
  run,
  stream,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { minOutputTokens } from '../../src/resources/ledger.ts';
import { estimateRequest } from '../../src/resources/resource-binding.ts';

/**
 * A budget's reservation bounds the call it grants: the call's output is capped at what every budget in scope has
 * left, so calls in flight together, a nested agent's calls and a single long answer all stay within the budget.
 * The scripted turns give no usage, so each reports the prompt the manager estimated and 4 characters per output
 * token: the estimates are exact and the budgets must hold to the token (and to the cent).
 */

/** 4,000 characters: a 1,000-token answer. */
const longAnswer = 'word '.repeat(800);

/**
 * Holds every model call until `size` calls have either reached the model or been told to wait for their budget,
 * so the calls that can be in flight together are.
 */
function crowd(size: number) {
  let arrived = 0;
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return {
    opened,
    arrive() {
      arrived += 1;
      if (arrived >= size) open();
    },
    watch(manager: ResourceManager) {
      manager.events.subscribe((notice) => {
        if (notice.type === 'budget_wait' || notice.type === 'denied') this.arrive();
      });
    },
  };
}

/** An agent that answers with 1,000 tokens once the crowd has gathered. */
function longWriter(name: string, gathered: ReturnType<typeof crowd>, model = 'scripted') {
  return defineAgent({
    name,
    description: 'Writes a long answer',
    instructions: '',
    model: scriptedModel(
      async () => {
        gathered.arrive();
        await gathered.opened;
        return { text: longAnswer, stopReason: 'end_turn' };
      },
      { model },
    ),
  });
}

describe('a reservation bounds its call', () => {
  it('8 concurrent 1,000-token runs spend no more than a 2,000-token tenant budget', async () => {
    const manager = createResourceManager({ budgets: { tenants: { acme: { tokens: 2_000 } } } });
    const gathered = crowd(8);
    gathered.watch(manager);
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        run(longWriter(`w${i}`, gathered), 'write', { resources: manager, tenant: 'acme' }),
      ),
    );
    const tenant = manager.usage({ tenant: 'acme' }).tenant;
    expect(tenant?.spentTokens).toBeLessThanOrEqual(2_000);
    // The first call wrote its 1,000 tokens; the budget's rest went to the next, cut short; the others were refused.
    expect(tenant?.spentTokens).toBeGreaterThan(1_900);
    expect(
      results.filter((result) => result.stopReason === 'budget_exhausted').length,
    ).toBeGreaterThanOrEqual(6);
    expect(tenant?.reservedTokens).toBe(0);
    manager.stop();
  });

  it("8 agents used as tools at once spend no more than their caller's 2,000-token run budget", async () => {
    const manager = createResourceManager();
    const gathered = crowd(8);
    gathered.watch(manager);
    const helper = longWriter('helper', gathered);
    const lead = defineAgent({
      name: 'lead',
      instructions: '',
      model: scriptedModel([
        {
          toolCalls: Array.from({ length: 8 }, (_, i) => ({ name: 'helper', args: { input: `part ${i}` } })),
          stopReason: 'tool_use',
        },
        { text: 'done', stopReason: 'end_turn' },
      ]),
      tools: [agentTool(helper)],
      limits: { maxToolCallsPerTool: null },
    });
    const result = await run(lead, 'split the work', {
      resources: manager,
      budget: { tokens: 2_000 },
      sessionId: 'lead-run',
    });
    const session = manager.usage({ session: 'lead-run' }).session;
    expect(session?.spentTokens).toBeLessThanOrEqual(2_000);
    expect(session?.spentTokens).toBeGreaterThan(1_000);
    expect(['completed', 'budget_exhausted']).toContain(result.stopReason);
    manager.stop();
  });

  it('40 concurrent runs spend no more than a $0.01 tenant budget', async () => {
    // $4 per million output tokens: a 1,000-token answer costs $0.004.
    const manager = createResourceManager({
      prices: { tiny: { input: 1, output: 4 } },
      budgets: { tenants: { acme: { usd: 0.01 } } },
    });
    const gathered = crowd(40);
    gathered.watch(manager);
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        run(longWriter(`w${i}`, gathered, 'tiny'), 'write', { resources: manager, tenant: 'acme' }),
      ),
    );
    const tenant = manager.usage({ tenant: 'acme' }).tenant;
    expect(tenant?.spentUsd).toBeLessThanOrEqual(0.01 + 1e-12);
    expect(tenant?.spentUsd).toBeGreaterThan(0.009);
    manager.stop();
  });

  it('one agent alone: a 100-token budget ends at 100 tokens at most, the answer cut at max_tokens', async () => {
    const requests: ModelRequest[] = [];
    const agent = defineAgent({
      name: 'alone',
      instructions: 'Answer at length.',
      model: scriptedModel((request) => {
        requests.push(request);
        return { text: longAnswer, stopReason: 'end_turn' };
      }),
    });
    const s = stream(agent, 'go', { budget: { tokens: 100 } });
    const events: RunEvent[] = [];
    for await (const event of s) events.push(event);
    const result = await s.result;
    const spent = result.usage.input + result.usage.output;
    expect(spent).toBeLessThanOrEqual(100);
    const prompt = estimateRequest(requests[0] as ModelRequest).input;
    // The call was sent with the budget's rest as its output limit, and the model wrote exactly that.
    expect(requests[0]?.settings.maxOutputTokens).toBe(100 - prompt);
    expect(result.usage.output).toBe(100 - prompt);
    const response = events.find((event) => event.type === 'model_response');
    expect(response?.data).toMatchObject({ stopReason: 'max_tokens' });
  });

  it('a call whose prompt leaves less than a minimal output is refused before it is made', async () => {
    const model = scriptedModel([{ text: 'never' }]);
    const agent = defineAgent({ name: 'tight', instructions: 'x'.repeat(80), model });
    // The prompt estimate is about 30 tokens: 40 leave fewer than the minimal output.
    const result = await run(agent, 'go', { budget: { tokens: 30 + minOutputTokens - 5 } });
    expect(result.stopReason).toBe('budget_exhausted');
    expect(result.error?.message).toMatch(/the call needs \d+ for its prompt and 16 output tokens/);
    expect(model.calls).toBe(0);
  });

  it("the agent's own maxOutputTokens stays when it is below what the budget leaves", async () => {
    const model = scriptedModel([{ text: longAnswer, stopReason: 'end_turn' }]);
    const agent = defineAgent({ name: 'short', instructions: '', model, settings: { maxOutputTokens: 50 } });
    const result = await run(agent, 'go', { budget: { tokens: 10_000 } });
    expect(model.requests[0]?.settings.maxOutputTokens).toBe(50);
    expect(result.usage.output).toBe(50);
  });

  it("under a budget a call without maxOutputTokens is sent with the manager's (4,096 by default)", async () => {
    const model = scriptedModel([{ text: 'ok', stopReason: 'end_turn' }]);
    const agent = defineAgent({ name: 'plain', instructions: '', model });
    await run(agent, 'go', { budget: { tokens: 100_000 } });
    expect(model.requests[0]?.settings.maxOutputTokens).toBe(4_096);
    const manager = createResourceManager({
      maxOutputTokens: 1_000,
      budgets: { perRun: { tokens: 100_000 } },
    });
    const again = scriptedModel([{ text: 'ok', stopReason: 'end_turn' }]);
    await run(defineAgent({ name: 'plain', instructions: '', model: again }), 'go', { resources: manager });
    expect(again.requests[0]?.settings.maxOutputTokens).toBe(1_000);
    // Without any budget nothing is capped.
    const free = scriptedModel([{ text: 'ok', stopReason: 'end_turn' }]);
    await run(defineAgent({ name: 'plain', instructions: '', model: free }), 'go', {
      resources: createResourceManager(),
    });
    expect(free.requests[0]?.settings.maxOutputTokens).toBeUndefined();
    manager.stop();
  });
});
