import { defineAgent, tool } from 'troupe';
import { agentPaths, expectPath, pathCoverage, scriptedModel } from 'troupe/testing';
import { z } from 'zod';

const lookup = tool({
  name: 'lookup',
  description: 'Looks an order up',
  input: z.object({ order: z.string() }),
  execute: ({ order }) => `order ${order}: shipped`,
});
const support = defineAgent({
  name: 'support',
  instructions: 'Look the order up, then answer.',
  model: scriptedModel([]), // each path scripts its own model
  tools: [lookup],
});

const coverage = pathCoverage();
const paths = agentPaths(support, { coverage });
for (const path of paths) expectPath(await path.run(), path);
// Every state and transition these paths can reach for this agent was reached; what was missed is listed in words.
coverage.assertComplete();
console.log(`${paths.length} paths, ${coverage.report().transitions.total} transitions covered`);
