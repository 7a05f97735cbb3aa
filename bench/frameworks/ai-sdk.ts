import { generateText, stepCountIs, streamText, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
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

type CallOptions = Parameters<MockLanguageModelV4['doGenerate']>[0];
type GenerateResult = Awaited<ReturnType<MockLanguageModelV4['doGenerate']>>;
type StreamPart =
  Awaited<ReturnType<MockLanguageModelV4['doStream']>>['stream'] extends ReadableStream<infer P> ? P : never;

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

/** Counts tool-result parts in an AI SDK (LanguageModelV4) prompt; Mastra sends the same prompt shape. */
export function turnOf(scenario: Scenario, options: CallOptions): Turn {
  let results = 0;
  for (const message of options.prompt) {
    if (message.role === 'tool')
      for (const part of message.content) if (part.type === 'tool-result') results++;
  }
  return nextTurn(scenario, results);
}

/** MockLanguageModelV4 (ai/test) answering from the scenario, in both the generate and the stream form. */
export function mockModel(scenario: Scenario): MockLanguageModelV4 {
  // The mock records every call it receives; a 40,000-call benchmark must not measure that list, so it is cleared.
  const forget = () => {
    model.doGenerateCalls.length = 0;
    model.doStreamCalls.length = 0;
  };
  const model: MockLanguageModelV4 = new MockLanguageModelV4({
    doGenerate: async (options): Promise<GenerateResult> => {
      forget();
      modelHooks.onCall?.();
      await modelLatency(scenario);
      const turn = turnOf(scenario, options);
      if (turn.kind === 'tools') {
        return {
          content: turn.calls.map((call) => ({
            type: 'tool-call' as const,
            toolCallId: call.id,
            toolName: call.name,
            input: JSON.stringify(call.args),
          })),
          finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
          usage,
          warnings: [],
        };
      }
      return {
        content: [{ type: 'text', text: turn.text }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage,
        warnings: [],
      };
    },
    doStream: async (options) => {
      forget();
      modelHooks.onCall?.();
      await modelLatency(scenario);
      const turn = turnOf(scenario, options);
      const parts: StreamPart[] = [{ type: 'stream-start', warnings: [] }];
      if (turn.kind === 'tools') {
        for (const call of turn.calls) {
          parts.push({
            type: 'tool-call',
            toolCallId: call.id,
            toolName: call.name,
            input: JSON.stringify(call.args),
          });
        }
        parts.push({ type: 'finish', usage, finishReason: { unified: 'tool-calls', raw: 'tool_calls' } });
      } else {
        parts.push({ type: 'text-start', id: 't' });
        const pieces = turn.pieces.length > 0 ? turn.pieces : [turn.text];
        for (const delta of pieces) parts.push({ type: 'text-delta', id: 't', delta });
        parts.push({ type: 'text-end', id: 't' });
        parts.push({ type: 'finish', usage, finishReason: { unified: 'stop', raw: 'stop' } });
      }
      let i = 0;
      const stream = new ReadableStream<StreamPart>({
        pull(controller) {
          const part = parts[i++];
          if (part) controller.enqueue(part);
          else controller.close();
        },
      });
      return { stream };
    },
  });
  return model;
}

export const aiSdk: Framework = {
  name: 'ai-sdk',
  prepare: (scenario) => {
    const model = mockModel(scenario);
    const tools = {
      [toolName]: tool({
        description: toolDescription,
        inputSchema: z.object({ step: z.number(), k: z.number() }),
        execute: (args) => executeStep(scenario, args),
      }),
    };
    const stopWhen = stepCountIs(scenario.toolSteps + 1);
    return {
      run: async (input) => {
        const result = await generateText({
          model,
          tools,
          stopWhen,
          system: 'Use the tool, then answer.',
          prompt: input,
        });
        return { text: result.text, deltas: 0 };
      },
      stream: async (input) => {
        const result = streamText({
          model,
          tools,
          stopWhen,
          system: 'Use the tool, then answer.',
          prompt: input,
        });
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
