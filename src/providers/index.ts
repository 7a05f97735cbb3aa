/**
 * Real model providers, each a ModelProvider over its official SDK, streaming. The SDKs are optional peer
 * dependencies: importing this module loads none of them, each provider loads its own on its first call.
 */
export type { ProviderTool } from '../core/model.ts';
export { type AnthropicFactory, type AnthropicOptions, anthropic } from './anthropic.ts';
export {
  type AnthropicCodeExecutionOptions,
  type AnthropicToolSearchOptions,
  type AnthropicUserLocation,
  type AnthropicWebSearchOptions,
  anthropicTools,
} from './anthropic-tools.ts';
export { type GeminiOptions, gemini } from './gemini.ts';
export { type OpenAIChatOptions, type OpenAIFactory, openai } from './openai-chat.ts';
export { type OpenAICompatibleOptions, openaiCompatible } from './openai-compatible.ts';
export type { OpenAIResponsesOptions } from './openai-responses.ts';
export {
  type OpenAIFileSearchOptions,
  type OpenAIUserLocation,
  type OpenAIWebSearchOptions,
  openaiTools,
} from './openai-tools.ts';
export { type ReactOptions, react, reactInvalidReplyTool, reactPrompt } from './react.ts';
export { parseReactReply, type ReactParse } from './react-parser.ts';
export { defaultMaxRetries, type RetryOptions, withRetries } from './retry.ts';
