import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { z } from 'zod';
import {
  type Agent,
  ConfigError,
  defineAgent,
  type ModelProvider,
  type RunEvent,
  type RunResult,
  stream,
  tool,
} from '../../src/index.ts';
import { openai } from '../../src/providers/index.ts';
import { type Cassette, CassetteMismatchError } from '../../src/testing/cassette.ts';
import { cassetteModel } from '../../src/testing/cassette-model.ts';
import { recordingModel } from '../../src/testing/recording-model.ts';
import { replayModel } from '../../src/testing/replay-model.ts';
import { textStream, toolCallStream } from '../fixtures/wire/openai-chat.ts';
import { sequence, startWireServer, type WireReply, type WireServer } from '../support/wire-server.ts';

const apiKey = 'sk-test-0123456789abcdefghijklmnop';
const userSecret = 'sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'troupe-cassettes-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const servers: WireServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function realModel(...replies: WireReply[]): Promise<{ model: ModelProvider; server: WireServer }> {
  const server = await startWireServer(sequence(...replies));
  servers.push(server);
  const model = openai('gpt-test', {
    apiKey,
    baseURL: `${server.url}/v1`,
    generateId: () => 'gen_1',
    sleep: async () => {},
  });
  return { model, server };
}

const weather = tool({
  name: 'weather',
  description: 'Weather in a city',
  input: z.object({ city: z.string() }),
  execute: ({ city }) => `${city}: sunny, 21°C`,
});

function forecaster(model: ModelProvider, instructions = 'You forecast.'): Agent<undefined> {
  return defineAgent({ name: 'forecaster', instructions, model, tools: [weather] });
}

const question = `Weather in Paris? (my key is ${userSecret})`;

async function runCollecting(
  agent: Agent<undefined>,
): Promise<{ result: RunResult<undefined>; events: RunEvent[] }> {
  const running = stream(agent, question, { sessionId: 'cassette', clock: new SimulatedClock() });
  const events: RunEvent[] = [];
  for await (const event of running) events.push(event);
  return { result: await running.result, events };
}

const recordedReplies = (): WireReply[] => [
  { sse: toolCallStream([{ id: 'call_1', name: 'weather', args: ['{"ci', 'ty": "Paris"}'] }]) },
  { sse: textStream(['It is ', 'sunny in Paris.']) },
];

