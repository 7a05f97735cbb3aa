import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, tool } from '../../src/index.ts';
import { checkTermination, TerminationCheckError } from '../../src/testing/check-termination.ts';
import { scriptedModel } from '../../src/testing/scripted-model.ts';

const lookups: unknown[] = [];
const lookup = tool({
  name: 'lookup',
  description: 'Looks a word up',
  input: z.object({ word: z.string(), lang: z.enum(['en', 'fr']) }),
  execute: ({ word }) => {
    lookups.push(word);
    return `${word}: a word`;
  },
});

const agent = defineAgent({
  name: 'dictionary',
  instructions: 'Define the word.',
  model: scriptedModel([]),
  tools: [lookup],
  output: z.object({ definition: z.string() }),
  limits: { maxSteps: 3, maxDecodeRetries: 1, maxToolRetries: 0 },
});

describe('checkTermination', () => {
  it('passes for a sound agent, running its real tools, and reports how the runs ended', async () => {
    lookups.length = 0;
    const report = await checkTermination(agent, { numRuns: 40, seed: 42 });
    expect(report.numRuns).toBe(40);
    const counted = Object.values(report.stopReasons).reduce((sum, n) => sum + (n ?? 0), 0);
    expect(counted).toBe(40);
    expect(Object.keys(report.stopReasons).length).toBeGreaterThan(2);
    expect(lookups.length).toBeGreaterThan(0);
  });

  it('stubs tools when asked', async () => {
    lookups.length = 0;
    const stubbed: unknown[] = [];
    await checkTermination(agent, {
      numRuns: 20,
      seed: 3,
      stubTools: {
        lookup: (args) => {
          stubbed.push(args);
          return 'stubbed';
        },
      },
    });
    expect(lookups).toEqual([]);
    expect(stubbed.length).toBeGreaterThan(0);
  });

  it('throws with the smallest failing script when an invariant breaks', async () => {
    const failure = await checkTermination(agent, {
      numRuns: 200,
      seed: 1,
      // The user's own invariant: this agent must never run out of steps (it does, when the model keeps calling).
      invariant: (result) => (result.stopReason === 'max_steps' ? 'the run hit its step limit' : undefined),
    }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(TerminationCheckError);
    const error = failure as TerminationCheckError;
    expect(error.violations).toEqual(['the run hit its step limit']);
    // Shrunk: three tool-calling turns reach maxSteps 3, and nothing else is needed.
    expect(error.script).toHaveLength(3);
    expect(error.script.every((turn) => turn.toolCalls?.length === 1)).toBe(true);
    expect(error.message).toContain('checkTermination("dictionary"): a run broke its invariants');
    expect(error.message).toMatch(/Smallest failing model script:\n {2}1\. calls lookup\(/);
    expect(error.message).toContain('  - the run hit its step limit');
    expect(error.message).toMatch(/Replay it with checkTermination\(agent, \{ seed: 1, path: "[\d:]+" \}\)/);
    // The seed and path replay exactly that failure.
    await expect(
      checkTermination(agent, {
        seed: error.seed,
        path: error.path ?? undefined,
        invariant: (result) => (result.stopReason === 'max_steps' ? 'again' : undefined),
      }),
    ).rejects.toThrow(/again/);
  });

  it("works for an agent without tools, and never calls the agent's own model (scripts replace it)", async () => {
    const own = scriptedModel([{ text: 'never' }]);
    await checkTermination(defineAgent({ name: 'x', instructions: '', model: own }), {
      numRuns: 10,
      seed: 5,
    });
    expect(own.calls).toBe(0);
  });
});
