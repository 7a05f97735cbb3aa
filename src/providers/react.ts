import { ConfigError } from '../core/errors.ts';
import type { JsonObject, JsonValue } from '../core/json.ts';
import type { AssistantMessage, Message, ReasoningBlock, ToolMessage } from '../core/messages.ts';
import {
  type ModelDelta,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  reactInvalidReplyTool,
  type ToolSpec,
} from '../core/model.ts';
import { findFinalAnswerStart, parseReactReply } from './react-parser.ts';

/**
 * The ReAct text strategy (Thought / Action / Observation in plain text) for models without native tool calling.
 *
 * `react(model)` is a ModelProvider around another one. When the loop offers tools, it sends none: it adds a
 * prompt listing them (name, description, JSON Schema) and asking for Thought / Action / Action Input or
 * Thought / Final Answer, renders earlier tool calls and results as Action / Observation text, and parses the
 * reply strictly (react-parser.ts) back into a tool call or a final answer. So the loop, its policies and its
 * events work unchanged.
 *
 * A malformed reply goes back to the model as an error, bounded by the loop's own policies: it is returned as a
 * call to the reserved tool `react_invalid_reply` with `{ error, reply }` as arguments. No agent has that tool,
 * so the tool runner answers it with an error result; on the next turn this wrapper shows the model its reply
 * and, as the Observation, the parse error. Each malformed reply is therefore one loop step and one tool call:
 * the step limit, the per-tool call cap and duplicate detection (the same malformed reply again) all bound it.
 */

/** The reserved tool name under which a malformed reply travels through the loop. */
export { reactInvalidReplyTool };

/** Marks our reasoning blocks: the Thought of a ReAct turn, kept to render the history back as ReAct text. */
export const reactProviderName = 'react';

/** The longest malformed reply kept in the `react_invalid_reply` arguments (and shown to the model again). */
const maxKeptReply = 8_000;

export interface ReactOptions {
  /** Ids for the tool calls parsed from replies. Default: `react_<uuid>`. */
  generateId?: (() => string) | undefined;
  /** Replaces the default instructions placed before the tool list. */
  instructions?: string | undefined;
}

const defaultInstructions = `You can use tools. To use a tool, reply in exactly this format and then stop:

Thought: <your reasoning about what to do next>
Action: <the name of one tool from the list below>
Action Input: <the tool's arguments as one JSON object matching its schema; {} if it takes none>

The tool's result will come back to you as "Observation: <result>". Use one tool per reply, and never write the Observation yourself.
When you can answer, reply in exactly this format:

Thought: <your reasoning>
Final Answer: <your answer>`;

/** The prompt that tells the model how to act and which tools it has. */
export function reactPrompt(tools: readonly ToolSpec[], instructions: string = defaultInstructions): string {
  const list = tools
    .map(
      (tool) =>
        `- ${tool.name}: ${tool.description || '(no description)'}\n  Arguments (JSON Schema): ${JSON.stringify(tool.parameters)}`,
    )
    .join('\n');
  return `${instructions}\n\nTools:\n${list}`;
}

interface ReactThought {
  type: 'react_thought';
  thought: string;
}

function thoughtBlock(thought: string): ReasoningBlock {
  const data: ReactThought & JsonObject = { type: 'react_thought', thought };
  const block: ReasoningBlock = { provider: reactProviderName, data };
  if (thought.length > 0) block.text = thought;
  return block;
}

function reactThoughtOf(message: AssistantMessage): string | undefined {
  for (const block of message.reasoning ?? []) {
    if (block.provider !== reactProviderName) continue;
    const data = block.data as Partial<ReactThought> | null;
    if (data && typeof data === 'object' && data.type === 'react_thought') return data.thought ?? '';
  }
  return undefined;
}

/** Reasoning of the underlying provider (for example Anthropic thinking), passed on; ours is rendered as text. */
function foreignReasoning(message: AssistantMessage): ReasoningBlock[] | undefined {
  const blocks = (message.reasoning ?? []).filter((block) => block.provider !== reactProviderName);
  return blocks.length > 0 ? blocks : undefined;
}

function argsText(args: JsonValue): string {
  return typeof args === 'string' ? args : JSON.stringify(args);
}

