import { defineAgent, run, tool } from 'troupe';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Message, ToolMessage } from '../../src/core/messages.ts';
import type { ModelRequest, ModelResponse, ToolSpec } from '../../src/core/model.ts';
import { anthropic } from '../../src/providers/anthropic.ts';
import { anthropicMessageToSse, readJson, readText } from '../support/recorded-replay.ts';
import { sharedWireDir, warnIfWireFixturesMissing } from '../support/wire-fixtures.ts';
import {
  sequence,
  sseFromText,
  startWireServer,
  type WireReply,
  type WireServer,
} from '../support/wire-server.ts';

/**
 * Conformance: the REAL recorded Anthropic transcripts (../shared/fixtures/wire/anthropic and extracted/), read
 * in place. Each first turn must come out as the expected normalized response; the follow-up request our
 * formatter builds from that response plus the recorded tool results must match the recorded follow-up.
 */
const dir = sharedWireDir();
const skip = warnIfWireFixturesMissing('anthropic conformance', dir);

type Json = Record<string, unknown>;

let server: WireServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function extracted(name: string, file: string): unknown {
  return readJson(dir!, `extracted/anthropic/${name}.${file}`);
}

function streamed(name: string, turn: number): WireReply {
  return { sse: sseFromText(readText(dir!, `extracted/anthropic/${name}.${turn}.response.sse`)) };
}

/** Derived: a recorded non-streaming body turned into the stream the API would have sent. */
function derived(name: string, turn: number): WireReply {
  return { sse: anthropicMessageToSse(extracted(name, `${turn}.response.json`) as Json) };
}

function toolsOf(recorded: Json): ToolSpec[] {
  return ((recorded.tools ?? []) as Json[]).map((tool) => ({
    name: String(tool.name),
    description: String(tool.description ?? ''),
    parameters: tool.input_schema as ToolSpec['parameters'],
  }));
}

/** The provider-neutral history of a recorded first request (system and user text only, as these are). */
function historyOf(recorded: Json): Message[] {
  const history: Message[] = [];
  if (typeof recorded.system === 'string') history.push({ role: 'system', content: recorded.system });
  for (const message of recorded.messages as Json[]) {
    const content = message.content;
    const text =
      typeof content === 'string'
        ? content
        : (content as Json[]).map((block) => String(block.text ?? '')).join('');
    history.push({ role: 'user', content: text });
  }
  return history;
}

/** The tool messages a loop would append, from the tool_result blocks of the recorded follow-up. */
function toolResultsOf(recorded: Json): ToolMessage[] {
  const last = (recorded.messages as Json[]).at(-1)!;
  return (last.content as Json[]).map((block) => {
    const message: ToolMessage = {
      role: 'tool',
      toolCallId: String(block.tool_use_id),
      content: String(block.content),
    };
    if (block.is_error === true) message.isError = true;
    return message;
  });
}

function assistantFrom(response: ModelResponse): Message {
  const message: Message = { role: 'assistant', content: response.text, toolCalls: response.toolCalls };
  if (response.reasoning) message.reasoning = response.reasoning;
  return message;
}

/**
 * Differences that carry no meaning: user text as a string or as one text block; `is_error: false` (the
 * default); the `caller` echo on tool_use; whitespace-only text blocks (llm-anthropic adds a " " block).
 */
function normalizeMessages(messages: unknown): unknown {
  return (messages as Json[]).map((message) => {
    const content =
      typeof message.content === 'string'
        ? [{ type: 'text', text: message.content }]
        : (message.content as Json[]);
    return {
      role: message.role,
      content: content
        .filter((block) => !(block.type === 'text' && String(block.text).trim() === ''))
        .map((block) => {
          const { caller: _caller, ...rest } = block;
          if (rest.is_error === false) delete rest.is_error;
          return rest;
        }),
    };
  });
}

function request(messages: Message[], tools: ToolSpec[], extra: Partial<ModelRequest> = {}): ModelRequest {
  return { messages, tools, settings: {}, signal: new AbortController().signal, ...extra };
}

interface Case {
  name: string;
  replies: () => WireReply[];
  expected: Partial<ModelResponse>;
  settings?: ModelRequest['settings'];
  /** Text of the second turn's answer (its start). */
  answer: string;
}

