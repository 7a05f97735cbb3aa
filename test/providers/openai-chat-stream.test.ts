import fc from 'fast-check';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions/completions';
import { describe, expect, it } from 'vitest';
import { ModelError } from '../../src/core/errors.ts';
import type { ModelDelta } from '../../src/core/model.ts';
import { ChatStreamReducer, chatStopReason } from '../../src/providers/openai-chat-stream.ts';

type Delta = ChatCompletionChunk.Choice.Delta & Record<string, unknown>;

function chunk(
  delta: Delta,
  finish: string | null = null,
  extra: Partial<ChatCompletionChunk> = {},
): ChatCompletionChunk {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'gpt-test',
    choices: [{ index: 0, delta, finish_reason: finish as ChatCompletionChunk.Choice['finish_reason'] }],
    ...extra,
  };
}

function usageChunk(prompt: number, completion: number, cached = 0, reasoning = 0): ChatCompletionChunk {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'gpt-test',
    choices: [],
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
      prompt_tokens_details: { cached_tokens: cached },
      completion_tokens_details: { reasoning_tokens: reasoning },
    },
  };
}

function call(index: number, id: string | undefined, name: string | undefined, args: string) {
  const toolCall: NonNullable<Delta['tool_calls']>[number] = { index, function: { arguments: args } };
  if (id !== undefined) toolCall.id = id;
  if (name !== undefined) toolCall.function = { name, arguments: args };
  if (id !== undefined || name !== undefined) toolCall.type = 'function';
  return toolCall;
}

function reduce(chunks: ChatCompletionChunk[], complete = true) {
  const deltas: ModelDelta[] = [];
  let n = 0;
  const reducer = new ChatStreamReducer(
    () => `gen_${++n}`,
    (delta) => deltas.push(delta),
  );
  for (const c of chunks) reducer.push(c);
  return { response: reducer.finish(complete), deltas, reducer };
}

describe('chatStopReason', () => {
  it.each([
    ['stop', false, false, 'end_turn'],
    ['stop', true, false, 'tool_use'],
    ['stop', false, true, 'refusal'],
    ['tool_calls', true, false, 'tool_use'],
    ['tool_calls', false, false, 'unknown'],
    ['length', false, false, 'max_tokens'],
    ['length', true, false, 'max_tokens'],
    ['content_filter', false, false, 'content_filter'],
    [undefined, false, false, 'unknown'],
    [undefined, true, false, 'tool_use'],
    ['something_new', false, false, 'unknown'],
  ] as const)('%s (calls %s, refused only %s) -> %s', (finish, calls, refused, expected) => {
    expect(chatStopReason(finish, calls, refused)).toBe(expected);
  });
});

