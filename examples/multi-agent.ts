/**
 * Troupe multi-agent example: a triage agent hands the conversation to one of two specialists; the support
 * specialist delegates research to a sub-agent (an agent used as a tool). Everything runs on scripted models, so it
 * needs no API key: `npm run example:multi` prints the session's events, who answered and the path taken, then a
 * follow-up turn on the same session, and shuts the system down.
 */

import { agentTool, createAgentSystem, defineAgent, type RunEvent, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { z } from 'zod';

const searchDocs = tool({
  name: 'search_docs',
  description: 'Searches the product documentation.',
  input: z.object({ query: z.string() }),
  execute: ({ query }) =>
    query.includes('export')
      ? 'Exports: Settings -> Data -> Export as CSV. Large exports arrive by email within 10 minutes.'
      : 'No matching page.',
});

const researcher = defineAgent({
  name: 'researcher',
  description: 'Looks facts up in the product documentation and reports them briefly.',
  instructions: 'Search the docs, then report what you found in two sentences.',
  model: scriptedModel([
    { toolCalls: [{ name: 'search_docs', args: { query: 'export data' } }], stopReason: 'tool_use' },
    {
      text: 'Exports are under Settings -> Data -> Export as CSV; large ones arrive by email within 10 minutes.',
    },
  ]),
  tools: [searchDocs],
});

const billing = defineAgent({
  name: 'billing',
  description: 'Refunds, invoices and payment problems.',
  instructions: 'You handle billing questions.',
  model: scriptedModel([{ text: 'I have refunded your last invoice.' }]),
});

const support = defineAgent({
  name: 'support',
  description: 'How-to questions about the product.',
  instructions: 'Answer how-to questions; ask the researcher when you need the docs.',
  model: scriptedModel([
    {
      text: 'Let me check the docs.',
      toolCalls: [{ name: 'researcher', args: { input: 'How does a user export their data?' } }],
      stopReason: 'tool_use',
    },
    { text: 'Go to Settings -> Data -> Export as CSV. Big exports come by email within 10 minutes.' },
    { text: 'You are welcome!' },
  ]),
  tools: [agentTool(researcher)],
});

const triage = defineAgent({
  name: 'triage',
  instructions: 'Route the user to billing or support. Do not answer yourself.',
  model: scriptedModel([
    {
      toolCalls: [{ name: 'transfer_to_support', args: { reason: 'how-to question about exports' } }],
      stopReason: 'tool_use',
    },
  ]),
  handoffs: [billing, support],
});

function show(event: RunEvent): void {
  const who = event.agent.padEnd(10);
  switch (event.type) {
    case 'run_start':
      console.log(`${who} run_start`);
      return;
    case 'handoff':
      console.log(
        `${who} handoff -> ${event.data.to} (${event.data.outcome}; path ${event.data.path.join(' -> ')})`,
      );
      return;
    case 'tool_call':
      console.log(`${who} tool_call ${event.data.name} ${JSON.stringify(event.data.args)}`);
      return;
    case 'tool_response':
      console.log(`${who} tool_response ${event.data.name}: ${event.data.contentPreview}`);
      return;
    case 'model_response':
      if (event.data.text !== '') console.log(`${who} says: ${event.data.text}`);
      return;
    case 'supervisor':
      console.log(`${who} supervisor: ${event.data.decision}`);
      return;
    case 'run_end':
      console.log(`${who} run_end ${event.data.status} (${event.data.stopReason})`);
      return;
    default:
      return;
  }
}

const system = createAgentSystem();
const session = system.spawn(triage, 'How do I export my data?');
for await (const event of session.events()) show(event);
const first = await session.result;
console.log(
  `\nAnswered by ${first.agent}; path ${first.path?.join(' -> ')}; ${first.modelCalls} model calls.\n`,
);

const followUp = await session.send('Thanks!');
for await (const event of session.events()) show(event);
console.log(`\nFollow-up answered by ${followUp.agent}: ${followUp.text}`);
console.log(`Sessions before shutdown: ${system.list().length}`);
await system.shutdown();
console.log(`Sessions after shutdown: ${system.list().length}`);
