/**
 * The names the built-in providers give themselves (a response's provider, reasoning blocks' owner, the family of
 * provider tools). Kept apart from the request formatters so a provider factory can name itself without loading
 * the code of its calls, which it loads on its first call.
 */
export const anthropicProviderName = 'anthropic';
export const geminiProviderName = 'gemini';
export const openaiChatProviderName = 'openai-chat';
export const openaiResponsesProviderName = 'openai-responses';
