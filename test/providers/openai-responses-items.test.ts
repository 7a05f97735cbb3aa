import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.ts';
import type { Message } from '../../src/core/messages.ts';
import type { ModelResponse, ToolSpec } from '../../src/core/model.ts';
import { anthropic } from '../../src/providers/anthropic.ts';
import { openai } from '../../src/providers/openai-chat.ts';
import { type OpenAIResponsesOptions, openaiResponses } from '../../src/providers/openai-responses.ts';
import { toResponsesConversation } from '../../src/providers/openai-responses-format.ts';
import * as chatWire from '../fixtures/wire/openai-chat.ts';
import * as wire from '../fixtures/wire/openai-responses.ts';
import { recordingRequest, useWireServer } from '../support/wire-session.ts';

const { serve, bodyOf, current } = useWireServer();

function provider(url: string, options: OpenAIResponsesOptions = {}) {
  return openaiResponses('gpt-test', { apiKey: 'test-key', baseURL: url, ...options });
}

const request = recordingRequest;

/** The assistant message the loop appends for a response (src/machines/agent.ts does the same). */
function assistantFrom(response: ModelResponse): Message {
  const message: Message = { role: 'assistant', content: response.text };
  if (response.toolCalls.length > 0) message.toolCalls = response.toolCalls;
  if (response.reasoning) message.reasoning = response.reasoning;
  return message;
}

const multiply: ToolSpec = {
  name: 'multiply',
  description: 'Multiply two numbers.',
  parameters: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } } },
};

describe('openaiResponses(): message phases and built-in tool items go back in order', () => {
  it('a commentary message keeps its phase, between its reasoning item and the call that follows', async () => {
    const { url } = await serve({ sse: wire.commentaryThenFunctionCall }, { sse: wire.answerAfterTool });
    const model = provider(url);
    const history: Message[] = [{ role: 'user', content: '6 * 7?' }];
    const response = await model.generate(request(history, { tools: [multiply] }));
    expect(response.text).toBe('Let me multiply.');
    expect(response.toolCalls).toEqual([{ id: 'call_mul2', name: 'multiply', args: { a: 6, b: 7 } }]);

    await model.generate(
      request(
        [
          ...history,
          assistantFrom(response),
          { role: 'tool', toolCallId: 'call_mul2', name: 'multiply', content: '42' },
        ],
        { tools: [multiply] },
      ),
    );
    expect(bodyOf(1).input).toEqual([
      { role: 'user', content: '6 * 7?' },
      wire.commentaryReasoningItem,
      { role: 'assistant', content: 'Let me multiply.', phase: 'commentary' },
      { type: 'function_call', call_id: 'call_mul2', name: 'multiply', arguments: '{"a":6,"b":7}' },
      { type: 'function_call_output', call_id: 'call_mul2', output: '42' },
    ]);
  });

  it('commentary, a web search, the final answer: two paragraphs, and every item back with its phase', async () => {
    const { url } = await serve({ sse: wire.webSearchAnswer }, { sse: wire.answerAfterTool });
    const model = provider(url);
    const history: Message[] = [{ role: 'user', content: 'Capital of France?' }];
    const req = request(history);
    const response = await model.generate(req);

    expect(response.text).toBe('Searching.\n\nParis is the capital.');
    expect(req.deltas.map((delta) => (delta.type === 'text' ? delta.text : '')).join('')).toBe(response.text);
    expect(response.toolCalls).toEqual([]);
    expect(JSON.parse(JSON.stringify(response.reasoning))).toEqual(response.reasoning);

    await model.generate(request([...history, assistantFrom(response), { role: 'user', content: 'Thanks' }]));
    expect(bodyOf(1).input).toEqual([
      { role: 'user', content: 'Capital of France?' },
      { role: 'assistant', content: 'Searching.', phase: 'commentary' },
      wire.webSearchCall,
      { role: 'assistant', content: 'Paris is the capital.', phase: 'final_answer' },
      { role: 'user', content: 'Thanks' },
    ]);
  });

  it('a kept turn whose text was changed since sends the text as it is now, with the last phase', async () => {
    const { url } = await serve({ sse: wire.webSearchAnswer });
    const response = await provider(url).generate(request([{ role: 'user', content: 'x' }]));
    const edited: Message = { ...assistantFrom(response), content: 'Paris.' };
    expect(toResponsesConversation([{ role: 'user', content: 'x' }, edited]).input).toEqual([
      { role: 'user', content: 'x' },
      wire.webSearchCall,
      { role: 'assistant', content: 'Paris.', phase: 'final_answer' },
    ]);
  });
});

describe('openaiResponses(): provider tools beside function tools', () => {
  it('web search and file search are sent after the function tools, with raw providerOptions.tools kept', async () => {
    const { url } = await serve({ sse: wire.streamedText });
    await provider(url).generate(
      request([{ role: 'user', content: 'x' }], {
        tools: [multiply],
        settings: {
          providerOptions: { tools: [{ type: 'image_generation' }] },
          providerTools: [
            openai.tools.webSearch({ allowedDomains: ['example.com'], searchContextSize: 'low' }),
            openai.tools.fileSearch({ vectorStoreIds: ['vs_1'], maxNumResults: 5 }),
          ],
        },
      }),
    );
    expect(bodyOf(0).tools).toEqual([
      { type: 'function', strict: false, ...multiply },
      { type: 'image_generation' },
      { type: 'web_search', filters: { allowed_domains: ['example.com'] }, search_context_size: 'low' },
      { type: 'file_search', vector_store_ids: ['vs_1'], max_num_results: 5 },
    ]);
  });

  it('an Anthropic tool is a ConfigError at creation and per request; nothing is sent', async () => {
    const { url } = await serve({ sse: wire.streamedText });
    expect(() => provider(url, { settings: { providerTools: [anthropic.tools.codeExecution()] } })).toThrow(
      /openai\.responses\("gpt-test"\).*code_execution.*anthropic/,
    );
    await expect(
      provider(url).generate(
        request([{ role: 'user', content: 'x' }], {
          settings: { providerTools: [anthropic.tools.webSearch()] },
        }),
      ),
    ).rejects.toThrow(ConfigError);
    expect(current().requests).toHaveLength(0);
  });

  it('Chat Completions refuses the Responses tools and says to use openai.responses()', async () => {
    const { url } = await serve({ sse: chatWire.textStream(['Hi']) });
    const chat = openai('gpt-test', { apiKey: 'k', baseURL: url });
    await expect(
      chat.generate(
        request([{ role: 'user', content: 'x' }], {
          settings: { providerTools: [openai.tools.webSearch()] },
        }),
      ),
    ).rejects.toThrow(/openai\("gpt-test"\) cannot run the provider tool "web_search".*openai\.responses/);
    expect(current().requests).toHaveLength(0);
  });
});
