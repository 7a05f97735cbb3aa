import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Agent } from '../../src/agent/define-agent.ts';
import type { AgentLimits } from '../../src/core/limits.ts';
import type { AgentGuardrailOptions } from '../../src/guardrails/guardrail.ts';
import { defineAgent, run, tool } from '../../src/index.ts';
import { agentPaths, expectPath } from '../../src/testing/agent-paths.ts';
import { pathCoverage } from '../../src/testing/path-coverage.ts';
import { scriptedModel } from '../../src/testing/scripted-model.ts';

const search = tool({
  name: 'search',
  description: 'Searches the docs',
  input: z.object({ q: z.string() }),
  execute: ({ q }) => `results for ${q}`,
});
const refund = tool({
  name: 'refund',
  description: 'Refunds an order',
  input: z.object({ order: z.string() }),
  needsApproval: true,
  execute: () => 'refunded',
});
const allow = () => ({ decision: 'allow' as const });
const billing = defineAgent({ name: 'billing', instructions: '', model: scriptedModel([]) });

interface Configuration {
  tools?: 'none' | 'search' | 'approval';
  output?: boolean;
  handoffs?: boolean;
  limits?: AgentLimits;
  guardrails?: AgentGuardrailOptions | 'none';
}

/** Guardrails of every kind the statechart checks, or a few. */
const guardrailKinds: Record<'every' | 'inputOnly' | 'outputOnly', AgentGuardrailOptions> = {
  every: {
    input: [
      { name: 'no-secrets', check: allow },
      { name: 'topic', check: allow, mode: 'parallel' as const },
    ],
    output: [
      { name: 'polite', check: allow },
      { name: 'live-pii', check: allow, streaming: true },
    ],
    toolOutput: [{ name: 'no-leaks', check: allow }],
  },
  inputOnly: { input: [{ name: 'no-secrets', check: allow }] },
  outputOnly: { output: [{ name: 'polite', check: allow }] },
};

function agentOf(configuration: Configuration, index: number): Agent<unknown> {
  const tools =
    configuration.tools === 'search' ? [search] : configuration.tools === 'approval' ? [refund, search] : [];
  const guardrails = configuration.guardrails;
  return defineAgent({
    name: `agent-${index}`,
    instructions: '',
    model: scriptedModel([]),
    tools,
    ...(configuration.output ? { output: z.object({ answer: z.string() }) } : {}),
    ...(configuration.handoffs ? { handoffs: [billing] } : {}),
    ...(configuration.limits ? { limits: configuration.limits } : {}),
    ...(guardrails && guardrails !== 'none' ? { guardrails } : {}),
  }) as Agent<unknown>;
}

/** Every combination of the options an agent's reach depends on (2 × 3 × 2 × 4 × 4 = 192 agents, a sample run). */
function configurations(): Configuration[] {
  const all: Configuration[] = [];
  const limitsOptions: (AgentLimits | undefined)[] = [
    undefined,
    { maxSteps: 1 },
    { finalAnswerOnMaxSteps: true, maxSteps: 2 },
    { finalAnswerOnToolLimits: false, maxDuplicateToolCalls: 1 },
  ];
  const guardrailOptions: (AgentGuardrailOptions | 'none')[] = [
    'none',
    guardrailKinds.every,
    guardrailKinds.inputOnly,
    guardrailKinds.outputOnly,
  ];
  for (const output of [false, true])
    for (const tools of ['none', 'search', 'approval'] as const)
      for (const handoffs of [false, true])
        for (const limits of limitsOptions)
          for (const guardrails of guardrailOptions)
            all.push({ output, tools, handoffs, ...(limits ? { limits } : {}), guardrails });
  return all;
}

/** A deterministic spread over the combinations: each option value appears, in varied company. */
function sample(all: readonly Configuration[], count: number): Configuration[] {
  const step = Math.floor(all.length / count);
  return Array.from(
    { length: count },
    (_, at) => all[(at * step + (at % step)) % all.length] as Configuration,
  );
}

