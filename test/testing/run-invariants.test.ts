import { describe, expect, it } from 'vitest';
import { defaultLimits, defineAgent, type Message, run } from '../../src/index.ts';
import { runInvariantViolations } from '../../src/testing/run-invariants.ts';
import { scriptedModel } from '../../src/testing/scripted-model.ts';

describe('runInvariantViolations', () => {
  it('finds nothing wrong with a real run, and says what is wrong with a broken result', async () => {
    const model = scriptedModel([{ text: 'hi' }]);
    const history: Message[] = [
      { role: 'user', content: 'earlier' },
      { role: 'assistant', content: 'yes' },
    ];
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const result = await run(agent, 'go', { history });
    const context = {
      limits: agent.limits,
      modelCalls: model.calls,
      history,
      historyBefore: structuredClone(history),
      checkNoActiveRuns: true,
    };
    expect(runInvariantViolations(result, context)).toEqual([]);

    const broken = {
      ...result,
      status: 'failed' as const,
      modelCalls: 99,
      history: [
        ...result.history,
        { role: 'assistant' as const, content: '', toolCalls: [{ id: 'c', name: 't', args: {} }] },
      ],
    };
    const problems = runInvariantViolations(broken, {
      ...context,
      limits: { ...defaultLimits, maxSteps: 1, maxDecodeRetries: 0 },
      modelCalls: 5,
      historyBefore: [],
      hasOutputSchema: true,
    });
    expect(problems).toEqual([
      'status is "failed" but stop reason "completed" means "completed"',
      'the model was called 5 times, more than maxSteps 1 + maxDecodeRetries 0 + 1 = 2',
      'modelCalls is 99 but the model was called 5 times',
      expect.stringMatching(/^the history is invalid: \[\d+\] tool call\(s\) c are never answered/),
      "the caller's history array was changed",
      "result.history is not the caller's history followed by result.historyDelta",
      'the run completed but has no decoded output, though the agent has an output schema',
    ]);
  });
});
