import { describe, expect, it } from 'vitest';
import type { Message } from '../../src/core/messages.ts';
import { toAnthropicConversation } from '../../src/providers/anthropic-format.ts';
import { toGeminiConversation } from '../../src/providers/gemini-format.ts';
import { toChatMessages } from '../../src/providers/openai-chat-format.ts';
import { toResponsesConversation } from '../../src/providers/openai-responses-format.ts';

/**
 * One provider-neutral conversation that moved between providers: Anthropic answered first (thinking block with
 * a signature, then a redacted one), Gemini second (thought signature on its function call), OpenAI Responses
 * third (an encrypted reasoning item). Each formatter must keep its own reasoning, in place, and drop the rest.
 */
const history: Message[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Weather in Paris and Rome?' },
  {
    role: 'assistant',
    content: 'Checking both.',
    reasoning: [
      {
        provider: 'anthropic',
        text: 'Two cities, two calls.',
        data: { type: 'thinking', thinking: 'Two cities, two calls.', signature: 'sig-A' },
      },
      { provider: 'anthropic', data: { type: 'redacted_thinking', data: 'opaque-R' } },
    ],
    toolCalls: [
      { id: 'toolu_1', name: 'weather', args: { city: 'Paris' } },
      { id: 'toolu_2', name: 'weather', args: { city: 'Rome' } },
    ],
  },
  { role: 'tool', toolCallId: 'toolu_1', name: 'weather', content: '18C' },
  { role: 'tool', toolCallId: 'toolu_2', content: 'boom', isError: true },
  { role: 'user', content: 'And Oslo?' },
  {
    role: 'assistant',
    content: '',
    reasoning: [
      { provider: 'gemini', text: 'Oslo next.', data: { type: 'thought' } },
      {
        provider: 'gemini',
        data: { type: 'thought_signature', signature: 'sig-G', functionCallId: 'call_g1' },
      },
    ],
    toolCalls: [{ id: 'call_g1', name: 'weather', args: { city: 'Oslo' } }],
  },
  { role: 'tool', toolCallId: 'call_g1', content: '5C' },
  {
    role: 'assistant',
    content: 'Paris 18C, Oslo 5C, Rome unknown.',
    reasoning: [
      {
        provider: 'openai-responses',
        text: 'Summarize.',
        data: {
          type: 'reasoning',
          id: 'rs_1',
          summary: [{ type: 'summary_text', text: 'Summarize.' }],
          encrypted_content: 'enc-O',
        },
      },
    ],
  },
  { role: 'user', content: 'Thanks.' },
];

