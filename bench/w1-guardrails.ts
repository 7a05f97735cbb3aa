import { z } from 'zod';
import {
  type AgentGuardrailOptions,
  blockedPatterns,
  defineAgent,
  type Guardrail,
  llmJudge,
  type ModelProvider,
  run,
  tokenLimit,
  tool,
} from '../dist/index.js';
import { benchModel } from './frameworks/troupe.ts';
import { check, executeStep, expectedAnswer, type Scenario, toolDescription, toolName } from './scenario.ts';

/**
 * W1G: what guardrails add to W1 (10 tool steps + the answer, 0 ms model), Troupe only. Variants, each with one
 * input and one output guardrail of a built-in kind: tokenLimit (real tokenizer), blockedPatterns (two regexes),
 * llmJudge (a nested judge run on a model that answers at once), and all three kinds together; against W1 without
 * guardrails. The variants run interleaved in rounds in one process, so each round's baseline shares its load;
 * the added cost is the variant minus the baseline of the same round, per tool step (a run's input and output are
 * checked once per run, so per run it is ten times that).
 */

const scenario: Scenario = { toolSteps: 10, toolsPerTurn: 1, modelDelayMs: 0, toolDelayMs: 0, deltas: 0 };

/** A judge that allows at once: what a nested judge run costs, without a provider's latency. */
const judgeModel: ModelProvider = {
  provider: 'bench',
  model: 'judge',
  generate: async () => ({
    text: '{"decision":"allow","reason":"ok"}',
    toolCalls: [],
    stopReason: 'end_turn',
    usage: { input: 20, output: 8, cached: 0, reasoning: 0 },
  }),
};

const kinds: Record<string, (stage: string) => Guardrail> = {
  tokenLimit: (stage) => tokenLimit({ name: `tokens-${stage}` }),
  blockedPatterns: (stage) =>
    blockedPatterns([/\bpassword\b/i, /\b\d{3}-\d{2}-\d{4}\b/], { name: `patterns-${stage}` }),
  llmJudge: (stage) => llmJudge({ name: `judge-${stage}`, model: judgeModel, instructions: 'Block abuse.' }),
};

function guardrailsOf(names: readonly string[]): AgentGuardrailOptions {
  const of = (stage: string) => names.map((name) => (kinds[name] as (stage: string) => Guardrail)(stage));
  return { input: of('input'), output: of('output') };
}

const variants: Record<string, readonly string[]> = {
  none: [],
  tokenLimit: ['tokenLimit'],
  blockedPatterns: ['blockedPatterns'],
  llmJudge: ['llmJudge'],
  all: ['tokenLimit', 'blockedPatterns', 'llmJudge'],
};

function agentFor(names: readonly string[]) {
  return defineAgent({
    name: 'bench',
    instructions: 'Use the tool, then answer.',
    model: benchModel(scenario),
    tools: [
      tool({
        name: toolName,
        description: toolDescription,
        input: z.object({ step: z.number(), k: z.number() }),
        execute: (args) => executeStep(scenario, args),
      }),
    ],
    limits: { maxSteps: scenario.toolSteps + 1, maxToolCallsPerTool: null },
    ...(names.length > 0 ? { guardrails: guardrailsOf(names) } : {}),
  });
}

type BenchAgent = ReturnType<typeof agentFor>;

/**
 * Runs the agent W1-style for `ms`: wall µs per step, and this process's CPU µs per step (user + system), which a
 * shared machine's load inflates much less than wall time.
 */
async function usPerStep(
  agent: BenchAgent,
  ms: number,
  minRuns: number,
): Promise<{ wall: number; cpu: number }> {
  const started = performance.now();
  const cpu = process.cpuUsage();
  let runs = 0;
  while (runs < minRuns || performance.now() - started < ms) {
    const result = await run(agent, `task ${runs}`);
    if (result.status !== 'completed') throw new Error(`W1G: run ended ${result.stopReason}`);
    check(scenario, { text: result.text, deltas: 0 }, 'troupe');
    runs++;
  }
  const used = process.cpuUsage(cpu);
  const steps = runs * scenario.toolSteps;
  return { wall: ((performance.now() - started) * 1000) / steps, cpu: (used.user + used.system) / steps };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1] as number;
}

