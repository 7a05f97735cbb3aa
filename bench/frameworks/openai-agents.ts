import {
  Agent,
  type AgentInputItem,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type protocol,
  run,
  setTracingDisabled,
  tool,
  Usage,
} from '@openai/agents';
import { z } from 'zod';
import {
  executeStep,
  type Framework,
  modelHooks,
  modelLatency,
  nextTurn,
  type Scenario,
  type Turn,
  toolDescription,
  toolName,
} from '../scenario.ts';

// No API key and no network in a benchmark: tracing would try to export spans.
setTracingDisabled(true);

type OutputItem = protocol.StreamEventResponseCompleted['response']['output'][number];

function turnOf(scenario: Scenario, request: ModelRequest): Turn {
  let results = 0;
  if (Array.isArray(request.input)) {
    for (const item of request.input as AgentInputItem[]) if (item.type === 'function_call_result') results++;
  }
  return nextTurn(scenario, results);
}

function outputOf(turn: Turn): OutputItem[] {
  if (turn.kind === 'tools') {
    return turn.calls.map((call) => ({
      type: 'function_call' as const,
      callId: call.id,
      name: call.name,
      status: 'completed' as const,
      arguments: JSON.stringify(call.args),
    }));
  }
  return [
    {
      type: 'message' as const,
      role: 'assistant' as const,
      status: 'completed' as const,
      content: [{ type: 'output_text' as const, text: turn.text }],
    },
  ];
}

let responseIds = 0;

/** A custom Model (the documented way to plug any backend into @openai/agents) playing the scenario. */
class BenchModel implements Model {
  readonly scenario: Scenario;
  constructor(scenario: Scenario) {
    this.scenario = scenario;
  }

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    modelHooks.onCall?.();
    await modelLatency(this.scenario);
    const turn = turnOf(this.scenario, request);
    return {
      usage: new Usage({ requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 }),
      output: outputOf(turn),
      responseId: `r${responseIds++}`,
    };
  }

  async *getStreamedResponse(request: ModelRequest): AsyncIterable<protocol.StreamEvent> {
    modelHooks.onCall?.();
    await modelLatency(this.scenario);
    const turn = turnOf(this.scenario, request);
    yield { type: 'response_started' as const };
    if (turn.kind === 'text')
      for (const delta of turn.pieces) yield { type: 'output_text_delta' as const, delta };
    yield {
      type: 'response_done' as const,
      response: {
        id: `r${responseIds++}`,
        usage: { requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 },
        output: outputOf(turn),
      },
    };
  }
}

export const openaiAgents: Framework = {
  name: 'openai-agents',
  prepare: (scenario) => {
    const agent = new Agent({
      name: 'bench',
      instructions: 'Use the tool, then answer.',
      model: new BenchModel(scenario),
      tools: [
        tool({
          name: toolName,
          description: toolDescription,
          parameters: z.object({ step: z.number(), k: z.number() }),
          execute: (args) => executeStep(scenario, args),
        }),
      ],
    });
    const maxTurns = scenario.toolSteps + 1;
    return {
      run: async (input) => {
        const result = await run(agent, input, { maxTurns });
        return { text: String(result.finalOutput), deltas: 0 };
      },
      stream: async (input) => {
        const result = await run(agent, input, { maxTurns, stream: true });
        let deltas = 0;
        for await (const event of result) {
          if (event.type === 'raw_model_stream_event' && event.data.type === 'output_text_delta') deltas++;
        }
        await result.completed;
        return { text: String(result.finalOutput), deltas };
      },
    };
  },
};
