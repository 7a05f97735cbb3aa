import {
  agentTool,
  ConfigError,
  createAgentSystem,
  createResourceManager,
  defineAgent,
  run,
  stream,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';

/**
 * A USD budget over a model without a price is a ConfigError naming the model, for every model the run can reach:
 * handoff targets (given as agents or by name) and sub-agents (agentTool), checked before anything runs.
 */
const answer = (model: string) =>
  scriptedModel(() => ({ text: 'done', stopReason: 'end_turn', usage: { input: 10, output: 5 } }), { model });

const billing = defineAgent({
  name: 'billing',
  description: 'Refunds',
  instructions: '',
  model: answer('my-finetune'),
});

/** A priced model that hands the conversation to billing. */
const handOff = () =>
  scriptedModel(
    [
      { toolCalls: [{ name: 'transfer_to_billing', args: {} }], stopReason: 'tool_use' },
      { text: 'done', stopReason: 'end_turn' },
    ],
    { model: 'gpt-5-mini' },
  );

describe('unpriced models reachable under a USD budget', () => {
  it('a handoff target on an unpriced model: run() rejects with a ConfigError naming the model, nothing runs', async () => {
    const model = handOff();
    const triage = defineAgent({ name: 'triage', instructions: '', model, handoffs: [billing] });
    const outcome = run(triage, 'refund please', { budget: { usd: 1 }, sessionId: 'h1' });
    await expect(outcome).rejects.toThrow(ConfigError);
    await expect(run(triage, 'refund please', { budget: { usd: 1 }, sessionId: 'h2' })).rejects.toThrow(
      /model "my-finetune" has no price, but session:h2 has a USD budget \(agent "billing", reached through triage → billing\)/,
    );
    expect(model.requests).toHaveLength(0);
  });

  it('a handoff target given by name and resolved by the system: spawn() throws before the session starts', async () => {
    const triage = defineAgent({
      name: 'triage',
      instructions: '',
      model: answer('gpt-5-mini'),
      handoffs: ['billing'],
    });
    const system = createAgentSystem({
      agents: [billing],
      resources: { budgets: { perTenant: { usd: 5 } } },
    });
    expect(() => system.spawn(triage, 'hi', { sessionId: 'named' })).toThrow(
      /model "my-finetune" has no price, but tenant:default has a USD budget \(agent "billing"/,
    );
    expect(system.list()).toEqual([]);
    await system.shutdown();
  });

  it('a sub-agent (agentTool) on an unpriced model, also nested behind a handoff: run() and stream() refuse', async () => {
    const helper = defineAgent({
      name: 'helper',
      description: 'Helps',
      instructions: '',
      model: answer('my-finetune'),
    });
    const model = answer('gpt-5-mini');
    const boss = defineAgent({ name: 'boss', instructions: '', model, tools: [agentTool(helper)] });
    const manager = createResourceManager({ budgets: { tenants: { acme: { usd: 2 } } } });
    await expect(run(boss, 'go', { resources: manager, tenant: 'acme' })).rejects.toThrow(
      /model "my-finetune" has no price, but tenant:acme has a USD budget \(agent "helper", reached through boss → helper\)/,
    );
    expect(() => stream(boss, 'go', { budget: { usd: 1 } })).toThrow(ConfigError);
    // Two levels down: a sub-agent whose handoff target is unpriced.
    const router = defineAgent({
      name: 'router',
      description: 'Routes',
      instructions: '',
      model: answer('gpt-5-mini'),
      handoffs: [billing],
    });
    const top = defineAgent({ name: 'top', instructions: '', model, tools: [agentTool(router)] });
    await expect(run(top, 'go', { budget: { usd: 1 } })).rejects.toThrow(/top → router → billing/);
    expect(model.requests).toHaveLength(0);
    // Its usage was never opened: the tenant has spent nothing and holds no run.
    expect(manager.usage({ tenant: 'acme' }).tenant).toBeNull();
    manager.stop();
  });

  it('without a USD budget, or with a price for the model, the same agents run', async () => {
    const helper = defineAgent({
      name: 'helper',
      description: 'Helps',
      instructions: '',
      model: answer('my-finetune'),
    });
    const boss = defineAgent({
      name: 'boss',
      instructions: '',
      model: scriptedModel(
        [
          { toolCalls: [{ name: 'helper', args: { input: 'x' } }], stopReason: 'tool_use' },
          { text: 'ok', stopReason: 'end_turn' },
        ],
        { model: 'gpt-5-mini' },
      ),
      tools: [agentTool(helper)],
    });
    const tokens = await run(boss, 'go', { budget: { tokens: 10_000 } });
    expect(tokens.stopReason).toBe('completed');
    const priced = createResourceManager({ prices: { 'my-finetune': { input: 1, output: 2 } } });
    const triage = defineAgent({ name: 'triage', instructions: '', model: handOff(), handoffs: [billing] });
    const result = await run(triage, 'refund', { resources: priced, budget: { usd: 1 } });
    expect(result.stopReason).toBe('completed');
    expect(result.agent).toBe('billing');
    priced.stop();
  });
});
