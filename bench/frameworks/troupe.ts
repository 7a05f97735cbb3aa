import { z } from 'zod';
import {
  defineAgent,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type RunOptions,
  run,
  stream,
  tool,
} from '../../dist/index.js';
import {
  executeStep,
  type Framework,
  modelHooks,
  modelLatency,
  nextTurn,
  type Outcome,
  type Runner,
  type Scenario,
  toolDescription,
  toolName,
} from '../scenario.ts';

const usage = { input: 10, output: 5, cached: 0, reasoning: 0 };

/** A lean ModelProvider playing the scenario (the scripted model records requests; a benchmark need not). */
export function benchModel(scenario: Scenario): ModelProvider {
  return {
    provider: 'bench',
    model: 'bench',
    async generate(request: ModelRequest): Promise<ModelResponse> {
      modelHooks.onCall?.();
      await modelLatency(scenario);
      let results = 0;
      for (const message of request.messages) if (message.role === 'tool') results++;
      const turn = nextTurn(scenario, results);
      if (turn.kind === 'tools') return { text: '', toolCalls: turn.calls, stopReason: 'tool_use', usage };
      const onDelta = request.onDelta;
      if (onDelta) for (const piece of turn.pieces) onDelta({ type: 'text', text: piece });
      return { text: turn.text, toolCalls: [], stopReason: 'end_turn', usage };
    },
  };
}

/** Troupe's runner, plus a run with options (W5 passes a resource manager). */
export interface TroupeRunner extends Runner {
  runWith(input: string, options: RunOptions): Promise<Outcome>;
}

export function prepareTroupe(scenario: Scenario): TroupeRunner {
  const agent = defineAgent({
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
  });
  const runWith = async (input: string, options: RunOptions): Promise<Outcome> => {
    const result = await run(agent, input, options);
    if (result.status !== 'completed') throw new Error(`troupe: run ended ${result.stopReason}`);
    return { text: result.text, deltas: 0 };
  };
  return {
    run: (input) => runWith(input, {}),
    runWith,
    stream: async (input) => {
      const s = stream(agent, input);
      let deltas = 0;
      for await (const event of s) if (event.type === 'delta') deltas++;
      const result = await s.result;
      if (result.status !== 'completed') throw new Error(`troupe: run ended ${result.stopReason}`);
      return { text: result.text, deltas };
    },
  };
}

export const troupe: Framework = { name: 'troupe', prepare: prepareTroupe };
