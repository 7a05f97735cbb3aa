import { fileURLToPath } from 'node:url';
import { defineAgent, run, tool } from 'troupe';
import { openai } from 'troupe/providers';
import { cassetteModel, expectRun } from 'troupe/testing';
import { describe, it } from 'vitest';
import { z } from 'zod';

const weather = tool({
  name: 'weather',
  description: 'Current weather in a city',
  input: z.object({ city: z.string() }),
  execute: ({ city }) => `${city}: sunny, 21°C`,
});

// Records through the real API when the cassette is missing and a key is set (or TROUPE_CASSETTES=record);
// replays the file offline otherwise, as CI does. A request that differs from the recording fails the call
// with a CassetteMismatchError listing the differences by path.
const model = cassetteModel(
  fileURLToPath(new URL('./cassettes/weather.json', import.meta.url)),
  process.env.OPENAI_API_KEY ? openai('gpt-4o-mini') : undefined,
);

const forecaster = defineAgent({
  name: 'forecaster',
  instructions: 'Answer with the current weather. Use the weather tool.',
  model,
  tools: [weather],
});

describe('forecaster, on a recorded conversation', () => {
  it('asks for the weather in Paris and reports it', async () => {
    const result = await run(forecaster, 'What is the weather in Paris?');
    expectRun(result).toEndWith('completed').toHaveCalledTool('weather', { city: 'Paris' });
    if (model.mode === 'replay') model.assertReplayed();
  });
});
