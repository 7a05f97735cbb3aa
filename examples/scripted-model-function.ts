import { defineAgent, run, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { z } from 'zod';

const weather = tool({
  name: 'weather',
  description: 'Current weather in a city',
  input: z.object({ city: z.string() }),
  execute: ({ city }) => `${city}: sunny, 21°C`,
});

// Each turn is computed from the request: call the tool first, then answer with what it returned.
const model = scriptedModel((request) => {
  const last = request.messages.at(-1);
  if (last?.role === 'tool') return { text: `It is ${last.content.split(': ')[1]}.` };
  return { toolCalls: [{ name: 'weather', args: { city: 'Paris' } }], stopReason: 'tool_use' };
});

const agent = defineAgent({ name: 'forecaster', instructions: 'Answer briefly.', model, tools: [weather] });
const result = await run(agent, 'Weather in Paris?');
console.log(result.text); // It is sunny, 21°C.
console.log(model.requests[0]?.messages.map((message) => message.role)); // [ 'system', 'user' ]
console.log(model.requests[1]?.messages.map((message) => message.role)); // [ 'system', 'user', 'assistant', 'tool' ]
