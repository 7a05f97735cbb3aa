import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent, run, tool } from '../../src/index.ts';
import { agentPaths, expectPath } from '../../src/testing/agent-paths.ts';
import { expectRun } from '../../src/testing/expect-run.ts';
import { pathCoverage } from '../../src/testing/path-coverage.ts';
import { scriptedModel } from '../../src/testing/scripted-model.ts';

const search = tool({
  name: 'search',
  description: 'Searches the docs',
  input: z.object({ q: z.string(), limit: z.number().int().min(1).max(10) }),
  execute: ({ q }) => `results for ${q}`,
});

const withSchema = defineAgent({
  name: 'researcher',
  instructions: 'Answer with JSON.',
  model: scriptedModel([]),
  tools: [search],
  output: z.object({ answer: z.string(), confidence: z.number() }),
  limits: { maxSteps: 3, maxDecodeRetries: 1, maxDuplicateToolCalls: 1, maxToolRetries: 1 },
});

describe('agentPaths', () => {
  const paths = agentPaths(withSchema);

  it("generates named paths from the agent's own configuration, each with a script and an expected ending", () => {
    expect(paths.length).toBeGreaterThan(10);
    expect(new Set(paths.map((path) => path.name)).size).toBe(paths.length);
    const endings = new Set(paths.map((path) => path.expected.stopReason));
    for (const reason of [
      'completed',
      'max_steps',
      'duplicate_tool_call',
      'decode_failed',
      'error',
      'aborted',
    ])
      expect(endings).toContain(reason);
    const simplest = paths.find((path) => path.name === 'model answers ⇒ completed');
    expect(simplest?.script).toEqual([
      expect.objectContaining({ text: JSON.stringify({ answer: 'value 1', confidence: 1 }) }),
    ]);
    expect(simplest?.expected).toEqual({
      stopReason: 'completed',
      status: 'completed',
      modelCalls: 1,
      state: 'completed',
    });
    // Tool calls carry arguments valid for the tool's schema.
    const call = paths.flatMap((path) => path.script).find((turn) => turn.toolCalls?.length)?.toolCalls?.[0];
    expect(search.input.safeParse(call?.args).success).toBe(true);
  });

  it('every path runs on the real runtime and ends as the statechart predicts, covering the statechart', async () => {
    const coverage = pathCoverage();
    const covered = agentPaths(withSchema, { coverage });
    for (const path of covered) {
      const result = await path.run();
      expectPath(result, path);
      expectRun(result).toHaveValidHistory();
    }
    expect(coverage.runs).toBe(covered.length);
    coverage.assertComplete();
  });

  it('honours limits given as options, and an agent without tools or schema', async () => {
    const plain = defineAgent({ name: 'plain', instructions: '', model: scriptedModel([]) });
    const plainPaths = agentPaths(plain);
    expect(plainPaths.every((path) => path.script.every((turn) => !turn.toolCalls?.length))).toBe(true);
    for (const path of plainPaths) expectPath(await path.run(), path);
    const short = agentPaths(withSchema, { limits: { maxSteps: 1 } });
    const stepLimited = short.filter((path) => path.expected.stopReason === 'max_steps');
    expect(stepLimited.length).toBeGreaterThan(0);
    expect(stepLimited.every((path) => path.expected.modelCalls === 1)).toBe(true);
    for (const path of stepLimited) expectPath(await path.run(), path);
  });

  it("keeps paths short for an agent with the default limits: at most 3 steps unless told 'agent'", () => {
    const roomy = defineAgent({ name: 'roomy', instructions: '', model: scriptedModel([]), tools: [search] });
    const roomyPaths = agentPaths(roomy);
    expect(Math.max(...roomyPaths.map((path) => path.expected.modelCalls))).toBeLessThanOrEqual(3 + 1 + 1);
    expect(roomyPaths.some((path) => path.expected.stopReason === 'max_steps')).toBe(true);
  });

  it('expectPath says what differed', async () => {
    const path = paths.find((candidate) => candidate.expected.stopReason === 'max_steps');
    if (!path) throw new Error('no max_steps path');
    const result = await run(
      defineAgent({ name: 'other', instructions: '', model: scriptedModel([{ text: 'hi' }]) }),
      'x',
    );
    expect(() => expectPath(result, path)).toThrow(
      /expected \{"stopReason":"max_steps".*the run gave \{"stopReason":"completed"/,
    );
  });

  it('refuses a tool the agent does not have', () => {
    expect(() => agentPaths(withSchema, { tool: 'nope' })).toThrow(/has no tool "nope"/);
  });
});

describe('pathCoverage', () => {
  it('lists the states and transitions a simple run never reached', async () => {
    const coverage = pathCoverage();
    const agent = defineAgent({ name: 'simple', instructions: '', model: scriptedModel([{ text: 'hi' }]) });
    await run(agent, 'go', { inspect: coverage.inspect });
    const report = coverage.report();
    expect(coverage.runs).toBe(1);
    expect(report.complete).toBe(false);
    expect(report.states.reached).toContain('agent.completed');
    expect(report.states.missed).toContain('agent.stopped');
    expect(() => coverage.assertComplete()).toThrow(
      /left \d+ of \d+ states and \d+ of \d+ transitions[\s\S]*state agent.stopped/,
    );
    const ignored = coverage.report({
      ignore: [...report.states.missed, ...report.transitions.missed.map((n) => n)],
    });
    expect(ignored.complete).toBe(true);
  });
});

describe('agentPaths of an agent with handoffs', () => {
  it('runs the paths of its own loop through the session a handoff agent runs in (no path hands off)', async () => {
    const billing = defineAgent({ name: 'billing', instructions: '', model: scriptedModel([]) });
    const triage = defineAgent({
      name: 'triage',
      instructions: '',
      model: scriptedModel([]),
      tools: [search],
      handoffs: [billing],
    });
    const paths = agentPaths(triage);
    expect(paths.length).toBeGreaterThan(5);
    expect(
      paths
        .flatMap((path) => path.script)
        .flatMap((turn) => turn.toolCalls ?? [])
        .every((call) => call.name === 'search'),
    ).toBe(true);
    for (const path of paths) expectPath(await path.run(), path);
  });
});

describe('agentPaths of an agent with guardrails', () => {
  const allow = () => ({ decision: 'allow' as const });
  const guarded = defineAgent({
    name: 'guarded',
    instructions: '',
    model: scriptedModel([]),
    tools: [search],
    output: z.object({ answer: z.string() }),
    guardrails: {
      input: [
        { name: 'no-secrets', check: allow },
        { name: 'topic', check: allow, mode: 'parallel' },
      ],
      output: [
        { name: 'polite', check: allow },
        { name: 'live-pii', check: allow, streaming: true },
      ],
      toolOutput: [{ name: 'no-leaks', check: allow }],
    },
    limits: { maxSteps: 2 },
  });

  it('adds a path where each stage blocks, naming the guardrail; every path runs and covers the guardrail states', async () => {
    const coverage = pathCoverage();
    const paths = agentPaths(guarded, { coverage });
    const blocked = paths.filter((path) => path.expected.guardrail !== undefined);
    expect(new Set(blocked.map((path) => path.expected.guardrail))).toEqual(
      new Set(['no-secrets', 'topic', 'polite', 'live-pii', 'no-leaks']),
    );
    expect(blocked.every((path) => path.expected.stopReason === 'guardrail_blocked')).toBe(true);
    expect(paths.find((path) => path.expected.guardrail === 'no-secrets')?.name).toBe(
      'guardrail "no-secrets" blocks the input ⇒ guardrail_blocked',
    );
    for (const path of paths) {
      const result = await path.run();
      expectPath(result, path);
      expectRun(result).toHaveValidHistory();
      if (path.expected.guardrail !== undefined)
        expect(result.guardrail).toMatchObject({
          name: path.expected.guardrail,
          message: 'blocked on the path',
        });
    }
    const report = coverage.report();
    expect(report.states.missed).toEqual([]);
    expect(report.states.reached).toEqual(
      expect.arrayContaining(['agent.running.checkingInput', 'agent.running.checkingOutput']),
    );
    const guardrailTransitions = [
      'agent.running.checkingInput --guardrails.done[0]',
      'agent.running.checkingOutput --guardrails.done[0]',
      'agent.running.toolUse.callingModel --guardrail.blocked[0]',
      'agent.running.toolUse.runningTools --tools.done[0]',
    ];
    expect(report.transitions.takenIds).toEqual(expect.arrayContaining(guardrailTransitions));
    expect(report.complete).toBe(true);
  });

  it('a guardrail that blocks for real fails the allow paths, saying which', async () => {
    const strict = defineAgent({
      name: 'strict',
      instructions: '',
      model: scriptedModel([]),
      guardrails: { input: [{ name: 'nothing', check: () => ({ decision: 'block', message: 'no' }) }] },
    });
    const path = agentPaths(strict).find(
      (candidate) => candidate.name === 'input guardrails allow → model answers ⇒ completed',
    );
    if (!path) throw new Error('no allow path');
    const result = await path.run();
    expect(() => expectPath(result, path)).toThrow(/"guardrail":"nothing"/);
  });
});

describe('pathCoverage of agents without guardrails', () => {
  it('leaves the guardrail states and transitions out', async () => {
    const coverage = pathCoverage();
    await run(
      defineAgent({ name: 'simple', instructions: '', model: scriptedModel([{ text: 'hi' }]) }),
      'go',
      {
        inspect: coverage.inspect,
      },
    );
    const report = coverage.report();
    const all = [...report.states.reached, ...report.states.missed];
    expect(all).not.toContain('agent.running.checkingInput');
    expect(all).not.toContain('agent.running.checkingOutput');
    expect(
      [...report.transitions.taken, ...report.transitions.missed].filter((name) =>
        name.includes('guardrail'),
      ),
    ).toEqual([]);
  });
});