const cases: Case[] = [
  {
    name: 'stream-tool-use-input-json-delta-then-text',
    replies: () => [
      streamed('stream-tool-use-input-json-delta-then-text', 0),
      streamed('stream-tool-use-input-json-delta-then-text', 1),
    ],
    expected: {
      text: '',
      toolCalls: [
        {
          id: 'toolu_018acGYLtfR52q9yDbWaEdQZ',
          name: 'get_weather',
          args: { location: 'San Francisco, CA', units: 'f' },
        },
      ],
      stopReason: 'tool_use',
      usage: { input: 656, output: 74, cached: 0, reasoning: 0 },
    },
    answer: 'The weather in San Francisco, CA is currently:',
  },
  {
    name: 'stream-two-tool-use-blocks-then-end-turn',
    replies: () => [
      streamed('stream-two-tool-use-blocks-then-end-turn', 0),
      streamed('stream-two-tool-use-blocks-then-end-turn', 1),
    ],
    expected: {
      text: '',
      toolCalls: [
        { id: 'toolu_01LtHJmixrs9NcWQkK8hu8hj', name: 'pelican_name_generator', args: {} },
        { id: 'toolu_01N8a4jWyf116qKTMqKKmjyt', name: 'pelican_name_generator', args: {} },
      ],
      stopReason: 'tool_use',
      usage: { input: 542, output: 62, cached: 0, reasoning: 0 },
    },
    answer: 'Here are two great names for your pet pelican:',
  },
  {
    name: 'nonstream-multiple-tool-use-then-end-turn',
    replies: () => [
      derived('nonstream-multiple-tool-use-then-end-turn', 0),
      derived('nonstream-multiple-tool-use-then-end-turn', 1),
    ],
    expected: {
      text: "I'll help you find out who is the youngest by retrieving information about each family member. I'll retrieve their entity information to compare their ages.",
      toolCalls: ['Alice', 'Bob', 'Charlie', 'Daisy'].map((name, index) => ({
        id: [
          'toolu_0167cfEnoQaPviGdVXA95zcu',
          'toolu_01EEe2V5HD1Ac4rKiUR4HD2T',
          'toolu_01XFyAjstT3966qvRynZyVPo',
          'toolu_013mnQZbgtK2oe3Mo3XKJsx3',
        ][index]!,
        name: 'retrieve_entity_info',
        args: { name },
      })),
      stopReason: 'tool_use',
      usage: { input: 423, output: 202, cached: 0, reasoning: 0 },
    },
    answer: 'Based on the retrieved information',
  },
  {
    name: 'nonstream-thinking-tool-use',
    replies: () => [derived('nonstream-thinking-tool-use', 0), derived('nonstream-thinking-tool-use', 1)],
    settings: { providerOptions: { thinking: { budget_tokens: 3000, type: 'enabled' } } },
    expected: {
      text: "I'll help you find the largest city in your country. First, let me determine which country you're from.",
      toolCalls: [{ id: 'toolu_01YGzqpRE16Vricda3Aqcejo', name: 'get_user_country', args: {} }],
      stopReason: 'tool_use',
      usage: { input: 398, output: 155, cached: 0, reasoning: 0 },
    },
    answer: "Based on the information that you're from Mexico",
  },
];

