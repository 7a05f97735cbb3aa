import {
  ConfigError,
  defineAgent,
  duplicateToolCallCountIs,
  RunStopped,
  run,
  tool,
  toolCallCountIs,
  validateHistory,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * A run that reaches a tool-call limit (the same call repeated, or a tool called too often) still ends with an
 * answer: the refused calls are answered with the limit and the model is asked once more, without tools. The stop
 * reason names the limit; `finalAnswerOnToolLimits: false` ends the run at the limit without an answer.
 */

const status = tool({
  name: 'status',
  description: 'The status of a job.',
  input: z.object({ job: z.string() }),
  execute: () => 'pending',
});

const search = tool({
  name: 'search',
  description: 'Searches.',
  input: z.object({ q: z.string() }),
  execute: ({ q }) => `results for ${q}`,
});

/** A model that keeps calling `call(index)` while it has tools, and answers `answer` once they are taken away. */
function modelCalling(
  call: (index: number) => { name: string; args: Record<string, string> },
  answer: string,
) {
  return scriptedModel((request, index) =>
    request.tools.length > 0
      ? { toolCalls: [call(index)], stopReason: 'tool_use' }
      : { text: answer, stopReason: 'end_turn' },
  );
}

describe('a run at a tool-call limit', () => {
  it('a status tool polled a third time with the same arguments: the run ends with an answer, as duplicate_tool_call', async () => {
    const model = modelCalling(() => ({ name: 'status', args: { job: 'j1' } }), 'The job is still pending.');
    const result = await run(
      defineAgent({ name: 'poller', instructions: '', model, tools: [status] }),
      'Is j1 done?',
    );
    expect(result).toMatchObject({
      status: 'stopped',
      stopReason: 'duplicate_tool_call',
      text: 'The job is still pending.',
      toolCallCount: 2,
      modelCalls: 4,
    });
    expect(result.error).toBeUndefined();
    expect(model.requests.at(-1)?.tools).toEqual([]);
    const refused = result.history.at(-2);
    expect(refused).toMatchObject({ role: 'tool', name: 'status', isError: true });
    expect(refused?.content).toContain('called with the same arguments 3 times (limit 2)');
    expect(() => validateHistory(result.history)).not.toThrow();
  });

  it('a sixth search: the run ends with an answer, as tool_call_limit', async () => {
    const model = modelCalling(
      (index) => ({ name: 'search', args: { q: `query ${index}` } }),
      'Here is what I found.',
    );
    const result = await run(
      defineAgent({ name: 'searcher', instructions: '', model, tools: [search] }),
      'Find it.',
    );
    expect(result).toMatchObject({
      status: 'stopped',
      stopReason: 'tool_call_limit',
      text: 'Here is what I found.',
      toolCallCount: 5,
      modelCalls: 7,
    });
    expect(result.history.at(-2)?.content).toContain('"search" would be called 6 times (limit 5 per run)');
    expect(() => validateHistory(result.history)).not.toThrow();
  });

  it('the same through stopWhen: toolCallCountIs and duplicateToolCallCountIs', async () => {
    const capped = await run(
      defineAgent({
        name: 'capped',
        instructions: '',
        model: modelCalling((index) => ({ name: 'search', args: { q: `${index}` } }), 'capped answer'),
        tools: [search],
        stopWhen: toolCallCountIs(2, { tool: 'search' }),
      }),
      'go',
    );
    expect(capped).toMatchObject({ stopReason: 'tool_call_limit', text: 'capped answer', toolCallCount: 2 });
    const repeated = await run(
      defineAgent({
        name: 'repeated',
        instructions: '',
        model: modelCalling(() => ({ name: 'status', args: { job: 'j' } }), 'repeated answer'),
        tools: [status],
        stopWhen: duplicateToolCallCountIs(1),
      }),
      'go',
    );
    expect(repeated).toMatchObject({
      stopReason: 'duplicate_tool_call',
      text: 'repeated answer',
      toolCallCount: 1,
    });
  });

  it('with finalAnswerOnToolLimits: false the run ends at the limit, without an answer or another model call', async () => {
    const model = modelCalling(() => ({ name: 'status', args: { job: 'j1' } }), 'never asked');
    const result = await run(
      defineAgent({
        name: 'strict',
        instructions: '',
        model,
        tools: [status],
        limits: { finalAnswerOnToolLimits: false },
      }),
      'go',
    );
    expect(result).toMatchObject({
      status: 'stopped',
      stopReason: 'duplicate_tool_call',
      text: '',
      modelCalls: 3,
    });
    expect(RunStopped.is(result.error)).toBe(true);
    expect(model.requests.every((request) => request.tools.length > 0)).toBe(true);
  });

  it('finalAnswerOnToolLimits must be a boolean', () => {
    expect(() =>
      defineAgent({
        name: 'bad',
        instructions: '',
        model: scriptedModel([]),
        limits: { finalAnswerOnToolLimits: 'yes' as unknown as boolean },
      }),
    ).toThrow(ConfigError);
  });
});