describe('ChatStreamReducer', () => {
  it('streams text deltas and reads usage (cached and reasoning) from the empty-choices chunk', () => {
    const { response, deltas } = reduce([
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: 'Hel' }),
      chunk({ content: 'lo' }),
      chunk({}, 'stop'),
      usageChunk(12, 5, 4, 2),
    ]);
    expect(deltas).toEqual([
      { type: 'text', text: 'Hel' },
      { type: 'text', text: 'lo' },
    ]);
    expect(response).toMatchObject({
      text: 'Hello',
      toolCalls: [],
      stopReason: 'end_turn',
      rawStopReason: 'stop',
      usage: { input: 12, output: 5, cached: 4, reasoning: 2 },
    });
  });

  it('assembles parallel tool calls from split arguments, in order, with their deltas', () => {
    const { response, deltas } = reduce([
      chunk({ role: 'assistant', tool_calls: [call(0, 'call_a', 'weather', '')] }),
      chunk({ tool_calls: [call(0, undefined, undefined, '{"ci')] }),
      chunk({ tool_calls: [call(0, undefined, undefined, 'ty":"Paris"}')] }),
      chunk({ tool_calls: [call(1, 'call_b', 'weather', '{"city":')] }),
      chunk({ tool_calls: [call(1, undefined, undefined, '"Rome"}')] }),
      chunk({}, 'tool_calls'),
    ]);
    expect(response.toolCalls).toEqual([
      { id: 'call_a', name: 'weather', args: { city: 'Paris' } },
      { id: 'call_b', name: 'weather', args: { city: 'Rome' } },
    ]);
    expect(response.stopReason).toBe('tool_use');
    expect(deltas).toEqual([
      { type: 'tool_call', index: 0, id: 'call_a', name: 'weather', argsDelta: '' },
      { type: 'tool_call', index: 0, argsDelta: '{"ci' },
      { type: 'tool_call', index: 0, argsDelta: 'ty":"Paris"}' },
      { type: 'tool_call', index: 1, id: 'call_b', name: 'weather', argsDelta: '{"city":' },
      { type: 'tool_call', index: 1, argsDelta: '"Rome"}' },
    ]);
  });

  it('handles a first call at index 1, ids "" and "0", no finish_reason and usage on the last choice chunk', () => {
    const last = chunk({ tool_calls: [call(2, '0', undefined, '{}')] });
    last.usage = { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 };
    const { response, deltas } = reduce([
      chunk({ tool_calls: [call(1, '', 'lookup', '{"q":')] }),
      chunk({ tool_calls: [call(1, '', undefined, '"x"}')] }),
      chunk({ tool_calls: [call(2, '0', 'now', '')] }),
      last,
    ]);
    expect(response.toolCalls).toEqual([
      { id: 'gen_1', name: 'lookup', args: { q: 'x' } },
      { id: 'gen_2', name: 'now', args: {} },
    ]);
    expect(response.stopReason).toBe('tool_use');
    expect(response.usage).toEqual({ input: 3, output: 4, cached: 0, reasoning: 0 });
    expect(deltas.filter((d) => d.type === 'tool_call' && d.id !== undefined)).toEqual([
      { type: 'tool_call', index: 0, id: 'gen_1', name: 'lookup', argsDelta: '{"q":' },
      { type: 'tool_call', index: 1, id: 'gen_2', name: 'now', argsDelta: '' },
    ]);
  });

  it('separates whole calls a server sends one by one at index 0, and duplicate ids', () => {
    const { response } = reduce([
      chunk({ tool_calls: [call(0, 'dup', 'a', '{"n":1}')] }),
      chunk({ tool_calls: [call(0, 'dup', 'b', '{"n":2}')] }),
      chunk({}, 'tool_calls'),
    ]);
    expect(response.toolCalls.map((c) => [c.id, c.name, c.args])).toEqual([
      ['dup', 'a', { n: 1 }],
      ['gen_1', 'b', { n: 2 }],
    ]);
  });

  it('continues the last call when a server leaves out the index', () => {
    const { response } = reduce([
      chunk({
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'a', arguments: '{"x":' } } as never],
      }),
      chunk({ tool_calls: [{ function: { arguments: '1}' } } as never] }),
      chunk({}, 'tool_calls'),
    ]);
    expect(response.toolCalls).toEqual([{ id: 'c1', name: 'a', args: { x: 1 } }]);
  });

  it('keeps invalid JSON arguments as the raw text, for the tool runner to answer with an error', () => {
    const { response } = reduce([
      chunk({ tool_calls: [call(0, 'c1', 'a', '{"x": nope')] }),
      chunk({}, 'tool_calls'),
    ]);
    expect(response.toolCalls).toEqual([{ id: 'c1', name: 'a', args: '{"x": nope' }]);
    expect(response.stopReason).toBe('tool_use');
  });

  it('reports length as max_tokens, never a normal end, and drops a call cut in the middle', () => {
    const text = reduce([chunk({ content: '{"' }), chunk({}, 'length'), usageChunk(10, 1)]).response;
    expect(text).toMatchObject({ text: '{"', stopReason: 'max_tokens', rawStopReason: 'length' });
    const cut = reduce([
      chunk({ tool_calls: [call(0, 'c1', 'a', '{"x": "ab')] }),
      chunk({}, 'length'),
    ]).response;
    expect(cut.toolCalls).toEqual([]);
    expect(cut.stopReason).toBe('max_tokens');
  });

  it('collects a refusal (first delta refusal "" with content null) as refusal', () => {
    const { response, deltas } = reduce([
      chunk({ role: 'assistant', content: null, refusal: '' }),
      chunk({ refusal: "I'm sorry" }),
      chunk({ refusal: ", I can't." }),
      chunk({}, 'stop'),
    ]);
    expect(response).toMatchObject({ text: '', refusal: "I'm sorry, I can't.", stopReason: 'refusal' });
    expect(deltas).toEqual([]);
  });

  it('maps content_filter and forwards reasoning_content deltas of compatible servers', () => {
    const { response, deltas } = reduce([
      chunk({ reasoning_content: 'hmm' }),
      chunk({ content: 'x' }, 'content_filter'),
    ]);
    expect(response.stopReason).toBe('content_filter');
    expect(deltas[0]).toEqual({ type: 'reasoning', text: 'hmm' });
  });

  it('keeps a tool call extra_content (Gemini thought signature) as a reasoning block of this provider', () => {
    const extra = { google: { thought_signature: 'sig' } };
    const { response } = reduce([
      chunk({ tool_calls: [{ ...call(0, 'c1', 'a', '{}'), extra_content: extra } as never] }),
      chunk({}, 'tool_calls'),
    ]);
    expect(response.reasoning).toEqual([
      { provider: 'openai-chat', data: { type: 'tool_call_extra', toolCallId: 'c1', extra_content: extra } },
    ]);
  });

  it('throws a retryable truncated_stream when the stream stopped without [DONE], finish_reason or usage', () => {
    const reducer = new ChatStreamReducer(() => 'id');
    reducer.push(chunk({ content: 'partial' }));
    let thrown: unknown;
    try {
      reducer.finish(false);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ModelError);
    expect(thrown).toMatchObject({ kind: 'truncated_stream', retryable: true });
    // The same chunks with [DONE] seen are a complete (quirky) answer.
    expect(reducer.finish(true)).toMatchObject({ text: 'partial', stopReason: 'unknown' });
  });
});