function invalidReplyParts(args: JsonValue): { error: string; reply: string } {
  const record = (typeof args === 'object' && args !== null && !Array.isArray(args) ? args : {}) as Record<
    string,
    JsonValue
  >;
  return {
    error: typeof record.error === 'string' ? record.error : 'The reply could not be parsed.',
    reply: typeof record.reply === 'string' ? record.reply : '',
  };
}

/**
 * The history as text turns the model understands: each tool call becomes an assistant turn with its Thought,
 * Action and Action Input, each result a user turn `Observation: ...`. Calls of the reserved tool show the
 * model its own malformed reply and the parse error. Messages without tool calls pass unchanged (a ReAct final
 * answer gets its Thought and "Final Answer:" label back).
 */
export function renderReactHistory(messages: readonly Message[], prompt: string | undefined): Message[] {
  const out: Message[] = [];
  const results = new Map<string, ToolMessage>();
  for (const message of messages) if (message.role === 'tool') results.set(message.toolCallId, message);
  const pushUser = (text: string) => {
    const last = out[out.length - 1];
    if (last?.role === 'user' && typeof last.content === 'string') {
      out[out.length - 1] = { role: 'user', content: `${last.content}\n\n${text}` };
    } else {
      out.push({ role: 'user', content: text });
    }
  };

  let prompted = prompt === undefined;
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        if (!prompted) {
          out.push({ role: 'system', content: `${message.content}\n\n${prompt}` });
          prompted = true;
        } else {
          out.push(message);
        }
        break;
      case 'user':
        if (typeof message.content === 'string') pushUser(message.content);
        else out.push(message);
        break;
      case 'tool':
        // Rendered right after the call it answers; a result with no call before it still reaches the model.
        if (
          !messages.some(
            (m) => m.role === 'assistant' && m.toolCalls?.some((c) => c.id === message.toolCallId),
          )
        ) {
          pushUser(`Observation: ${message.content}`);
        }
        break;
      case 'assistant': {
        const thought = reactThoughtOf(message);
        const foreign = foreignReasoning(message);
        const calls = message.toolCalls ?? [];
        if (calls.length === 0) {
          const content =
            thought === undefined
              ? message.content
              : `${thought ? `Thought: ${thought}\n` : ''}Final Answer: ${message.content}`;
          const rendered: AssistantMessage = { role: 'assistant', content };
          if (foreign) rendered.reasoning = foreign;
          if (message.agent !== undefined) rendered.agent = message.agent;
          out.push(rendered);
          break;
        }
        calls.forEach((call, index) => {
          let content: string;
          let observation: string;
          if (call.name === reactInvalidReplyTool) {
            const { error, reply } = invalidReplyParts(call.args);
            content = reply.length > 0 ? reply : '(an empty reply)';
            observation = `Error: your reply did not follow the format. ${error}`;
          } else {
            const said = index === 0 ? (thought ?? message.content) : '';
            content = `${said ? `Thought: ${said}\n` : ''}Action: ${call.name}\nAction Input: ${argsText(call.args)}`;
            const result = results.get(call.id);
            observation = `Observation: ${result ? result.content : '(no result was recorded)'}`;
          }
          const rendered: AssistantMessage = { role: 'assistant', content };
          if (index === 0 && foreign) rendered.reasoning = foreign;
          if (message.agent !== undefined) rendered.agent = message.agent;
          out.push(rendered);
          pushUser(observation);
        });
        break;
      }
    }
  }
  if (!prompted) out.unshift({ role: 'system', content: prompt as string });
  return out;
}

/**
 * Text deltas of a ReAct reply, re-labelled as they stream: everything before "Final Answer:" is the model's
 * reasoning (Thought, Action lines), the rest is the answer.
 */
class ReactDeltaSplitter {
  private seen = '';
  private emitted = 0;
  private answering = false;

  constructor(private readonly onDelta: (delta: ModelDelta) => void) {}

  push(delta: ModelDelta): void {
    if (delta.type === 'reasoning') {
      this.onDelta(delta);
      return;
    }
    // No tools are sent, so a tool-call delta can only be noise: the calls come from parsing the text.
    if (delta.type !== 'text') return;
    if (this.answering) {
      this.onDelta(delta);
      return;
    }
    this.seen += delta.text;
    const found = findFinalAnswerStart(this.seen);
    if ('answerStart' in found) {
      this.flushReasoning(found.markerStart);
      this.answering = true;
      const answer = this.seen.slice(found.answerStart);
      if (answer.length > 0) this.onDelta({ type: 'text', text: answer });
      return;
    }
    this.flushReasoning(found.safeEnd);
  }