describe('pathCoverage of every path agentPaths generates', () => {
  const chosen = sample(configurations(), 24);

  it('the sample spans every option', () => {
    expect(new Set(chosen.map((c) => c.tools))).toEqual(new Set(['none', 'search', 'approval']));
    expect(new Set(chosen.map((c) => c.output))).toEqual(new Set([false, true]));
    expect(new Set(chosen.map((c) => c.handoffs))).toEqual(new Set([false, true]));
    expect(new Set(chosen.map((c) => JSON.stringify(c.limits ?? null))).size).toBe(4);
    expect(new Set(chosen.map((c) => c.guardrails)).size).toBe(4);
  });

  for (const [index, configuration] of chosen.entries())
    it(`is complete for ${JSON.stringify({ ...configuration, guardrails: guardrailName(configuration.guardrails) })}`, async () => {
      const coverage = pathCoverage();
      const paths = agentPaths(agentOf(configuration, index), { coverage });
      for (const path of paths) expectPath(await path.run(), path);
      coverage.assertComplete();
      expect(coverage.report().transitions.total).toBeGreaterThan(0);
    });

  it('fails naming what was missed when one path is left out', async () => {
    const agent = agentOf({ output: true }, 0);
    const coverage = pathCoverage();
    const paths = agentPaths(agent, { coverage });
    const failing = paths.filter((path) => path.expected.stopReason === 'error');
    expect(failing.map((path) => path.name)).toEqual(['model fails ⇒ error']);
    const [left] = failing;
    for (const path of paths) if (path !== left) expectPath(await path.run(), path);
    expect(() => coverage.assertComplete()).toThrow(
      'the runs (6) left 1 of 9 states and 1 of 8 transitions of the agent statechart unreached:\n' +
        '  state agent.failed\n' +
        '  transition finalOutput.callingModel → failed on model error  (agent.running.finalOutput.callingModel --model.error[0])',
    );
    const report = coverage.report();
    expect(report.transitions.missed).toEqual(['finalOutput.callingModel → failed on model error']);
    expect(report.transitions.missedIds).toEqual(['agent.running.finalOutput.callingModel --model.error[0]']);
    // Ignoring what was missed, by words or by id, makes it complete.
    const ignoring = (ignore: string[]) => coverage.report({ ignore: ['agent.failed', ...ignore] }).complete;
    expect(ignoring(['finalOutput.callingModel → failed on model error'])).toBe(true);
    expect(ignoring(['agent.running.finalOutput.callingModel --*'])).toBe(true);
    expect(ignoring([])).toBe(false);
    if (left) expectPath(await left.run(), left);
    coverage.assertComplete();
  });

  it('an agent without an output schema is not asked to retry a decode, one without tools to run any', () => {
    const plain = pathCoverage();
    agentPaths(agentOf({}, 0), { coverage: plain });
    const plainReport = plain.report();
    const all = [...plainReport.transitions.missed, ...plainReport.states.missed];
    expect(all.some((name) => name.includes('decode retries left'))).toBe(false);
    expect(all.some((name) => name.includes('runningTools'))).toBe(false);
    expect(all.some((name) => name.includes('awaitingApproval') || name.includes('handingOff'))).toBe(false);
  });
});

function guardrailName(guardrails: Configuration['guardrails']): string {
  if (guardrails === undefined || guardrails === 'none') return 'none';
  return Object.entries(guardrailKinds).find(([, value]) => value === guardrails)?.[0] ?? 'custom';
}

describe('pathCoverage of runs of your own', () => {
  it('records the agent a session runs for an agent with handoffs (not the session around it)', async () => {
    const coverage = pathCoverage();
    const triage = defineAgent({
      name: 'triage',
      instructions: '',
      model: scriptedModel([{ text: 'hi' }]),
      handoffs: [billing],
    });
    const result = await run(triage, 'go', { inspect: coverage.inspect });
    expect(result.status).toBe('completed');
    expect(coverage.runs).toBe(1);
    expect(coverage.report().states.reached).toEqual(
      expect.arrayContaining(['agent.running.toolUse.callingModel', 'agent.completed']),
    );
  });
});
