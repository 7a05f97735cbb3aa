import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.ts';
import type { Message } from '../../src/core/messages.ts';
import type { ModelResponse, ToolSpec } from '../../src/core/model.ts';
import { type AnthropicOptions, anthropic } from '../../src/providers/anthropic.ts';
import { toAnthropicConversation } from '../../src/providers/anthropic-format.ts';
import { openai } from '../../src/providers/openai-chat.ts';
import * as wire from '../fixtures/wire/anthropic.ts';
import { recordingRequest, useWireServer } from '../support/wire-session.ts';

const { serve, bodyOf, current } = useWireServer();

function provider(url: string, options: AnthropicOptions = {}) {
  return anthropic('claude-test-1', { apiKey: 'test-key', baseURL: url, ...options });
}

const request = recordingRequest;

/** The assistant message the loop appends for a response (src/machines/agent.ts does the same). */
function assistantFrom(response: ModelResponse): Message {
  const message: Message = { role: 'assistant', content: response.text };
  if (response.toolCalls.length > 0) message.toolCalls = response.toolCalls;
  if (response.reasoning) message.reasoning = response.reasoning;
  return message;
}

const saveNote: ToolSpec = {
  name: 'save_note',
  description: 'Saves a note',
  parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
};

const searchedAnswer =
  "I'll look that up.\n\nBased on the search results, Claude Shannon was born on April 30, 1916.";