describe('one history formatted for each provider', () => {
  it('Anthropic: system hoisted, its thinking blocks first and unchanged, tool results merged, others dropped', () => {
    const { system, messages } = toAnthropicConversation(history);
    expect(system).toBe('You are terse.');
    expect(messages).toEqual([
      { role: 'user', content: 'Weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'Two cities, two calls.', signature: 'sig-A' },
          { type: 'redacted_thinking', data: 'opaque-R' },
          { type: 'text', text: 'Checking both.' },
          { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'toolu_2', name: 'weather', input: { city: 'Rome' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: '18C' },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: 'boom', is_error: true },
        ],
      },
      { role: 'user', content: 'And Oslo?' },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'call_g1', name: 'weather', input: { city: 'Oslo' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_g1', content: '5C' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Paris 18C, Oslo 5C, Rome unknown.' }] },
      { role: 'user', content: 'Thanks.' },
    ]);
  });

  it('Gemini: model role, functionResponse under user with names looked up, only its own signatures kept', () => {
    const { systemInstruction, contents } = toGeminiConversation(history);
    expect(systemInstruction).toBe('You are terse.');
    expect(contents).toEqual([
      { role: 'user', parts: [{ text: 'Weather in Paris and Rome?' }] },
      {
        role: 'model',
        parts: [
          { text: 'Checking both.' },
          { functionCall: { id: 'toolu_1', name: 'weather', args: { city: 'Paris' } } },
          { functionCall: { id: 'toolu_2', name: 'weather', args: { city: 'Rome' } } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { id: 'toolu_1', name: 'weather', response: { output: '18C' } } },
          { functionResponse: { id: 'toolu_2', name: 'weather', response: { error: 'boom' } } },
        ],
      },
      { role: 'user', parts: [{ text: 'And Oslo?' }] },
      {
        role: 'model',
        parts: [
          {
            functionCall: { id: 'call_g1', name: 'weather', args: { city: 'Oslo' } },
            thoughtSignature: 'sig-G',
          },
        ],
      },
      {
        role: 'user',
        parts: [{ functionResponse: { id: 'call_g1', name: 'weather', response: { output: '5C' } } }],
      },
      { role: 'model', parts: [{ text: 'Paris 18C, Oslo 5C, Rome unknown.' }] },
      { role: 'user', parts: [{ text: 'Thanks.' }] },
    ]);
  });

  it('OpenAI Responses: instructions, function_call items, its reasoning item in place, others dropped', () => {
    const { instructions, input } = toResponsesConversation(history);
    expect(instructions).toBe('You are terse.');
    expect(input).toEqual([
      { role: 'user', content: 'Weather in Paris and Rome?' },
      { role: 'assistant', content: 'Checking both.' },
      { type: 'function_call', call_id: 'toolu_1', name: 'weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call', call_id: 'toolu_2', name: 'weather', arguments: '{"city":"Rome"}' },
      { type: 'function_call_output', call_id: 'toolu_1', output: '18C' },
      { type: 'function_call_output', call_id: 'toolu_2', output: 'boom' },
      { role: 'user', content: 'And Oslo?' },
      { type: 'function_call', call_id: 'call_g1', name: 'weather', arguments: '{"city":"Oslo"}' },
      { type: 'function_call_output', call_id: 'call_g1', output: '5C' },
      {
        type: 'reasoning',
        id: 'rs_1',
        summary: [{ type: 'summary_text', text: 'Summarize.' }],
        encrypted_content: 'enc-O',
      },
      { role: 'assistant', content: 'Paris 18C, Oslo 5C, Rome unknown.' },
      { role: 'user', content: 'Thanks.' },
    ]);
  });

  it('never mutates the history it formats', () => {
    const before = JSON.stringify(history);
    toAnthropicConversation(history);
    toGeminiConversation(history);
    toResponsesConversation(history);
    expect(JSON.stringify(history)).toBe(before);
  });

  it('raw (unparsable) tool arguments are sent back wrapped where the wire wants an object', () => {
    const raw: Message[] = [
      { role: 'user', content: 'x' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 't', args: '{"a":' }] },
      { role: 'tool', toolCallId: 'c1', content: 'bad args' },
    ];
    expect(toAnthropicConversation(raw).messages[1]).toEqual({
      role: 'assistant',
      content: [{ type: 'tool_use', id: 'c1', name: 't', input: { _raw: '{"a":' } }],
    });
    expect(toGeminiConversation(raw).contents[1]?.parts?.[0]).toEqual({
      functionCall: { id: 'c1', name: 't', args: { _raw: '{"a":' } },
    });
    expect(toResponsesConversation(raw).input[1]).toEqual({
      type: 'function_call',
      call_id: 'c1',
      name: 't',
      arguments: '{"a":',
    });
  });
});

/**
 * Turns kept whole by their provider: an Anthropic web search (server_tool_use, its result, cited text, a call of
 * ours marked where it stood) and an OpenAI Responses turn with message phases around a web search call. Every
 * other provider must see only the text and the calls; the provider that made a turn gets it back block for block.
 */
