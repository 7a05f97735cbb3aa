import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { z } from 'zod';

type AgentConfig = ConstructorParameters<typeof Agent>[0];

import { executeStep, type Framework, toolDescription, toolName } from '../scenario.ts';
import { mockModel } from './ai-sdk.ts';

/** Mastra drives AI SDK models: the same MockLanguageModelV4 as the AI SDK row, so only the loop differs. */
export const mastra: Framework = {
  name: 'mastra',
  prepare: (scenario) => {
    const agent = new Agent({
      id: 'bench',
      name: 'bench',
      instructions: 'Use the tool, then answer.',
      // Mastra's types pin another patch of @ai-sdk/provider than ai@7's mock; the object is a valid V4 model.
      model: mockModel(scenario) as unknown as AgentConfig['model'],
      tools: {
        [toolName]: createTool({
          id: toolName,
          description: toolDescription,
          inputSchema: z.object({ step: z.number(), k: z.number() }),
          execute: (args: { step: number; k: number }) => executeStep(scenario, args),
        }),
      },
    });
    const maxSteps = scenario.toolSteps + 1;
    return {
      run: async (input) => {
        const result = await agent.generate(input, { maxSteps });
        return { text: result.text, deltas: 0 };
      },
      stream: async (input) => {
        const result = await agent.stream(input, { maxSteps });
        let deltas = 0;
        let text = '';
        for await (const delta of result.textStream) {
          deltas++;
          text += delta;
        }
        return { text, deltas };
      },
    };
  },
};