  /** The reply is over: text held back in case it became "Final Answer:" was reasoning after all. */
  finish(): void {
    if (!this.answering) this.flushReasoning(this.seen.length);
  }

  private flushReasoning(end: number): void {
    if (end <= this.emitted) return;
    this.onDelta({ type: 'reasoning', text: this.seen.slice(this.emitted, end) });
    this.emitted = end;
  }
}

/** Wraps a model without native tool calling so it can use tools through ReAct text. */
export function react(model: ModelProvider, options: ReactOptions = {}): ModelProvider {
  const generateId = options.generateId ?? (() => `react_${crypto.randomUUID().replaceAll('-', '')}`);
  const instructions = options.instructions ?? defaultInstructions;

  async function generate(request: ModelRequest): Promise<ModelResponse> {
    if (request.tools.some((tool) => tool.name === reactInvalidReplyTool)) {
      throw new ConfigError(
        `"${reactInvalidReplyTool}" is reserved by the ReAct strategy for malformed replies; rename that tool.`,
      );
    }
    const acting = request.tools.length > 0;
    const messages = renderReactHistory(
      request.messages,
      acting ? reactPrompt(request.tools, instructions) : undefined,
    );
    const inner: ModelRequest = { ...request, messages, tools: [] };
    const onDelta = request.onDelta;
    let splitter: ReactDeltaSplitter | undefined;
    // Each forwarder is made in a local first: V8 allocates a function literal stored straight into a property in
    // the old generation, where it would keep the call's deltas alive until a full collection.
    let forward: ModelRequest['onDelta'];
    if (onDelta && acting) {
      const split = new ReactDeltaSplitter(onDelta);
      splitter = split;
      forward = (delta) => split.push(delta);
    } else if (onDelta) {
      forward = (delta) => {
        if (delta.type !== 'tool_call') onDelta(delta);
      };
    }
    if (forward) inner.onDelta = forward;
    const response = await model.generate(inner);
    splitter?.finish();
    if (!acting) return { ...response, toolCalls: [] };
    const interpreted = interpret(response, generateId);
    // A parsed Action reaches the event stream like a native call's argument stream, in one piece.
    const call = interpreted.toolCalls[0];
    if (onDelta && call && call.name !== reactInvalidReplyTool) {
      onDelta({
        type: 'tool_call',
        index: 0,
        id: call.id,
        name: call.name,
        argsDelta: JSON.stringify(call.args),
      });
    }
    return interpreted;
  }

  return { provider: model.provider, model: model.model, generate };
}

/** The underlying model's reply, read as a ReAct turn. */
function interpret(response: ModelResponse, generateId: () => string): ModelResponse {
  // A refusal or a filtered reply is reported as it is, not parsed.
  if (response.stopReason === 'refusal' || response.stopReason === 'content_filter') {
    return { ...response, toolCalls: [] };
  }
  const parsed = parseReactReply(response.text);
  const reasoning = [...(response.reasoning ?? []), thoughtBlock(parsed.thought)];
  const base: ModelResponse = { ...response, toolCalls: [], reasoning };
  switch (parsed.kind) {
    case 'final':
      return { ...base, text: parsed.answer, stopReason: response.stopReason ?? 'end_turn' };
    case 'action':
      return {
        ...base,
        text: '',
        toolCalls: [{ id: generateId(), name: parsed.tool, args: parsed.args }],
        stopReason: 'tool_use',
      };
    case 'error':
      // Cut off by the token limit: the loop's truncation handling applies, not a format complaint.
      if (response.stopReason === 'max_tokens') return { ...response, toolCalls: [] };
      return {
        ...base,
        text: '',
        toolCalls: [
          {
            id: generateId(),
            name: reactInvalidReplyTool,
            args: { error: parsed.error, reply: response.text.slice(0, maxKeptReply) },
          },
        ],
        stopReason: 'tool_use',
      };
  }
}
