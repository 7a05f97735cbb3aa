import type { JsonValue } from './json.ts';

/** A call the model asked for. `args` is the parsed JSON arguments, or the raw text when it was not valid JSON. */
export interface ToolCall {
  id: string;
  name: string;
  args: JsonValue;
}

/** Part of a multimodal user message. Images are given by URL or as base64 data with a media type. */
export type ContentPart =
  | { type: 'text'; text: string }
  | {
      type: 'image';
      /** http(s) URL, or a `data:image/...;base64,` URL. */
      url: string;
      /** The image's media type, when the URL does not say (Gemini needs one for a URL it fetches). */
      mediaType?: string | undefined;
      detail?: 'low' | 'high' | 'auto' | undefined;
    }
  | { type: 'image'; data: string; mediaType: string; detail?: 'low' | 'high' | 'auto' | undefined };

/**
 * Provider-specific reasoning that must be sent back unchanged on the next turn (Anthropic thinking blocks with
 * their signatures, OpenAI reasoning items, Gemini thought signatures). Opaque to the loop.
 */
export interface ReasoningBlock {
  /** Which wire protocol produced it; other providers drop it when formatting history. */
  provider: string;
  /** Human-readable summary or thinking text, when the provider gives one. */
  text?: string;
  /** The exact payload to send back. */
  data: JsonValue;
}

export interface SystemMessage {
  role: 'system';
  content: string;
}

export interface UserMessage {
  role: 'user';
  content: string | ContentPart[];
}

export interface AssistantMessage {
  role: 'assistant';
  content: string;
  toolCalls?: ToolCall[];
  reasoning?: ReasoningBlock[];
  /** Which agent produced this message (handoffs put several agents in one conversation). */
  agent?: string;
}

export interface ToolMessage {
  role: 'tool';
  content: string;
  toolCallId: string;
  /** The tool's name; Gemini's function responses need it. */
  name?: string;
  isError?: boolean;
}

/** The provider-neutral conversation. A run never mutates the caller's array; it returns a new one. */
export type Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

export type Role = Message['role'];

/** What a user may pass as a run's input: plain text or multimodal parts. */
export type RunInput = string | ContentPart[];

export function userMessage(input: RunInput): UserMessage {
  return { role: 'user', content: input };
}

/** The text of the last user message: a run's input, as input guardrails read it. */
export function lastUserText(history: readonly Message[]): string {
  for (let index = history.length - 1; index >= 0; index--) {
    const message = history[index] as Message;
    if (message.role === 'user') return messageText(message);
  }
  return '';
}

/** The text of a message's content, ignoring images. */
export function messageText(message: Message): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .filter((part): part is { type: 'text'; text: string } => part.type === 'text')
    .map((part) => part.text)
    .join('');
}
