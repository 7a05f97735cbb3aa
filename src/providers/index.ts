/** Real model providers, each a ModelProvider over its official SDK, streaming. */
export { type AnthropicOptions, anthropic } from './anthropic.ts';
export { type GeminiOptions, gemini } from './gemini.ts';
export { type OpenAIResponsesOptions, openaiResponses } from './openai-responses.ts';
