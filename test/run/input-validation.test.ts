import {
  ConfigError,
  type ContentPart,
  createAgentSystem,
  defineAgent,
  HistoryValidationError,
  type Message,
  parallel,
  type RunInput,
  run,
  stream,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * Input content parts and history messages are checked before anything runs, on every path (run, stream, a
 * session's spawn and send, parallel): a wrong part is a ConfigError (a wrong message a HistoryValidationError),
 * never a TypeError in the middle of the run or an uncaught exception that ends the process.
 */

const badInputs: [string, unknown][] = [
  ['null', [null]],
  ['a number', [42]],
  ['an unknown part type', [{ type: 'video', url: 'https://example.com/v.mp4' }]],
  ['a text part without text', [{ type: 'text' }]],
  ['an image part without url or data', [{ type: 'image' }]],
  ['an image with data but no media type', [{ type: 'image', data: 'aGk=' }]],
  ['an image with a relative url', [{ type: 'image', url: 'cat.png' }]],
  ['an image with a wrong detail', [{ type: 'image', url: 'https://example.com/c.png', detail: 'max' }]],
  ['an empty array', []],
];

function agentWith(model = scriptedModel([{ text: 'ok', stopReason: 'end_turn' }])) {
  return { model, agent: defineAgent({ name: 'a', instructions: '', model }) };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe('run input content parts', () => {
  it.each(badInputs)(
    'run() rejects %s with a ConfigError before calling the model',
    async (_label, input) => {
      const { model, agent } = agentWith();
      await expect(run(agent, input as RunInput)).rejects.toThrowError(ConfigError);
      expect(model.calls).toBe(0);
    },
  );

  it.each(badInputs)('stream() throws for %s', (_label, input) => {
    const { agent } = agentWith();
    expect(() => stream(agent, input as RunInput)).toThrowError(ConfigError);
  });

  it('run() with a budget and [null]: a ConfigError, not an uncaught TypeError from the budget estimate', async () => {
    const { model, agent } = agentWith();
    await expect(run(agent, [null] as unknown as RunInput, { budget: { tokens: 1e5 } })).rejects.toThrowError(
      ConfigError,
    );
    expect(model.calls).toBe(0);
  });

  it('accepts valid parts: text, an image by URL, an image as base64 data', async () => {
    const { agent } = agentWith();
    const input: ContentPart[] = [
      { type: 'text', text: 'What is this?' },
      { type: 'image', url: 'https://example.com/cat.png', detail: 'low' },
      { type: 'image', data: 'aGk=', mediaType: 'image/png' },
    ];
    const result = await run(agent, input, { budget: { tokens: 1e5 } });
    expect(result.status).toBe('completed');
  });

  it.each(badInputs)(
    'spawn() throws for %s; send() rejects it and the session goes on',
    async (_label, input) => {
      const model = scriptedModel([
        { text: 'one', stopReason: 'end_turn' },
        { text: 'two', stopReason: 'end_turn' },
      ]);
      const agent = defineAgent({ name: 'a', instructions: '', model });
      const system = createAgentSystem();
      cleanups.push(() => system.shutdown());
      expect(() => system.spawn(agent, input as RunInput)).toThrowError(ConfigError);
      const session = system.spawn(agent, 'hi');
      expect((await session.result).text).toBe('one');
      await expect(session.send(input as RunInput)).rejects.toThrowError(ConfigError);
      expect((await session.send('again')).text).toBe('two');
    },
  );

  it.each(badInputs)('parallel().run() rejects %s', async (_label, input) => {
    const { model, agent } = agentWith();
    await expect(parallel([agent], { merge: 'concat' }).run(input as RunInput)).rejects.toThrowError(
      ConfigError,
    );
    expect(model.calls).toBe(0);
  });
});

const badHistories: [string, unknown[]][] = [
  ['a user message with a null part', [{ role: 'user', content: [null] }]],
  ['a user message with a video part', [{ role: 'user', content: [{ type: 'video' }] }]],
  ['a user message with an empty part list', [{ role: 'user', content: [] }]],
  [
    'tool call arguments that are not JSON',
    [
      { role: 'assistant', content: '', toolCalls: [{ id: 't', name: 'x', args: { n: 1n } }] },
      { role: 'tool', toolCallId: 't', content: 'x' },
    ],
  ],
  [
    'a tool message whose isError is not a boolean',
    [
      { role: 'assistant', content: '', toolCalls: [{ id: 't', name: 'x', args: {} }] },
      { role: 'tool', toolCallId: 't', content: '', isError: 'yes' },
    ],
  ],
  [
    'a tool message whose name is not a string',
    [
      { role: 'assistant', content: '', toolCalls: [{ id: 't', name: 'x', args: {} }] },
      { role: 'tool', toolCallId: 't', content: '', name: 7 },
    ],
  ],
  [
    'a tool call without args',
    [
      { role: 'assistant', content: '', toolCalls: [{ id: 't', name: 'x' }] },
      { role: 'tool', toolCallId: 't', content: '' },
    ],
  ],
  ['reasoning that is not an array', [{ role: 'assistant', content: '', reasoning: 'thinking' }]],
];

describe('history messages', () => {
  it.each(badHistories)('run() rejects %s with a HistoryValidationError', async (_label, history) => {
    const { model, agent } = agentWith();
    await expect(run(agent, 'go', { history: history as Message[] })).rejects.toThrowError(
      HistoryValidationError,
    );
    expect(model.calls).toBe(0);
  });

  it.each(badHistories)('run() with a budget rejects %s before anything runs', async (_label, history) => {
    const { model, agent } = agentWith();
    await expect(
      run(agent, 'go', { history: history as Message[], budget: { tokens: 1e5 } }),
    ).rejects.toThrowError(HistoryValidationError);
    expect(model.calls).toBe(0);
  });

  it.each(badHistories)('spawn() throws for %s', async (_label, history) => {
    const { agent } = agentWith();
    const system = createAgentSystem();
    cleanups.push(() => system.shutdown());
    expect(() => system.spawn(agent, 'go', { history: history as Message[] })).toThrowError(
      HistoryValidationError,
    );
  });

  it.each(badHistories)('parallel().run() rejects %s', async (_label, history) => {
    const { agent } = agentWith();
    await expect(
      parallel([agent], { merge: 'concat' }).run('go', { history: history as Message[] }),
    ).rejects.toThrowError(HistoryValidationError);
  });
});
