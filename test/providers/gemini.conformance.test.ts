import { defineAgent, run, tool } from 'troupe';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Message, ToolMessage } from '../../src/core/messages.ts';
import type { ModelRequest, ModelResponse, ToolSpec } from '../../src/core/model.ts';
import { gemini } from '../../src/providers/gemini.ts';
import { camelKeys, jsonArrayToSse, jsonLinesToSse, readJson, readText } from '../support/recorded-replay.ts';
import { sharedWireDir, warnIfWireFixturesMissing } from '../support/wire-fixtures.ts';
import { sequence, startWireServer, type WireServer } from '../support/wire-server.ts';

/**
 * Conformance: the REAL recorded native Gemini transcripts (../shared/fixtures/wire/gemini/native-* and
 * extracted/gemini/native-*), read in place. The llm-gemini cassette streamed without alt=sse (a JSON array);
 * its chunks are replayed one per SSE frame, unchanged.
 */
const dir = sharedWireDir();
const skip = warnIfWireFixturesMissing('gemini conformance', dir);

type Json = Record<string, unknown>;

let server: WireServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const name = 'native-stream-function-calls-finish-STOP';

function extracted(file: string): unknown {
  return readJson(dir!, `extracted/gemini/${name}.${file}`);
}

function turn(index: number) {
  return { sse: jsonArrayToSse(extracted(`${index}.response.json`) as unknown[]) };
}

function request(messages: Message[], tools: ToolSpec[]): ModelRequest {
  return { messages, tools, settings: {}, signal: new AbortController().signal };
}

function assistantFrom(response: ModelResponse): Message {
  const message: Message = { role: 'assistant', content: response.text, toolCalls: response.toolCalls };
  if (response.reasoning) message.reasoning = response.reasoning;
  return message;
}

/** The function responses a loop would append, from the last content of a recorded request. */
function toolResultsOf(recorded: Json): ToolMessage[] {
  const last = (recorded.contents as Json[]).at(-1)!;
  return (last.parts as Json[]).map((part) => {
    const fr = part.function_response as { id: string; name: string; response: { output: string } };
    return { role: 'tool', toolCallId: fr.id, name: fr.name, content: fr.response.output };
  });
}

