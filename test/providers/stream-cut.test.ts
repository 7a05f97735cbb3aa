import { describe, expect, it } from 'vitest';
import { ModelError } from '../../src/core/errors.ts';
import type { ModelProvider } from '../../src/core/model.ts';
import { anthropic } from '../../src/providers/anthropic.ts';
import { gemini } from '../../src/providers/gemini.ts';
import { openai } from '../../src/providers/openai-chat.ts';
import { openaiCompatible } from '../../src/providers/openai-compatible.ts';
import { openaiResponses } from '../../src/providers/openai-responses.ts';
import type { RetryOptions } from '../../src/providers/retry.ts';
import * as anthropicWire from '../fixtures/wire/anthropic.ts';
import * as geminiWire from '../fixtures/wire/gemini.ts';
import { textStream } from '../fixtures/wire/openai-chat.ts';
import * as responsesWire from '../fixtures/wire/openai-responses.ts';
import { recordingRequest, useWireServer } from '../support/wire-session.ts';

const { serve, current } = useWireServer();

interface Case {
  name: string;
  make: (url: string, options: RetryOptions) => ModelProvider;
  frames: string[];
  /** How many frames go out before the first delta (none of them emits one). */
  beforeDelta: number;
  /** A cut after this many frames falls after at least one delta. */
  afterDelta: number;
  text: string;
}

const noSleep: RetryOptions = { sleep: async () => {} };

/** Every adapter, each with a streamed text answer of its own wire format. */
const cases: Case[] = [
  {
    name: 'openai() Chat Completions',
    make: (url, options) => openai('gpt-test', { apiKey: 'k', baseURL: url, ...options }),
    frames: textStream(['Hel', 'lo']),
    beforeDelta: 1,
    afterDelta: 2,
    text: 'Hello',
  },
  {
    name: 'openaiCompatible()',
    make: (url, options) => openaiCompatible({ baseURL: url, ...options })('llama-test'),
    frames: textStream(['Hel', 'lo']),
    beforeDelta: 1,
    afterDelta: 2,
    text: 'Hello',
  },
  {
    name: 'openai.responses()',
    make: (url, options) => openaiResponses('gpt-test', { apiKey: 'k', baseURL: url, ...options }),
    frames: responsesWire.streamedText,
    beforeDelta: 4,
    afterDelta: 5,
    text: 'Hello.',
  },
  {
    name: 'anthropic()',
    make: (url, options) => anthropic('claude-test-1', { apiKey: 'k', baseURL: url, ...options }),
    frames: anthropicWire.streamedText,
    beforeDelta: 3,
    afterDelta: 4,
    text: 'Hello, world.',
  },
  {
    name: 'gemini()',
    make: (url, options) => gemini('gemini-test', { apiKey: 'k', baseURL: url, ...options }),
    frames: geminiWire.streamedText,
    beforeDelta: 0,
    afterDelta: 2,
    text: 'Hello, world.',
  },
];

describe.each(cases)('$name: a connection reset has one kind on every provider', (c) => {
  it('cut after a delta went out: truncated_stream, not retried', async () => {
    const { url } = await serve({ sse: c.frames, truncateAfterChunks: c.afterDelta }, { sse: c.frames });
    const req = recordingRequest([{ role: 'user', content: 'x' }]);
    const error = await c
      .make(url, noSleep)
      .generate(req)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ kind: 'truncated_stream', retryable: false });
    expect(req.deltas.length).toBeGreaterThan(0);
    expect(current().requests).toHaveLength(1);
  });

  it('cut after the response began but before any delta: truncated_stream, retried, and the retry answers', async () => {
    const { url } = await serve({ sse: c.frames, truncateAfterChunks: c.beforeDelta }, { sse: c.frames });
    const single = await c
      .make(url, { maxRetries: 0 })
      .generate(recordingRequest([{ role: 'user', content: 'x' }]))
      .catch((e: unknown) => e);
    expect(single).toMatchObject({ kind: 'truncated_stream', retryable: true });

    await current().close();
    const again = await serve({ sse: c.frames, truncateAfterChunks: c.beforeDelta }, { sse: c.frames });
    const response = await c
      .make(again.url, noSleep)
      .generate(recordingRequest([{ role: 'user', content: 'x' }]));
    expect(response.text).toBe(c.text);
    expect(again.requests).toHaveLength(2);
  });

  it('reset before any response: network, retried', async () => {
    const { url } = await serve({ resetBeforeResponse: true }, { sse: c.frames });
    const single = await c
      .make(url, { maxRetries: 0 })
      .generate(recordingRequest([{ role: 'user', content: 'x' }]))
      .catch((e: unknown) => e);
    expect(single).toMatchObject({ kind: 'network', retryable: true });

    await current().close();
    const again = await serve({ resetBeforeResponse: true }, { sse: c.frames });
    const response = await c
      .make(again.url, noSleep)
      .generate(recordingRequest([{ role: 'user', content: 'x' }]));
    expect(response.text).toBe(c.text);
    expect(again.requests).toHaveLength(2);
  });
});
