import { agentTool, defineAgent, run, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * run()'s onApproval decides for every agent the run reaches: an agent used as a tool that needs a session of its
 * own (it can hand off), called by an agent that runs in run()'s private session (it has a permission policy).
 */
describe('onApproval reaches sessions started by agents used as tools', () => {
  it('a nested agent with handoffs and a tool that waits for approval, under a caller with a policy', async () => {
    let refunded = 0;
    const refund = tool({
      name: 'refund',
      description: 'Refunds',
      input: z.object({}),
      needsApproval: true,
      execute: () => {
        refunded += 1;
        return 'refunded';
      },
    });
    const specialist = defineAgent({
      name: 'specialist',
      description: 'Specialist',
      instructions: '',
      model: scriptedModel([{ text: 'not needed' }]),
    });
    const clerk = defineAgent({
      name: 'clerk',
      description: 'Refunds orders',
      instructions: '',
      model: scriptedModel([{ toolCalls: [{ name: 'refund', args: {} }] }, { text: 'refund done' }]),
      tools: [refund],
      handoffs: [specialist],
    });
    const boss = defineAgent({
      name: 'boss',
      instructions: '',
      model: scriptedModel([
        { toolCalls: [{ name: 'clerk', args: { input: 'refund 42' } }] },
        { text: 'all done' },
      ]),
      tools: [agentTool(clerk)],
      permissions: () => 'allow',
    });
    const asked: string[] = [];
    const result = await run(boss, 'go', {
      onApproval: (request) => {
        asked.push(request.tool);
        return { type: 'approve' };
      },
    });
    expect(result.status).toBe('completed');
    expect(asked).toEqual(['refund']);
    expect(refunded).toBe(1);
  });
});