describe('ChatStreamReducer properties (fast-check)', () => {
  const argsArb = fc.dictionary(
    fc.string({ minLength: 1, maxLength: 6 }),
    fc.oneof(fc.integer(), fc.string({ maxLength: 8 }), fc.boolean()),
    { maxKeys: 4 },
  );
  const callArb = fc.record({
    name: fc.constantFrom('weather', 'search', 'add'),
    id: fc.constantFrom('', '0', 'call_x'),
    args: argsArb,
    cuts: fc.array(fc.nat(), { maxLength: 5 }),
  });

  it('split anywhere, at any start index, with any ids: the same calls in order, unique ids, deltas that add up', () => {
    fc.assert(
      fc.property(
        fc.array(callArb, { minLength: 1, maxLength: 4 }),
        fc.constantFrom(0, 1),
        fc.constantFrom<string | null>('tool_calls', 'stop', null),
        (calls, firstIndex, finish) => {
          const chunks: ChatCompletionChunk[] = [];
          calls.forEach((c, k) => {
            const text = JSON.stringify(c.args);
            const points = [...new Set(c.cuts.map((cut) => cut % (text.length + 1)))].sort((a, b) => a - b);
            const pieces: string[] = [];
            let from = 0;
            for (const point of points) {
              pieces.push(text.slice(from, point));
              from = point;
            }
            pieces.push(text.slice(from));
            const index = firstIndex + k;
            chunks.push(chunk({ tool_calls: [call(index, c.id, c.name, pieces[0] ?? '')] }));
            for (const piece of pieces.slice(1))
              chunks.push(chunk({ tool_calls: [call(index, undefined, undefined, piece)] }));
          });
          chunks.push(chunk({}, finish));
          const { response, deltas } = reduce(chunks);
          expect(response.toolCalls.map((c) => [c.name, c.args])).toEqual(calls.map((c) => [c.name, c.args]));
          const ids = response.toolCalls.map((c) => c.id);
          expect(new Set(ids).size).toBe(ids.length);
          expect(ids.every((id) => id !== '' && id !== '0')).toBe(true);
          expect(response.stopReason).toBe('tool_use');
          calls.forEach((c, k) => {
            const streamed = deltas
              .filter((d) => d.type === 'tool_call' && d.index === k)
              .map((d) => (d.type === 'tool_call' ? d.argsDelta : ''))
              .join('');
            expect(streamed).toBe(JSON.stringify(c.args));
            const opening = deltas.find((d) => d.type === 'tool_call' && d.index === k);
            expect(opening).toMatchObject({ id: ids[k], name: c.name });
          });
        },
      ),
      { numRuns: 300 },
    );
  });
});