describe.skipIf(skip)('gemini(): recorded real transcripts (../shared/fixtures/wire, read in place)', () => {
  it(`${name}: three turns; STOP with function calls is tool_use; signatures and history match the recording`, async () => {
    server = await startWireServer(sequence(turn(0), turn(1), turn(2)));
    const first = extracted('0.request.json') as Json;
    const second = extracted('1.request.json') as Json;
    const third = extracted('2.request.json') as Json;
    // The recording's client (llm-gemini) made up these ids itself; we hand the same ones to our synthesizer so
    // the follow-up requests can be compared exactly.
    const ids = ['call_27db36357f594e73b557ec8f70da9e87', 'call_97666b91d4c14f44b94ab69dded4ab10'];
    const model = gemini('gemini-2.5-flash', {
      apiKey: 'k',
      baseURL: server.url,
      generateId: () => ids.shift()!,
    });
    const tools: ToolSpec[] = [
      { name: 'pelican_name_generator', description: '', parameters: { type: 'object', properties: {} } },
    ];
    const history: Message[] = [{ role: 'user', content: 'Two names for a pet pelican' }];

    const r1 = await model.generate(request(history, tools));
    expect(r1.stopReason).toBe('tool_use');
    expect(r1.rawStopReason).toBe('STOP');
    expect(r1.toolCalls).toEqual([
      { id: 'call_27db36357f594e73b557ec8f70da9e87', name: 'pelican_name_generator', args: {} },
    ]);
    expect(r1.usage).toEqual({ input: 32, output: 54, cached: 0, reasoning: 42 });
    expect(r1.reasoning?.[0]).toMatchObject({ provider: 'gemini', data: { type: 'thought' } });
    expect(r1.reasoning?.[0]?.text).toContain('**Generating Pelican Names**');
    const recordedModelTurn = (second.contents as Json[])[1] as Json;
    const recordedSignature = ((recordedModelTurn.parts as Json[])[0] as Json).thoughtSignature;
    expect(r1.reasoning?.[1]).toEqual({
      provider: 'gemini',
      data: {
        type: 'thought_signature',
        signature: recordedSignature,
        functionCallId: 'call_27db36357f594e73b557ec8f70da9e87',
      },
    });
    expect(camelKeys(server.requests[0]!.body)).toMatchObject({ contents: camelKeys(first.contents) });

    const h2 = [...history, assistantFrom(r1), ...toolResultsOf(second)];
    const r2 = await model.generate(request(h2, tools));
    expect(r2.stopReason).toBe('tool_use');
    expect(r2.toolCalls).toEqual([
      { id: 'call_97666b91d4c14f44b94ab69dded4ab10', name: 'pelican_name_generator', args: {} },
    ]);
    expect(r2.reasoning).toBeUndefined();
    expect(camelKeys((server.requests[1]!.body as Json).contents)).toEqual(camelKeys(second.contents));

    const h3 = [...h2, assistantFrom(r2), ...toolResultsOf(third)];
    const r3 = await model.generate(request(h3, tools));
    expect(r3.stopReason).toBe('end_turn');
    expect(r3.text).toBe('How about Charles and Sammy?');
    expect(r3.usage).toEqual({ input: 137, output: 6, cached: 0, reasoning: 0 });
    expect(camelKeys((server.requests[2]!.body as Json).contents)).toEqual(camelKeys(third.contents));
  });

  it(`${name}: a real run() sends the recorded second and third requests`, async () => {
    server = await startWireServer(sequence(turn(0), turn(1), turn(2)));
    const second = extracted('1.request.json') as Json;
    const third = extracted('2.request.json') as Json;
    const results = new Map(
      [...toolResultsOf(second), ...toolResultsOf(third)].map((message) => [
        message.toolCallId,
        message.content,
      ]),
    );
    const ids = ['call_27db36357f594e73b557ec8f70da9e87', 'call_97666b91d4c14f44b94ab69dded4ab10'];
    const pelicanNames = tool({
      name: 'pelican_name_generator',
      description: 'the recorded pelican_name_generator tool',
      input: z.looseObject({}),
      execute: (_args, context) => results.get(context.callId) ?? `no recorded result for ${context.callId}`,
    });
    const agent = defineAgent({
      name: 'recorded',
      instructions: '',
      model: gemini('gemini-2.5-flash', { apiKey: 'k', baseURL: server.url, generateId: () => ids.shift()! }),
      tools: [pelicanNames],
    });
    const result = await run(agent, 'Two names for a pet pelican');
    expect(result).toMatchObject({
      status: 'completed',
      text: 'How about Charles and Sammy?',
      toolCallCount: 2,
    });
    expect(server.requests).toHaveLength(3);
    expect(camelKeys((server.requests[1]!.body as Json).contents)).toEqual(camelKeys(second.contents));
    expect(camelKeys((server.requests[2]!.body as Json).contents)).toEqual(camelKeys(third.contents));
  });

  it('native-stream-function-call-finish-STOP.chunks.jsonl: the call in chunk 1, STOP in chunk 2 -> tool_use', async () => {
    server = await startWireServer(
      sequence({
        sse: jsonLinesToSse(readText(dir!, 'gemini/native-stream-function-call-finish-STOP.chunks.jsonl')),
      }),
    );
    const model = gemini('gemini-3-pro-preview', {
      apiKey: 'k',
      baseURL: server.url,
      generateId: () => 'call_x',
    });
    const response = await model.generate(
      request([{ role: 'user', content: 'Weather in San Francisco?' }], []),
    );
    expect(response.stopReason).toBe('tool_use');
    expect(response.rawStopReason).toBe('STOP');
    expect(response.text).toBe('');
    expect(response.toolCalls).toEqual([
      { id: 'call_x', name: 'weather', args: { location: 'San Francisco' } },
    ]);
    expect(response.usage).toEqual({ input: 29, output: 60, cached: 0, reasoning: 45 });
    expect(response.reasoning).toEqual([
      {
        provider: 'gemini',
        data: {
          type: 'thought_signature',
          signature: expect.stringMatching(/^EqUCCqICAb4/),
          functionCallId: 'call_x',
        },
      },
    ]);
  });

  it('native-nonstream-function-call-finish-STOP.json (derived: one chunk): tool_use with its signature', async () => {
    const body = readJson(dir!, 'gemini/native-nonstream-function-call-finish-STOP.json');
    server = await startWireServer(sequence({ sse: jsonArrayToSse([body]) }));
    const model = gemini('gemini-3-pro-preview', {
      apiKey: 'k',
      baseURL: server.url,
      generateId: () => 'call_y',
    });
    const response = await model.generate(
      request([{ role: 'user', content: 'Weather in San Francisco?' }], []),
    );
    expect(response.stopReason).toBe('tool_use');
    expect(response.toolCalls).toEqual([
      { id: 'call_y', name: 'weather', args: { location: 'San Francisco' } },
    ]);
    expect(response.usage).toEqual({ input: 29, output: 908, cached: 0, reasoning: 893 });
    expect(response.raw).toMatchObject({ finishReason: 'STOP', responseId: 'm36LaZGyCLz1xs0PtNSB-QU' });
  });
});
