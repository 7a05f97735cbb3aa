import { AssertionError } from 'node:assert';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, run, tool } from '../../src/index.ts';
import { expectRun } from '../../src/testing/expect-run.ts';
import { scriptedModel } from '../../src/testing/scripted-model.ts';

const search = tool({
  name: 'search',
  description: 'Searches',
  input: z.object({ q: z.string(), filters: z.object({ lang: z.string(), year: z.number() }) }),
  execute: ({ q }) => `found ${q}`,
});

async function sampleRun() {
  const model = scriptedModel([
    { toolCalls: [{ name: 'search', args: { q: 'xstate', filters: { lang: 'en', year: 2024 } } }] },
    { text: '{"title":"XState","year":2024}' },
  ]);
  const agent = defineAgent({
    name: 'librarian',
    instructions: '',
    model,
    tools: [search],
    output: z.object({ title: z.string(), year: z.number() }),
  });
  return run(agent, 'Find xstate');
}

function failure(assertion: () => unknown): AssertionError {
  try {
    assertion();
  } catch (error) {
    if (error instanceof AssertionError) return error;
    throw error;
  }
  throw new Error('the assertion passed');
}

describe('expectRun', () => {
  it('passes, chained, on a run that did what it says', async () => {
    const result = await sampleRun();
    expectRun(result)
      .toEndWith('completed')
      .toHaveCalledTool('search')
      .toHaveCalledTool('search', { q: 'xstate' })
      .toHaveCalledTool('search', { filters: { year: 2024 } })
      .toNotHaveCalledTool('delete')
      .toHaveValidHistory()
      .toUseAtMostModelCalls(2)
      .toHaveOutput({ title: 'XState' });
  });

  it("throws node's AssertionError with messages that say what the run did instead", async () => {
    const result = await sampleRun();
    expect(failure(() => expectRun(result).toEndWith('max_steps')).message).toBe(
      'expected the run to end with "max_steps", but it ended with "completed" (status completed)',
    );
    expect(failure(() => expectRun(result).toHaveCalledTool('search', { q: 'react' })).message).toBe(
      'expected the run to call tool "search" with arguments containing {"q":"react"}, but it called search({"q":"xstate","filters":{"lang":"en","year":2024}})',
    );
    expect(failure(() => expectRun(result).toNotHaveCalledTool('search')).message).toMatch(
      /^expected the run not to call tool "search", but it called search\(/,
    );
    expect(failure(() => expectRun(result).toUseAtMostModelCalls(1)).message).toBe(
      'expected at most 1 model call(s), but the run made 2 (stop reason "completed")',
    );
    expect(failure(() => expectRun(result).toHaveOutput({ year: 1999 })).message).toBe(
      'expected the output to contain {"year":1999}, but it is {"title":"XState","year":2024} (stop reason "completed")',
    );
    const broken = {
      ...result,
      history: [...result.history, { role: 'tool' as const, toolCallId: 'nope', content: 'x' }],
    };
    expect(failure(() => expectRun(broken).toHaveValidHistory()).message).toMatch(
      /^expected a valid history, but: message \[\d+\]/,
    );
  });

  it("includes the run's error when it did not end as expected", async () => {
    const result = await run(defineAgent({ name: 'a', instructions: '', model: scriptedModel([]) }), 'x');
    expect(failure(() => expectRun(result).toEndWith('completed')).message).toMatch(
      /^expected the run to end with "completed", but it ended with "error" \(status failed\): ModelError model_script_exhausted: The scripted model has 0 turn/,
    );
    expect(failure(() => expectRun(result).toHaveCalledTool('search')).message).toBe(
      'expected the run to call tool "search", but it called no tool',
    );
  });
});
