import type * as TroupeDist from '../../dist/index.js';
import type { ModelProvider, ModelRequest, ModelResponse, RunOptions } from '../../dist/index.js';
// The zod that Troupe itself resolves (the root's node_modules), not the bench's own copy: zod is a peer dependency,
// so a user's process holds one copy of it. With the bench's copy beside Troupe's, the process would load zod twice;
// the second copy's code and objects move the process's first full collection, and its marking,
// into the window after 50 warm-up runs that W1 measures.
import { z } from '../../node_modules/zod/index.js';
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

/**
 * The parts of Troupe's root entry the adapter calls. The adapter takes them as a module so that the same code
 * measures this tree's build and another build of Troupe (an older commit's dist/, see troupe-baseline.ts): what it
 * calls and reads (`defineAgent`, `tool`, `run`, `stream`, a result's `status`, `stopReason` and `text`, a `delta`
 * event's `type`, the model provider's request and response) has the same shape in both.
 */
export type TroupeModule = Pick<typeof TroupeDist, 'defineAgent' | 'run' | 'stream' | 'tool'>;

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

/** Builds the scenario's agent with the given Troupe module and runs it through `run()` and `stream()`. */
export function prepareTroupeWith(troupe: TroupeModule, name: string, scenario: Scenario): TroupeRunner {
  const agent = troupe.defineAgent({
    name: 'bench',
    instructions: 'Use the tool, then answer.',
    model: benchModel(scenario),
    tools: [
      troupe.tool({
        name: toolName,
        description: toolDescription,
        input: z.object({ step: z.number(), k: z.number() }),
        execute: (args) => executeStep(scenario, args),
      }),
    ],
    limits: { maxSteps: scenario.toolSteps + 1, maxToolCallsPerTool: null },
  });
  const runWith = async (input: string, options: RunOptions): Promise<Outcome> => {
    const result = await troupe.run(agent, input, options);
    if (result.status !== 'completed') throw new Error(`${name}: run ended ${result.stopReason}`);
    return { text: result.text, deltas: 0 };
  };
  return {
    run: (input) => runWith(input, {}),
    runWith,
    stream: async (input) => {
      const s = troupe.stream(agent, input);
      let deltas = 0;
      for await (const event of s) if (event.type === 'delta') deltas++;
      const result = await s.result;
      if (result.status !== 'completed') throw new Error(`${name}: run ended ${result.stopReason}`);
      return { text: result.text, deltas };
    },
  };
}

/** A bench framework that measures the given Troupe module. */
export function troupeFramework(name: string, troupe: TroupeModule): Framework {
  return { name, prepare: (scenario) => prepareTroupeWith(troupe, name, scenario) };
}
