import { defineAgent, guardrail, tool } from 'troupe';
import { agentPaths, expectPath, pathCoverage, scriptedModel } from 'troupe/testing';
import { afterAll, describe, it } from 'vitest';
import { z } from 'zod';

const search = tool({
  name: 'search',
  description: 'Searches the knowledge base',
  input: z.object({ query: z.string() }),
  execute: ({ query }) => `3 articles about ${query}`,
});

const noIntranetLinks = guardrail({
  name: 'no-intranet-links',
  check: (_answer, { text }) =>
    text.includes('intranet.')
      ? { decision: 'block', message: 'links to the intranet' }
      : { decision: 'allow' },
});

const researcher = defineAgent({
  name: 'researcher',
  instructions: 'Search, then answer with a summary.',
  model: scriptedModel([]), // each path scripts its own model
  tools: [search],
  output: z.object({ summary: z.string() }),
  guardrails: { output: [noIntranetLinks] },
});

const coverage = pathCoverage();

describe('researcher: every way a run can end', () => {
  // Among them: `model answers → guardrail "no-intranet-links" blocks the output ⇒ guardrail_blocked`.
  for (const path of agentPaths(researcher, { coverage })) {
    it(path.name, async () => expectPath(await path.run(), path));
  }

  afterAll(() => {
    // Every state and transition these paths can reach for this agent was reached (the missed ones are listed in words).
    coverage.assertComplete();
  });
});