/**
 * One check of a guardrail alone (its `check` called directly on W1's input and answer, awaited when it returns a
 * promise), in µs: the part of a variant's added cost that is the check itself, without the machine's guardrail
 * states and events around it.
 */
async function usPerCheck(guardrail: Guardrail, ms: number): Promise<number> {
  const texts = ['task 1', expectedAnswer(scenario)];
  const info = {
    context: undefined,
    sessionId: 'bench',
    agent: 'bench',
    route: 'bench',
    turn: 1,
    stage: 'input' as const,
    signal: new AbortController().signal,
    partial: false,
  };
  const started = performance.now();
  let checks = 0;
  while (checks < 20 || performance.now() - started < ms) {
    const text = texts[checks % 2] as string;
    const verdict = guardrail.check(text, { ...info, text });
    const decided = verdict instanceof Promise ? await verdict : verdict;
    if (decided.decision !== 'allow') throw new Error(`W1G: ${guardrail.name} decided ${decided.decision}`);
    checks++;
  }
  return ((performance.now() - started) * 1000) / checks;
}

/**
 * Metrics (medians over rounds): `usPerStep@<variant>` and `addedUsPerStep@<variant>` (wall), the same in CPU
 * time (`cpuUsPerStep@`, `addedCpuUsPerStep@`), and `usPerCheck@<kind>` (one check of that built-in alone).
 */
export async function measureW1Guardrails(quick: boolean): Promise<Record<string, number>> {
  const agents = Object.fromEntries(Object.entries(variants).map(([name, kinds]) => [name, agentFor(kinds)]));
  // Many short rounds: each round's baseline shares its moment's load with the variants.
  const rounds = quick ? 5 : 15;
  const ms = quick ? 150 : 250;
  for (const agent of Object.values(agents)) await usPerStep(agent, quick ? 150 : 400, 10);
  const series = (prefix: string, withNone: boolean) =>
    new Map<string, number[]>(
      Object.keys(agents)
        .filter((name) => withNone || name !== 'none')
        .map((name) => [`${prefix}@${name}`, []]),
    );
  const collected = new Map<string, number[]>([
    ...series('usPerStep', true),
    ...series('addedUsPerStep', false),
    ...series('cpuUsPerStep', true),
    ...series('addedCpuUsPerStep', false),
  ]);
  for (let round = 0; round < rounds; round++) {
    const names = Object.keys(agents);
    const order = names.map((_, i) => names[(i + round) % names.length] as string);
    const figures: Record<string, { wall: number; cpu: number }> = {};
    for (const name of order) figures[name] = await usPerStep(agents[name] as BenchAgent, ms, 10);
    const none = figures.none as { wall: number; cpu: number };
    for (const name of names) {
      const { wall, cpu } = figures[name] as { wall: number; cpu: number };
      collected.get(`usPerStep@${name}`)?.push(wall);
      collected.get(`addedUsPerStep@${name}`)?.push(wall - none.wall);
      collected.get(`cpuUsPerStep@${name}`)?.push(cpu);
      collected.get(`addedCpuUsPerStep@${name}`)?.push(cpu - none.cpu);
    }
  }
  const metrics: Record<string, number> = { rounds };
  for (const [kind, make] of Object.entries(kinds)) {
    const guardrail = make('input');
    await usPerCheck(guardrail, quick ? 100 : 300);
    const values: number[] = [];
    for (let round = 0; round < rounds; round++) values.push(await usPerCheck(guardrail, quick ? 150 : 400));
    metrics[`usPerCheck@${kind}`] = median(values);
  }
  for (const [key, values] of collected) metrics[key] = median(values);
  return metrics;
}

/** Run alone: `node bench/w1-guardrails.ts [--quick]` (after `npm run build`); prints one JSON line like worker.ts. */
if (import.meta.main) {
  const metrics = await measureW1Guardrails(process.argv.includes('--quick'));
  process.stdout.write(`${JSON.stringify({ framework: 'troupe', workload: 'W1G', metrics })}\n`);
  process.exit(0);
}
