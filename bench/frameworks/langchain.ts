import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, AIMessageChunk, type BaseMessage } from '@langchain/core/messages';
import { ChatGenerationChunk, type ChatResult } from '@langchain/core/outputs';
import { createAgent, tool } from 'langchain';
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

function turnOf(scenario: Scenario, messages: BaseMessage[]): Turn {
  let results = 0;
  for (const message of messages) if (message.getType() === 'tool') results++;
  return nextTurn(scenario, results);
}

/** A fake tool-calling chat model: langchain's own base class, answering from the scenario. */
class BenchChatModel extends BaseChatModel {
  scenario: Scenario;
  constructor(scenario: Scenario) {
    super({});
    this.scenario = scenario;
  }

  _llmType(): string {
    return 'bench';
  }

  // createAgent binds the tools; the scripted turns do not depend on them.
  bindTools(): this {
    return this;
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    modelHooks.onCall?.();
    await modelLatency(this.scenario);
    const turn = turnOf(this.scenario, messages);
    const message =
      turn.kind === 'tools'
        ? new AIMessage({
            content: '',
            tool_calls: turn.calls.map((call) => ({
              id: call.id,
              name: call.name,
              args: call.args,
              type: 'tool_call' as const,
            })),
          })
        : new AIMessage({ content: turn.text });
    return { generations: [{ text: turn.kind === 'text' ? turn.text : '', message }] };
  }

  async *_streamResponseChunks(
    messages: BaseMessage[],
    _options: this['ParsedCallOptions'],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    modelHooks.onCall?.();
    await modelLatency(this.scenario);
    const turn = turnOf(this.scenario, messages);
    if (turn.kind === 'tools') {
      yield new ChatGenerationChunk({
        text: '',
        message: new AIMessageChunk({
          content: '',
          tool_call_chunks: turn.calls.map((call, index) => ({
            id: call.id,
            name: call.name,
            args: JSON.stringify(call.args),
            index,
            type: 'tool_call_chunk' as const,
          })),
        }),
      });
      return;
    }
    const pieces = turn.pieces.length > 0 ? turn.pieces : [turn.text];
    for (const piece of pieces) {
      yield new ChatGenerationChunk({ text: piece, message: new AIMessageChunk({ content: piece }) });
      await runManager?.handleLLMNewToken(piece);
    }
  }
}

export const langchain: Framework = {
  name: 'langchain',
  prepare: (scenario) => {
    const step = tool((args: { step: number; k: number }) => executeStep(scenario, args), {
      name: toolName,
      description: toolDescription,
      schema: z.object({ step: z.number(), k: z.number() }),
    });
    const agent = createAgent({
      model: new BenchChatModel(scenario),
      tools: [step],
      systemPrompt: 'Use the tool, then answer.',
    });
    // LangGraph counts graph super-steps: two per tool turn (model, tools) plus the final model call, plus slack.
    const recursionLimit = 2 * scenario.toolSteps + 5;
    return {
      run: async (input) => {
        const state = await agent.invoke(
          { messages: [{ role: 'user', content: input }] },
          { recursionLimit },
        );
        const last = state.messages[state.messages.length - 1];
        return { text: String(last?.content ?? ''), deltas: 0 };
      },
      stream: async (input) => {
        const events = await agent.stream(
          { messages: [{ role: 'user', content: input }] },
          { recursionLimit, streamMode: 'messages' },
        );
        let deltas = 0;
        let text = '';
        for await (const [chunk, metadata] of events) {
          const node = (metadata as { langgraph_node?: string }).langgraph_node;
          if (node === 'model_request' || node === 'agent' || node === 'model') {
            if (typeof chunk.content === 'string' && chunk.content !== '') {
              deltas++;
              text += chunk.content;
            }
          }
        }
        return { text, deltas };
      },
    };
  },
};
