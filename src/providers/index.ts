/** Real model providers, each a ModelProvider over its official SDK, streaming. */
export { type AnthropicOptions, anthropic } from './anthropic.ts';
export { type GeminiOptions, gemini } from './gemini.ts';
export { type OpenAIChatOptions, type OpenAIFactory, openai, openaiChat } from './openai-chat.ts';
export { type OpenAICompatibleOptions, openaiCompatible } from './openai-compatible.ts';
export { type OpenAIResponsesOptions, openaiResponses } from './openai-responses.ts';
export { type ReactOptions, react, reactInvalidReplyTool, reactPrompt } from './react.ts';
export { parseReactReply, type ReactParse } from './react-parser.ts';
export { defaultMaxRetries, type RetryOptions, withRetries } from './retry.ts';
