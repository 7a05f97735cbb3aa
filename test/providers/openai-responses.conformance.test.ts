import { defineAgent, run, tool } from 'troupe';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Message, ToolMessage } from '../../src/core/messages.ts';
import type { ModelRequest, ModelResponse, ToolSpec } from '../../src/core/model.ts';
import { openaiResponses } from '../../src/providers/openai-responses.ts';
import { readJson, readText, responsesObjectToSse } from '../support/recorded-replay.ts';
import { sharedWireDir, warnIfWireFixturesMissing } from '../support/wire-fixtures.ts';
import {
  sequence,
  sseFromText,
  startWireServer,
  type WireReply,
  type WireServer,
} from '../support/wire-server.ts';

/**
 * Conformance: the REAL recorded OpenAI Responses transcripts (extracted/openai-responses), read in place.
 * Streaming ones replay byte for byte; non-streaming bodies are turned into the stream events (derived).
 */
const dir = sharedWireDir();
const skip = warnIfWireFixturesMissing('openai-responses conformance', dir);

type Json = Record<string, unknown>;

let server: WireServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function extracted(name: string, file: string): unknown {
  return readJson(dir!, `extracted/openai-responses/${name}.${file}`);
}

function reply(name: string, turn: number): WireReply {
  if (name.startsWith('stream-')) {
    return { sse: sseFromText(readText(dir!, `extracted/openai-responses/${name}.${turn}.response.sse`)) };
  }
  return { sse: responsesObjectToSse(extracted(name, `${turn}.response.json`) as Json) };
}

function toolsOf(recorded: Json): ToolSpec[] {
  return ((recorded.tools ?? []) as Json[]).map((tool) => ({
    name: String(tool.name),
    description: String(tool.description ?? ''),
    parameters: tool.parameters as ToolSpec['parameters'],
  }));
}

function historyOf(recorded: Json): Message[] {
  const history: Message[] = [];
  if (typeof recorded.instructions === 'string' && recorded.instructions !== '') {
    history.push({ role: 'system', content: recorded.instructions });
  }
  for (const item of recorded.input as Json[]) history.push({ role: 'user', content: String(item.content) });
  return history;
}

function toolResultsOf(recorded: Json): ToolMessage[] {
  return (recorded.input as Json[])
    .filter((item) => item.type === 'function_call_output')
    .map((item) => ({ role: 'tool', toolCallId: String(item.call_id), content: String(item.output) }));
}

function assistantFrom(response: ModelResponse): Message {
  const message: Message = { role: 'assistant', content: response.text, toolCalls: response.toolCalls };
  if (response.reasoning) message.reasoning = response.reasoning;
  return message;
}

/**
 * Differences without meaning: key order, arguments JSON whitespace (compared parsed), and the empty assistant
 * message pydantic-ai sends before its function calls.
 */
function normalizeInput(input: unknown): unknown {
  return (input as Json[])
    .filter((item) => !(item.role === 'assistant' && item.content === ''))
    .map((item) =>
      typeof item.arguments === 'string' ? { ...item, arguments: JSON.parse(item.arguments) } : item,
    );
}

function request(
  messages: Message[],
  tools: ToolSpec[],
  settings: ModelRequest['settings'] = {},
): ModelRequest {
  return { messages, tools, settings, signal: new AbortController().signal };
}

interface Case {
  name: string;
  expected: Partial<ModelResponse>;
  settings?: ModelRequest['settings'];
  answer: string;
}

const cases: Case[] = [
  {
    name: 'stream-function-call-args-delta-then-answer',
    settings: { providerOptions: { reasoning: { effort: 'low' } } },
    expected: {
      text: '',
      toolCalls: [{ id: 'call_sVidsfFJ6zlzRpelrPkTPlpd', name: 'multiply', args: { a: 1231, b: 2331 } }],
      stopReason: 'tool_use',
      usage: { input: 58, output: 23, cached: 0, reasoning: 0 },
    },
    answer: '1231 × 2331 = **2,869,461**',
  },
  {
    name: 'nonstream-function-call-then-answer',
    settings: { providerOptions: { reasoning: { effort: 'low' } } },
    expected: {
      toolCalls: [{ id: 'call_nJmCK7SJe3ajdYYplIbH0KgL', name: 'multiply', args: { a: 1231, b: 2331 } }],
      stopReason: 'tool_use',
      usage: { input: 58, output: 23, cached: 0, reasoning: 0 },
    },
    answer: '1231 * 2331 = 2,869,461',
  },
  {
    name: 'nonstream-parallel-function-calls',
    expected: {
      toolCalls: [
        { id: 'call_LWVp74L5HaH2KNvgVz9PJsrj', name: 'get_location', args: { loc_name: 'Londos' } },
        { id: 'call_YnRAWeTyxI91m5uNa5bxXwVO', name: 'get_location', args: { loc_name: 'London' } },
      ],
      stopReason: 'tool_use',
      usage: { input: 0, output: 0, cached: 0, reasoning: 0 },
    },
    answer: 'It seems "Londos" might be incorrect',
  },
];

describe.skipIf(skip)(
  'openaiResponses(): recorded real transcripts (../shared/fixtures/wire, read in place)',
  () => {
    it.each(cases)(
      '$name: normalized response, and the follow-up input matches the recorded one',
      async (c) => {
        server = await startWireServer(sequence(reply(c.name, 0), reply(c.name, 1)));
        const first = extracted(c.name, '0.request.json') as Json;
        const followUp = extracted(c.name, '1.request.json') as Json;
        const tools = toolsOf(first);
        const model = openaiResponses(String(first.model), { apiKey: 'k', baseURL: server.url });
        const history = historyOf(first);

        const response = await model.generate(request(history, tools, c.settings));
        expect(response).toMatchObject(c.expected);
        const seenFirst = server.requests[0]!.body as Json;
        expect(normalizeInput(seenFirst.input)).toEqual(normalizeInput(first.input));
        if (first.store === false) {
          expect(seenFirst.store).toBe(false);
          expect(seenFirst.include).toEqual(first.include);
          expect(seenFirst.reasoning).toEqual(first.reasoning);
        }

        const answer = await model.generate(
          request([...history, assistantFrom(response), ...toolResultsOf(followUp)], tools, c.settings),
        );
        expect(answer.stopReason).toBe('end_turn');
        expect(answer.text.startsWith(c.answer)).toBe(true);
        expect(normalizeInput((server.requests[1]!.body as Json).input)).toEqual(
          normalizeInput(followUp.input),
        );
      },
    );

    it.each(cases)('$name: a real run() sends the recorded follow-up input', async (c) => {
      server = await startWireServer(sequence(reply(c.name, 0), reply(c.name, 1)));
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
          execute: (_args, context) =>
            results.get(context.callId) ?? `no recorded result for ${context.callId}`,
        }),
      );
      const agent = defineAgent({
        name: 'recorded',
        instructions: typeof system?.content === 'string' ? system.content : '',
        model: openaiResponses(String(first.model), { apiKey: 'k', baseURL: server.url }),
        tools,
        settings: c.settings ?? {},
      });
      const result = await run(agent, input[0] as string);
      expect(result.status).toBe('completed');
      expect(result.text.startsWith(c.answer)).toBe(true);
      expect(server.requests).toHaveLength(2);
      expect(normalizeInput((server.requests[1]!.body as Json).input)).toEqual(
        normalizeInput(followUp.input),
      );
    });
  },
);
