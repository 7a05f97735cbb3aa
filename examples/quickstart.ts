/**
 * Troupe quick start: an agent with two tools and a typed final answer. Runs on the built-in scripted model, so it
 * needs no API key; `npm start` prints the streamed events and the result.
 */

import { defineAgent, type ModelProvider, stream, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { z } from 'zod';

const weather = tool({
  name: 'get_weather',
  description: 'Current weather for a city.',
  input: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, celsius: city === 'Paris' ? 18 : 24, sky: 'clear' }),
});

const convert = tool({
  name: 'to_fahrenheit',
  description: 'Converts a temperature from Celsius to Fahrenheit.',
  input: z.object({ celsius: z.number() }),
  execute: ({ celsius }) => Math.round((celsius * 9) / 5 + 32),
});

const Forecast = z.object({ city: z.string(), fahrenheit: z.number(), summary: z.string() });

/** The scripted model plays the turns a real model would: a tool call, two parallel tool calls, then answers. */
function offlineModel(): ModelProvider {
  return scriptedModel(
    [
      {
        text: 'I will look up the weather first.',
        toolCalls: [{ name: 'get_weather', args: { city: 'Paris' } }],
        stopReason: 'tool_use',
        usage: { input: 120, output: 18 },
      },
      {
        text: 'Now I convert, and check Lisbon for comparison.',
        toolCalls: [
          { name: 'to_fahrenheit', args: { celsius: 18 } },
          { name: 'get_weather', args: { city: 'Lisbon' } },
        ],
        stopReason: 'tool_use',
        usage: { input: 180, output: 30 },
      },
      {
        deltas: ['Paris is ', '64°F ', 'and clear.'],
        stopReason: 'end_turn',
        usage: { input: 240, output: 9 },
      },
      {
        text: '{"city":"Paris","fahrenheit":64,"summary":"Clear skies, 64°F."}',
        stopReason: 'end_turn',
        usage: { input: 260, output: 20 },
      },
    ],
    { streamToolCalls: true },
  );
}

/** A real provider when a key is set (needs troupe/providers), otherwise the scripted model. */
async function chooseModel(): Promise<{ model: ModelProvider; label: string }> {
  if (process.env.OPENAI_API_KEY || process.env.ANTHROPIC_API_KEY) {
    try {
      const providers = await import('troupe/providers');
      if (process.env.OPENAI_API_KEY) {
        const name = process.env.OPENAI_MODEL ?? 'gpt-5-mini';
        return { model: providers.openai(name), label: `OpenAI ${name} (OPENAI_API_KEY is set)` };
      }
      const name = process.env.ANTHROPIC_MODEL ?? 'claude-sonnet-4-6';
      return { model: providers.anthropic(name), label: `Anthropic ${name} (ANTHROPIC_API_KEY is set)` };
    } catch (error) {
      console.warn(`Could not load a real provider (${(error as Error).message}); using the scripted model.`);
    }
  }
  return { model: offlineModel(), label: 'the built-in scripted model (no API key set)' };
}

const { model, label } = await chooseModel();
console.log(`Model: ${label}\n`);

const agent = defineAgent({
  name: 'forecaster',
  instructions: 'You answer weather questions. Use the tools, then answer in one sentence.',
  model,
  tools: [weather, convert],
  output: Forecast,
  limits: { maxSteps: 6, toolTimeoutMs: 5_000 },
});

const run = stream(agent, 'What is the weather in Paris, in Fahrenheit?');
let midLine = false; // streamed text ends without a newline: the next line starts on its own
const line = (text: string) => {
  console.log(midLine ? `\n${text}` : text);
  midLine = false;
};
for await (const event of run) {
  switch (event.type) {
    case 'delta':
      process.stdout.write(event.data.content);
      midLine = true;
      break;
    case 'phase':
      line(`\n[${event.seq}] phase ${event.data.phase}.${event.data.state} (step ${event.data.step})`);
      break;
    case 'tool_call':
      line(`[${event.seq}] tool_call ${event.data.name}(${JSON.stringify(event.data.args)})`);
      break;
    case 'tool_response':
      line(`[${event.seq}] tool_response ${event.data.name} -> ${event.data.contentPreview}`);
      break;
    case 'usage':
      line(
        `[${event.seq}] usage +${event.data.usage.input + event.data.usage.output} tokens (run total ${event.data.cumulative.input + event.data.cumulative.output})`,
      );
      break;
    case 'error':
      line(`[${event.seq}] error ${event.data.type} (${event.data.code}): ${event.data.message}`);
      break;
    case 'run_end':
      line(`\n[${event.seq}] run_end ${event.data.status} / ${event.data.stopReason}`);
      break;
  }
}

const result = await run.result;
console.log('\nResult');
console.log({
  status: result.status,
  stopReason: result.stopReason,
  output: result.output,
  toolCallCount: result.toolCallCount,
  modelCalls: result.modelCalls,
  usage: result.usage,
  historyDelta: result.historyDelta.length,
  ...(result.error ? { error: result.error.message } : {}),
});
if (result.status !== 'completed') process.exitCode = 1;