describe('recordingModel and replayModel', () => {
  it('record a run against the real SDK, then replay it offline with the same result and events', async () => {
    const cassette = join(dir, 'weather.json');
    const { model, server } = await realModel(...recordedReplies());
    const recorded = await runCollecting(forecaster(recordingModel(model, { cassette })));
    expect(recorded.result.stopReason).toBe('completed');
    expect(recorded.result.text).toBe('It is sunny in Paris.');
    expect(server.requests).toHaveLength(2);
    await server.close();

    const text = readFileSync(cassette, 'utf8');
    const file = JSON.parse(text) as Cassette;
    expect(file).toMatchObject({ version: 1, provider: 'openai-chat', model: 'gpt-test' });
    expect(file.interactions).toHaveLength(2);
    expect(file.interactions[0]?.deltas.length).toBeGreaterThan(1);
    // Never the provider's configuration, never a secret.
    expect(text).not.toContain(apiKey);
    expect(text).not.toContain(userSecret);
    expect(text).not.toContain(server.url);
    expect(text).toContain('my key is [redacted]');
    expect(text).not.toContain('"raw"');

    const replay = replayModel(cassette);
    const replayed = await runCollecting(forecaster(replay));
    expect(replayed.result).toEqual(recorded.result);
    expect(replayed.events).toEqual(recorded.events);
    expect(replayed.events.filter((event) => event.type === 'delta').length).toBeGreaterThan(1);
    expect(replay.calls).toBe(2);
    expect(() => replay.assertReplayed()).not.toThrow();
  });

  it('fail with a path-based diff when the agent drifts from the recording', async () => {
    const cassette = join(dir, 'drift.json');
    const { model } = await realModel(...recordedReplies());
    await runCollecting(forecaster(recordingModel(model, { cassette })));

    const replay = replayModel(cassette);
    const { result } = await runCollecting(forecaster(replay, 'You forecast, briefly.'));
    expect(result.stopReason).toBe('error');
    expect(result.error?.code).toBe('cassette_mismatch');
    expect(replay.mismatches).toHaveLength(1);
    const mismatch = replay.mismatches[0] as CassetteMismatchError;
    expect(mismatch.call).toBe(1);
    expect(mismatch.differences).toEqual([
      { path: 'messages[0].content', expected: 'You forecast.', actual: 'You forecast, briefly.' },
    ]);
    expect(mismatch.message).toContain('Model call 1 differs from what the cassette');
    expect(mismatch.message).toContain(
      '  messages[0].content: expected "You forecast." got "You forecast, briefly."',
    );
    expect(result.error?.message).toBe(mismatch.message);
    expect(() => replay.assertReplayed()).toThrow(CassetteMismatchError);

    // Ignored fields are left out of the comparison.
    const lenient = replayModel(cassette, { ignore: ['messages[0].content'] });
    expect((await runCollecting(forecaster(lenient, 'You forecast, briefly.'))).result.stopReason).toBe(
      'completed',
    );

    // A changed tool shows where it changed; an agent that stops earlier leaves recorded calls unplayed.
    const changedTool = tool({
      name: 'weather',
      description: 'Weather forecast',
      input: z.object({ city: z.string() }),
      execute: () => 'x',
    });
    const other = replayModel(cassette);
    await runCollecting(
      defineAgent({ name: 'forecaster', instructions: 'You forecast.', model: other, tools: [changedTool] }),
    );
    expect(other.mismatches[0]?.message).toContain(
      'tools[0].description: expected "Weather in a city" got "Weather forecast"',
    );
    const partial = replayModel(cassette);
    const noTools = await runCollecting(
      defineAgent({ name: 'forecaster', instructions: 'You forecast.', model: partial }),
    );
    expect(noTools.result.error?.message).toMatch(/tools\[0\]: expected \{"name":"weather"/);
  });

  it('replay recorded errors as the same ModelError, and refuse calls past the recording', async () => {
    const cassette = join(dir, 'errors.json');
    const { model } = await realModel({
      status: 400,
      body: { error: { message: 'bad tool schema', type: 'invalid_request_error' } },
    });
    const recorded = await runCollecting(forecaster(recordingModel(model, { cassette })));
    expect(recorded.result.error?.code).toBe('model_bad_request');
    const replayed = await runCollecting(forecaster(replayModel(cassette)));
    expect(replayed.result).toEqual(recorded.result);

    const short: Cassette = { ...(JSON.parse(readFileSync(join(dir, 'weather.json'), 'utf8')) as Cassette) };
    short.interactions = short.interactions.slice(0, 1);
    const { result } = await runCollecting(forecaster(replayModel(short)));
    expect(result.error?.message).toContain(
      'Model call 2 was not recorded: the cassette holds 1 call(s), all replayed.',
    );
  });

  it('refuse a file that is not a cassette', () => {
    expect(() => replayModel(join(dir, 'missing.json'))).toThrow(ConfigError);
    expect(() => replayModel({ version: 2 } as unknown as Cassette)).toThrow(/is not a troupe cassette/);
  });
});

describe('cassetteModel', () => {
  afterEach(() => {
    delete process.env.TROUPE_CASSETTES;
  });

  it('records when the file is missing and a provider is given, replays once it exists', async () => {
    const cassette = join(dir, 'auto', 'weather.json');
    const { model, server } = await realModel(...recordedReplies());
    const first = cassetteModel(cassette, model);
    expect(first.mode).toBe('record');
    const recorded = await runCollecting(forecaster(first));
    await server.close();
    expect(existsSync(cassette)).toBe(true);
    const second = cassetteModel(cassette, model);
    expect(second.mode).toBe('replay');
    expect((await runCollecting(forecaster(second))).result).toEqual(recorded.result);
  });

  it('follows TROUPE_CASSETTES, and says what is missing', async () => {
    const missing = join(dir, 'nowhere.json');
    expect(() => cassetteModel(missing)).toThrow(/does not exist and no real provider was given/);
    process.env.TROUPE_CASSETTES = 'replay';
    const { model } = await realModel();
    expect(() => cassetteModel(missing, model)).toThrow(/TROUPE_CASSETTES=replay forbids recording/);
    process.env.TROUPE_CASSETTES = 'record';
    expect(() => cassetteModel(join(dir, 'weather.json'))).toThrow(/needs the real provider/);
    expect(cassetteModel(join(dir, 'rerecord.json'), model).mode).toBe('record');
    process.env.TROUPE_CASSETTES = 'sometimes';
    expect(() => cassetteModel(missing, model)).toThrow(/TROUPE_CASSETTES must be record, replay or auto/);
  });
});