describe.skipIf(skip)(
  'anthropic(): recorded real transcripts (../shared/fixtures/wire, read in place)',
  () => {
    it.each(cases)(
      '$name: normalized response, and the follow-up request matches the recorded one',
      async (c) => {
        server = await startWireServer(sequence(...c.replies()));
        const first = extracted(c.name, '0.request.json') as Json;
        const followUp = extracted(c.name, '1.request.json') as Json;
        const tools = toolsOf(first);
        const model = anthropic(String(first.model), {
          apiKey: 'test-key',
          baseURL: server.url,
          maxTokens: Number(first.max_tokens),
        });
        const history = historyOf(first);
        const settings = c.settings ?? {};

        const response = await model.generate(request(history, tools, { settings }));
        expect(response).toMatchObject(c.expected);

        const seenFirst = server.requests[0]!.body as Json;
        expect(normalizeMessages(seenFirst.messages)).toEqual(normalizeMessages(first.messages));
        expect(seenFirst.system).toEqual(first.system);
        expect(seenFirst.tools).toEqual(first.tools);

        const answer = await model.generate(
          request([...history, assistantFrom(response), ...toolResultsOf(followUp)], tools, { settings }),
        );
        expect(answer.stopReason).toBe('end_turn');
        expect(answer.toolCalls).toEqual([]);
        expect(answer.text.startsWith(c.answer)).toBe(true);

        const seenFollowUp = server.requests[1]!.body as Json;
        expect(normalizeMessages(seenFollowUp.messages)).toEqual(normalizeMessages(followUp.messages));
      },
    );

    it.each(cases)('$name: a real run() sends the recorded follow-up messages', async (c) => {
      server = await startWireServer(sequence(...c.replies()));
      const first = extracted(c.name, '0.request.json') as Json;
      const followUp = extracted(c.name, '1.request.json') as Json;
      const results = new Map(
        toolResultsOf(followUp).map((message) => [message.toolCallId, message.content]),
      );
      const history = historyOf(first);
      const system = history.find((message) => message.role === 'system');
      const input = history.filter((message) => message.role === 'user').map((message) => message.content);
      expect(input).toHaveLength(1);
      const tools = toolsOf(first).map((spec) =>
        tool({
          name: spec.name,
          // Our tool() insists on a description; the recordings sometimes have none (not compared here).
          description: spec.description || `the recorded ${spec.name} tool`,
          input: z.looseObject({}),
          // The recorded result for this call id: the run must then send what the recording sent.
          execute: (_args, context) =>
            results.get(context.callId) ?? `no recorded result for ${context.callId}`,
        }),
      );
      const agent = defineAgent({
        name: 'recorded',
        instructions: typeof system?.content === 'string' ? system.content : '',
        model: anthropic(String(first.model), {
          apiKey: 'test-key',
          baseURL: server.url,
          maxTokens: Number(first.max_tokens),
        }),
        tools,
        settings: c.settings ?? {},
      });
      const result = await run(agent, input[0] as string);
      expect(result.status).toBe('completed');
      expect(result.text.startsWith(c.answer)).toBe(true);
      expect(server.requests).toHaveLength(2);
      const seenFollowUp = server.requests[1]!.body as Json;
      expect(normalizeMessages(seenFollowUp.messages)).toEqual(normalizeMessages(followUp.messages));
    });

    it('the thinking transcript carries the signed thinking block back byte for byte', async () => {
      server = await startWireServer(
        sequence(derived('nonstream-thinking-tool-use', 0), derived('nonstream-thinking-tool-use', 1)),
      );
      const first = extracted('nonstream-thinking-tool-use', '0.request.json') as Json;
      const followUp = extracted('nonstream-thinking-tool-use', '1.request.json') as Json;
      const model = anthropic('claude-sonnet-4-0', { apiKey: 'k', baseURL: server.url });
      const history = historyOf(first);
      const response = await model.generate(request(history, toolsOf(first)));
      const recordedThinking = ((followUp.messages as Json[])[1]!.content as Json[])[0];
      expect(response.reasoning?.[0]?.data).toEqual(recordedThinking);

      await model.generate(
        request([...history, assistantFrom(response), ...toolResultsOf(followUp)], toolsOf(first)),
      );
      const sent = server.requests[1]!.rawBody;
      expect(sent).toContain(JSON.stringify((recordedThinking as Json).signature));
    });

    it('stream-max-tokens-mid-tool-use: max_tokens, the cut tool call is not reported as a call', async () => {
      server = await startWireServer(
        sequence({ sse: sseFromText(readText(dir!, 'anthropic/stream-max-tokens-mid-tool-use.sse')) }),
      );
      const model = anthropic('claude-sonnet-4-5', { apiKey: 'k', baseURL: server.url });
      const response = await model.generate(request([{ role: 'user', content: 'Write taxes.txt' }], []));
      expect(response.stopReason).toBe('max_tokens');
      expect(response.toolCalls).toEqual([]);
      expect(response.text).toBe(
        "I'll create a comprehensive tax guide for someone with multiple W2s and save it in a file called taxes.txt. Let me do that for you now.",
      );
      expect(response.usage).toEqual({ input: 450, output: 124, cached: 0, reasoning: 0 });
      expect(response.raw).toMatchObject({
        incompleteToolCalls: [{ id: 'toolu_01EKqbqmZrGRXy18eN7m9kvY', name: 'make_file' }],
      });
    });
  },
);
