import fc from 'fast-check';
import { defineAgent, run, tool } from 'troupe';
import { agentVariant, arbitraryModelTurns, checkTermination, scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const refunds: string[] = [];
const refund = tool({
  name: 'refund',
  description: 'Refunds an order',
  input: z.object({ orderId: z.string(), cents: z.number().int().min(1).max(50_000) }),
  execute: ({ orderId }) => {
    refunds.push(orderId);
    return 'refunded';
  },
});

const billing = defineAgent({
  name: 'billing',
  instructions: 'Refund orders when asked.',
  model: scriptedModel([]), // replaced by generated scripts in these tests
  tools: [refund],
  limits: { maxSteps: 4, maxToolCallsPerTool: 2 },
});

describe('billing agent, whatever the model does', () => {
  it('always ends, within its limits, with a valid history', async () => {
    // Throws with the smallest failing model script if a run breaks an invariant.
    const report = await checkTermination(billing, { numRuns: 30, stubTools: { refund: () => 'refunded' } });
    expect(report.numRuns).toBe(30);
  });

  it('never refunds more than twice in one run (a property of our own)', async () => {
    await fc.assert(
      fc.asyncProperty(arbitraryModelTurns({ tools: [refund], maxTurns: 6 }), async (turns) => {
        refunds.length = 0;
        await run(agentVariant(billing, scriptedModel(turns)), 'Refund order A-1.');
        expect(refunds.length).toBeLessThanOrEqual(2);
      }),
      { numRuns: 30 },
    );
  });
});
