import { defineAgent, type RunEvent, run, stream, tool } from 'troupe';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { anthropic } from '../../src/providers/anthropic.ts';
import * as wire from '../fixtures/wire/anthropic.ts';
import { useWireServer } from '../support/wire-session.ts';

/**
 * Anthropic pauses a long server-tool turn with `stop_reason: "pause_turn"`. The loop does not take the partial
 * text as the answer: it sends the assistant's content back as it is and calls again (each call a step, so the
 * step limit bounds it), and the answer is the whole turn's text.
 */

const { serve, bodyOf, current } = useWireServer();

/** Claude with Anthropic's web search (a server tool), against the local wire server. */
function webSearching(url: string) {
  return anthropic('claude-test-1', {
    apiKey: 'test-key',
    baseURL: url,
    settings: { providerTools: [anthropic.tools.webSearch()] },
  });
}

function searcher(url: string, maxSteps = 5) {
  return defineAgent({
    name: 'searcher',
    instructions: 'Search the web.',
    model: webSearching(url),
    limits: { maxSteps },
  });
}

describe('anthropic pause_turn', () => {
  it('continues a paused turn: the content goes back as it came, and the answer is the whole turn', async () => {
    const { url } = await serve({ sse: wire.pausedSearch }, { sse: wire.pausedSearchContinued });
    const running = stream(searcher(url), 'When was Claude Shannon born?');
    const events: RunEvent[] = [];
    for await (const event of running) events.push(event);
    const result = await running.result;

    expect(current().requests).toHaveLength(2);
    expect(result).toMatchObject({ status: 'completed', stopReason: 'completed' });
    expect(result.text).toBe("I'll look that up.\n\nClaude Shannon was born on April 30, 1916.");
    // The second request ends with the paused turn, block for block.
    const messages = bodyOf(1).messages as { role: string; content: unknown }[];
    expect(messages).toEqual([
      { role: 'user', content: 'When was Claude Shannon born?' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: "I'll look that up." },
          {
            type: 'server_tool_use',
            id: 'srvtoolu_01',
            name: 'web_search',
            input: { query: 'claude shannon birth date' },
          },
        ],
      },
    ]);
    expect(
      events.filter((event) => event.type === 'model_response').map((event) => event.data.stopReason),
    ).toEqual(['pause_turn', 'end_turn']);
  });

  it('a follow-up request sends the paused turn and its continuation as one assistant turn', async () => {
    const { url } = await serve(
      { sse: wire.pausedSearch },
      { sse: wire.pausedSearchContinued },
      { sse: wire.streamedText },
    );
    const first = await run(searcher(url), 'When was Claude Shannon born?');
    await run(searcher(url), 'Thanks', { history: first.history });
    const messages = bodyOf(2).messages as { role: string; content: unknown[] }[];
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
    expect((messages[1]?.content ?? []).map((block) => (block as { type: string }).type)).toEqual([
      'text',
      'server_tool_use',
      'web_search_tool_result',
      'text',
    ]);
  });

  it('an agent with tools continues the turn the same way (tool-use phase)', async () => {
    const { url } = await serve({ sse: wire.pausedSearch }, { sse: wire.pausedSearchContinued });
    const agent = defineAgent({
      name: 'searcher',
      instructions: 'Search the web.',
      model: webSearching(url),
      tools: [
        // A tool the model does not call: the agent runs in the tool-use phase.
        tool({ name: 'note', description: 'Notes.', input: z.object({}), execute: () => 'ok' }),
      ],
    });
    const result = await run(agent, 'When was Claude Shannon born?');
    expect(current().requests).toHaveLength(2);
    expect(result.text).toBe("I'll look that up.\n\nClaude Shannon was born on April 30, 1916.");
    expect(result.stopReason).toBe('completed');
  });

  it('continuing is bounded by the step limit: a turn paused at every call stops with max_steps', async () => {
    const { url } = await serve(
      { sse: wire.pausedSearch },
      { sse: wire.pausedSearch },
      { sse: wire.pausedSearch },
    );
    const result = await run(searcher(url, 2), 'When was Claude Shannon born?');
    expect(current().requests).toHaveLength(2);
    expect(result.stopReason).toBe('max_steps');
  });
});
