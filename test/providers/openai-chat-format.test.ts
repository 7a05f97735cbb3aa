import { describe, expect, it } from 'vitest';
import type { Message } from '../../src/core/messages.ts';
import type { ModelRequest } from '../../src/core/model.ts';
import { isStrictCompatible, toChatMessages, toChatRequest } from '../../src/providers/openai-chat-format.ts';

const closed = {
  type: 'object',
  properties: { city: { type: 'string' }, days: { type: 'array', items: { type: 'number' } } },
  required: ['city', 'days'],
  additionalProperties: false,
};

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    messages: [{ role: 'user', content: 'hi' }],
    tools: [],
    settings: {},
    signal: new AbortController().signal,
    ...overrides,
  };
}

describe('toChatMessages', () => {
  it('formats every role, tool calls with JSON text arguments and tool results with their call id', () => {
    const history: Message[] = [
      { role: 'system', content: 'Be terse.' },
      { role: 'user', content: 'Weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [
          { id: 'call_1', name: 'weather', args: { city: 'Paris' } },
          { id: 'call_2', name: 'weather', args: '{"city": Rome' },
        ],
      },
      { role: 'tool', toolCallId: 'call_1', name: 'weather', content: '18C' },
      { role: 'tool', toolCallId: 'call_2', content: 'Invalid arguments', isError: true },
      { role: 'assistant', content: 'Paris is 18C.' },
    ];
    expect(toChatMessages(history)).toEqual([
      { role: 'system', content: 'Be terse.' },
      { role: 'user', content: 'Weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_2', type: 'function', function: { name: 'weather', arguments: '{"city": Rome' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '18C' },
      { role: 'tool', tool_call_id: 'call_2', content: 'Invalid arguments' },
      { role: 'assistant', content: 'Paris is 18C.' },
    ]);
  });

  it('keeps the text of an assistant turn that also calls tools', () => {
    const [message] = toChatMessages([
      { role: 'assistant', content: 'Checking.', toolCalls: [{ id: 'c', name: 'now', args: {} }] },
    ]);
    expect(message).toMatchObject({ content: 'Checking.', tool_calls: [{ function: { arguments: '{}' } }] });
  });

  it('sends images as image_url parts, base64 data as a data URL (P8)', () => {
    const [message] = toChatMessages([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image', url: 'https://example.com/cat.png', detail: 'low' },
          { type: 'image', data: 'iVBORw0KGgo=', mediaType: 'image/png' },
        ],
      },
    ]);
    expect(message).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'What is this?' },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
      ],
    });
  });

  it("puts this provider's tool-call extra_content back on its call and drops other providers' reasoning", () => {
    const extra = { google: { thought_signature: 'sig-1' } };
    const [message] = toChatMessages(
      [
        {
          role: 'assistant',
          content: '',
          reasoning: [
            {
              provider: 'gemini-openai',
              data: { type: 'tool_call_extra', toolCallId: 'c1', extra_content: extra },
            },
            { provider: 'anthropic', data: { type: 'thinking', thinking: 'x', signature: 's' } },
          ],
          toolCalls: [
            { id: 'c1', name: 'a', args: {} },
            { id: 'c2', name: 'b', args: {} },
          ],
        },
      ],
      'gemini-openai',
    );
    expect(message).toMatchObject({ tool_calls: [{ id: 'c1', extra_content: extra }, { id: 'c2' }] });
    expect((message as { tool_calls: object[] }).tool_calls[1]).not.toHaveProperty('extra_content');
    expect(
      JSON.stringify(toChatMessages([{ role: 'assistant', content: 'x', reasoning: [] }])),
    ).not.toContain('thinking');
  });
});

describe('toChatRequest', () => {
  it('streams with include_usage, sends tools as function tools, strict only where the schema allows', () => {
    const body = toChatRequest(
      request({
        tools: [
          { name: 'weather', description: 'Weather', parameters: closed },
          {
            name: 'search',
            description: 'Search',
            parameters: {
              type: 'object',
              properties: { q: { type: 'string' }, n: { type: 'number' } },
              required: ['q'],
            },
          },
        ],
        settings: { maxOutputTokens: 100, temperature: 0.2, topP: 0.9, stopSequences: ['END'] },
      }),
      'gpt-test',
    );
    expect(body).toMatchObject({
      model: 'gpt-test',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'hi' }],
      max_completion_tokens: 100,
      temperature: 0.2,
      top_p: 0.9,
      stop: ['END'],
    });
    expect(body.tools).toEqual([
      {
        type: 'function',
        function: { name: 'weather', description: 'Weather', parameters: closed, strict: true },
      },
      {
        type: 'function',
        function: {
          name: 'search',
          description: 'Search',
          parameters: {
            type: 'object',
            properties: { q: { type: 'string' }, n: { type: 'number' } },
            required: ['q'],
          },
        },
      },
    ]);
    expect(body).not.toHaveProperty('response_format');
  });

  it('sends the output schema as response_format json_schema', () => {
    const body = toChatRequest(request({ output: { name: 'answer', schema: closed } }), 'gpt-test');
    expect(body.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'answer', schema: closed, strict: true },
    });
    expect(body).not.toHaveProperty('tools');
  });

  it('honours the compatible-server options: max_tokens, no strict, no stream_options', () => {
    const body = toChatRequest(
      request({ output: { name: 'answer', schema: closed }, settings: { maxOutputTokens: 5 } }),
      'llama',
      { strictSchemas: false, includeUsage: false, maxTokensField: 'max_tokens' },
    );
    expect(body).toMatchObject({ max_tokens: 5, response_format: { json_schema: { strict: false } } });
    expect(body).not.toHaveProperty('stream_options');
    expect(body).not.toHaveProperty('max_completion_tokens');
  });

  it('spreads providerOptions first so the fields it owns win', () => {
    const body = toChatRequest(
      request({ settings: { providerOptions: { reasoning_effort: 'low', model: 'other', stream: false } } }),
      'gpt-test',
    );
    expect(body).toMatchObject({ reasoning_effort: 'low', model: 'gpt-test', stream: true });
  });
});

describe('isStrictCompatible', () => {
  it('accepts closed objects with every property required, at every depth', () => {
    expect(isStrictCompatible(closed)).toBe(true);
    expect(
      isStrictCompatible({
        type: 'object',
        properties: { inner: { anyOf: [{ $ref: '#/$defs/x' }, { type: 'null' }] } },
        required: ['inner'],
        additionalProperties: false,
        $defs: { x: { type: 'object', properties: {}, required: [], additionalProperties: false } },
      }),
    ).toBe(true);
  });

  it('rejects optional properties, open objects, allOf/oneOf and non-object roots', () => {
    expect(isStrictCompatible({ ...closed, required: ['city'] })).toBe(false);
    expect(isStrictCompatible({ type: 'object', properties: {}, required: [] })).toBe(false);
    expect(
      isStrictCompatible({
        ...closed,
        properties: { city: { type: 'object', properties: {}, additionalProperties: true } },
        required: ['city'],
      }),
    ).toBe(false);
    expect(isStrictCompatible({ ...closed, properties: { city: { oneOf: [] } }, required: ['city'] })).toBe(
      false,
    );
    expect(isStrictCompatible({ type: 'array', items: closed })).toBe(false);
  });
});