describe('anthropic(): server tool turns are kept whole and sent back block for block', () => {
  it('text blocks around a search: paragraphs between blocks, none inside a cited sentence; deltas add up', async () => {
    const { url } = await serve({ sse: wire.webSearchAnswer });
    const req = request([{ role: 'user', content: 'When was Claude Shannon born?' }]);
    const response = await provider(url).generate(req);

    expect(response.stopReason).toBe('end_turn');
    expect(response.text).toBe(searchedAnswer);
    const streamed = req.deltas.map((delta) => (delta.type === 'text' ? delta.text : '')).join('');
    expect(streamed).toBe(response.text);
    // The server tool is not ours to run: no tool call, no tool_call delta.
    expect(response.toolCalls).toEqual([]);
    expect(req.deltas.some((delta) => delta.type === 'tool_call')).toBe(false);
  });

  it('every block goes back in order: server_tool_use with its parsed input, its result, cited text verbatim', async () => {
    const { url } = await serve({ sse: wire.webSearchAnswer }, { sse: wire.thinkingAnswer });
    const model = provider(url);
    const history: Message[] = [{ role: 'user', content: 'When was Claude Shannon born?' }];
    const response = await model.generate(request(history));

    // Kept on the message, tagged with the provider, plain JSON.
    expect(JSON.parse(JSON.stringify(response.reasoning))).toEqual(response.reasoning);
    expect(response.reasoning?.every((block) => block.provider === 'anthropic')).toBe(true);

    await model.generate(
      request([...history, assistantFrom(response), { role: 'user', content: 'And where?' }]),
    );
    expect(bodyOf(1).messages).toEqual([
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
          wire.shannonSearchResult,
          { type: 'text', text: 'Based on the search results, ' },
          {
            type: 'text',
            text: 'Claude Shannon was born on April 30, 1916',
            citations: [wire.shannonCitation],
          },
          { type: 'text', text: '.' },
        ],
      },
      { role: 'user', content: 'And where?' },
    ]);
  });

  it('a search and a call of our own in one turn: the tool_use goes back where it stood, then its result', async () => {
    const { url } = await serve({ sse: wire.webSearchThenToolUse }, { sse: wire.thinkingAnswer });
    const model = provider(url);
    const history: Message[] = [{ role: 'user', content: 'Find Shannon and save a note.' }];
    const response = await model.generate(request(history, { tools: [saveNote] }));

    expect(response.stopReason).toBe('tool_use');
    expect(response.text).toBe('Found it; saving a note.');
    expect(response.toolCalls).toEqual([
      { id: 'toolu_N', name: 'save_note', args: { text: 'Shannon: 1916' } },
    ]);

    await model.generate(
      request(
        [
          ...history,
          assistantFrom(response),
          { role: 'tool', toolCallId: 'toolu_N', name: 'save_note', content: 'saved' },
        ],
        { tools: [saveNote] },
      ),
    );
    expect(bodyOf(1).messages).toEqual([
      { role: 'user', content: 'Find Shannon and save a note.' },
      {
        role: 'assistant',
        content: [
          {
            type: 'server_tool_use',
            id: 'srvtoolu_01',
            name: 'web_search',
            input: { query: 'claude shannon birth date' },
          },
          wire.shannonSearchResult,
          { type: 'text', text: 'Found it; saving a note.' },
          { type: 'tool_use', id: 'toolu_N', name: 'save_note', input: { text: 'Shannon: 1916' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_N', content: 'saved' }] },
    ]);
  });

  it('a kept turn whose text was changed since keeps its server blocks, then sends the text as it is now', async () => {
    const { url } = await serve({ sse: wire.webSearchAnswer });
    const response = await provider(url).generate(request([{ role: 'user', content: 'x' }]));
    const edited: Message = { ...assistantFrom(response), content: 'Shannon: born 1916 [redacted].' };
    const { messages } = toAnthropicConversation([{ role: 'user', content: 'x' }, edited]);
    expect(messages[1]).toEqual({
      role: 'assistant',
      content: [
        {
          type: 'server_tool_use',
          id: 'srvtoolu_01',
          name: 'web_search',
          input: { query: 'claude shannon birth date' },
        },
        wire.shannonSearchResult,
        { type: 'text', text: 'Shannon: born 1916 [redacted].' },
      ],
    });
  });
});

describe('anthropic(): provider tools beside function tools', () => {
  it('web search, code execution and raw providerOptions.tools are all sent, after the function tools', async () => {
    const { url } = await serve({ sse: wire.streamedText });
    await provider(url).generate(
      request([{ role: 'user', content: 'x' }], {
        tools: [saveNote],
        settings: {
          providerOptions: { tools: [{ type: 'web_fetch_20250910', name: 'web_fetch' }] },
          providerTools: [
            anthropic.tools.webSearch({
              maxUses: 3,
              allowedDomains: ['wikipedia.org'],
              userLocation: { city: 'Paris', country: 'FR' },
            }),
            anthropic.tools.codeExecution(),
          ],
        },
      }),
    );
    expect(bodyOf(0).tools).toEqual([
      { name: 'save_note', description: 'Saves a note', input_schema: saveNote.parameters },
      { type: 'web_fetch_20250910', name: 'web_fetch' },
      {
        type: 'web_search_20250305',
        name: 'web_search',
        max_uses: 3,
        allowed_domains: ['wikipedia.org'],
        user_location: { type: 'approximate', city: 'Paris', country: 'FR' },
      },
      { type: 'code_execution_20250825', name: 'code_execution' },
    ]);
  });

  it('provider tools are offered with no function tools at all (the final answer phase, a tool-less agent)', async () => {
    const { url } = await serve({ sse: wire.streamedText });
    await provider(url, { settings: { providerTools: [anthropic.tools.webSearch()] } }).generate(
      request([{ role: 'user', content: 'x' }]),
    );
    expect(bodyOf(0).tools).toEqual([{ type: 'web_search_20250305', name: 'web_search' }]);
  });

  it('tool search defers the function tools it names (all by default)', async () => {
    const { url } = await serve({ sse: wire.streamedText }, { sse: wire.streamedText });
    const other: ToolSpec = { name: 'get_time', description: 'Time', parameters: { type: 'object' } };
    const model = provider(url);
    await model.generate(
      request([{ role: 'user', content: 'x' }], {
        tools: [saveNote, other],
        settings: { providerTools: [anthropic.tools.toolSearch({ deferTools: ['get_time'] })] },
      }),
    );
    expect(bodyOf(0).tools).toEqual([
      { name: 'save_note', description: 'Saves a note', input_schema: saveNote.parameters },
      { name: 'get_time', description: 'Time', input_schema: { type: 'object' }, defer_loading: true },
      { type: 'tool_search_tool_regex_20251119', name: 'tool_search_tool_regex' },
    ]);
    await model.generate(
      request([{ role: 'user', content: 'x' }], {
        tools: [saveNote],
        settings: { providerTools: [anthropic.tools.toolSearch({ variant: 'bm25' })] },
      }),
    );
    expect(bodyOf(1).tools).toEqual([
      {
        name: 'save_note',
        description: 'Saves a note',
        input_schema: saveNote.parameters,
        defer_loading: true,
      },
      { type: 'tool_search_tool_bm25_20251119', name: 'tool_search_tool_bm25' },
    ]);
  });

  it("another provider's tool is a ConfigError naming where it runs: at creation, and per request before sending", async () => {
    const { url } = await serve({ sse: wire.streamedText });
    expect(() => provider(url, { settings: { providerTools: [openai.tools.webSearch()] } })).toThrow(
      ConfigError,
    );
    const error = await provider(url)
      .generate(
        request([{ role: 'user', content: 'x' }], {
          settings: { providerTools: [openai.tools.fileSearch({ vectorStoreIds: ['vs_1'] })] },
        }),
      )
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/anthropic\("claude-test-1"\).*file_search.*openai\.responses/);
    expect(current().requests).toHaveLength(0);
  });

  it('a provider tool named like a function tool, or a malformed one, is a ConfigError', async () => {
    const { url } = await serve({ sse: wire.streamedText });
    const clash: ToolSpec = { name: 'web_search', description: '', parameters: { type: 'object' } };
    const model = provider(url);
    await expect(
      model.generate(
        request([{ role: 'user', content: 'x' }], {
          tools: [clash],
          settings: { providerTools: [anthropic.tools.webSearch()] },
        }),
      ),
    ).rejects.toThrow(/"web_search".*unique/);
    await expect(
      model.generate(
        request([{ role: 'user', content: 'x' }], {
          settings: { providerTools: [{ type: 'web_search' } as never] },
        }),
      ),
    ).rejects.toThrow(ConfigError);
    expect(current().requests).toHaveLength(0);
  });

  it('the helpers refuse options the API would reject', () => {
    expect(() => anthropic.tools.webSearch({ allowedDomains: ['a.com'], blockedDomains: ['b.com'] })).toThrow(
      ConfigError,
    );
    expect(() => anthropic.tools.webSearch({ maxUses: 0 })).toThrow(/maxUses/);
    expect(() => openai.tools.fileSearch({ vectorStoreIds: [] })).toThrow(/vectorStoreIds/);
  });
});