const keptTurns: Message[] = [
  { role: 'user', content: 'Find Shannon, note it, then the capital of France.' },
  {
    role: 'assistant',
    content: 'Searching.\n\nShannon was born in 1916.',
    toolCalls: [{ id: 'toolu_N', name: 'note', args: { text: '1916' } }],
    reasoning: [
      { provider: 'anthropic', data: { type: 'text', text: 'Searching.' } },
      {
        provider: 'anthropic',
        data: { type: 'server_tool_use', id: 'srv_1', name: 'web_search', input: { query: 'shannon' } },
      },
      {
        provider: 'anthropic',
        data: { type: 'web_search_tool_result', tool_use_id: 'srv_1', content: [] },
      },
      {
        provider: 'anthropic',
        data: {
          type: 'text',
          text: 'Shannon was born in 1916.',
          citations: [{ type: 'x', cited_text: 'y' }],
        },
      },
      { provider: 'anthropic', data: { type: 'tool_use', id: 'toolu_N', name: 'note' } },
    ],
  },
  { role: 'tool', toolCallId: 'toolu_N', name: 'note', content: 'noted' },
  {
    role: 'assistant',
    content: 'Looking.\n\nParis.',
    reasoning: [
      {
        provider: 'openai-responses',
        data: { type: 'message', role: 'assistant', content: 'Looking.', phase: 'commentary' },
      },
      {
        provider: 'openai-responses',
        data: { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search' } },
      },
      {
        provider: 'openai-responses',
        data: { type: 'message', role: 'assistant', content: 'Paris.', phase: 'final_answer' },
      },
    ],
  },
];

describe('turns kept whole by one provider, in a history read by the others', () => {
  it('Anthropic gets its own turn back block for block; the Responses turn is plain text', () => {
    expect(toAnthropicConversation(keptTurns).messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Searching.' },
          { type: 'server_tool_use', id: 'srv_1', name: 'web_search', input: { query: 'shannon' } },
          { type: 'web_search_tool_result', tool_use_id: 'srv_1', content: [] },
          {
            type: 'text',
            text: 'Shannon was born in 1916.',
            citations: [{ type: 'x', cited_text: 'y' }],
          },
          { type: 'tool_use', id: 'toolu_N', name: 'note', input: { text: '1916' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_N', content: 'noted' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Looking.\n\nParis.' }] },
    ]);
  });

  it('Responses gets its own items back with their phases; the Anthropic turn is text and a call', () => {
    expect(toResponsesConversation(keptTurns).input.slice(1)).toEqual([
      { role: 'assistant', content: 'Searching.\n\nShannon was born in 1916.' },
      { type: 'function_call', call_id: 'toolu_N', name: 'note', arguments: '{"text":"1916"}' },
      { type: 'function_call_output', call_id: 'toolu_N', output: 'noted' },
      { role: 'assistant', content: 'Looking.', phase: 'commentary' },
      { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search' } },
      { role: 'assistant', content: 'Paris.', phase: 'final_answer' },
    ]);
  });

  it('Gemini and Chat Completions see the text and the calls, nothing else', () => {
    expect(toGeminiConversation(keptTurns).contents.slice(1)).toEqual([
      {
        role: 'model',
        parts: [
          { text: 'Searching.\n\nShannon was born in 1916.' },
          { functionCall: { id: 'toolu_N', name: 'note', args: { text: '1916' } } },
        ],
      },
      {
        role: 'user',
        parts: [{ functionResponse: { id: 'toolu_N', name: 'note', response: { output: 'noted' } } }],
      },
      { role: 'model', parts: [{ text: 'Looking.\n\nParis.' }] },
    ]);
    expect(toChatMessages(keptTurns).slice(1)).toEqual([
      {
        role: 'assistant',
        content: 'Searching.\n\nShannon was born in 1916.',
        tool_calls: [
          { id: 'toolu_N', type: 'function', function: { name: 'note', arguments: '{"text":"1916"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_N', content: 'noted' },
      { role: 'assistant', content: 'Looking.\n\nParis.' },
    ]);
  });
});
