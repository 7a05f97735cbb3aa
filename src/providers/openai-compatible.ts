import { ConfigError } from '../core/errors.ts';
import type { ModelProvider } from '../core/model.ts';
import { chatProvider, type OpenAIChatOptions } from './openai-chat.ts';

export interface OpenAICompatibleOptions extends Omit<OpenAIChatOptions, 'baseURL' | 'apiKey'> {
  /** The server's OpenAI-style root, e.g. `http://localhost:11434/v1` (Ollama), `https://openrouter.ai/api/v1`. */
  baseURL: string;
  /**
   * The server's key, when it wants one. Never read from OPENAI_API_KEY: an OpenAI key must not be sent to
   * another server by accident.
   */
  apiKey?: string | undefined;
  /**
   * An environment variable to read the key from when `apiKey` is not given, e.g. `OPENROUTER_API_KEY`.
   * When it is named but unset, creating the model fails with a ConfigError that names it.
   */
  apiKeyEnv?: string | undefined;
  /** The provider name in responses, errors and reasoning blocks. Default `openai-compatible`. */
  name?: string | undefined;
}

/**
 * Chat Completions against an OpenAI-compatible server (Ollama, vLLM, OpenRouter, LM Studio, Gemini's and
 * Anthropic's OpenAI endpoints): `openaiCompatible({ baseURL, apiKey })('llama3.2')`. The same adapter as
 * `openai()` (whose stream reducer already tolerates missing finish_reason, tool calls starting at index 1,
 * empty or "0" ids, usage in odd places), with the defaults such servers accept: `max_tokens` rather than
 * `max_completion_tokens`, and schemas sent non-strict unless `strictSchemas: true`.
 */
export function openaiCompatible(
  options: OpenAICompatibleOptions,
): (model: string, overrides?: Partial<OpenAICompatibleOptions>) => ModelProvider {
  if (typeof options?.baseURL !== 'string' || options.baseURL.trim() === '') {
    throw new ConfigError(
      'openaiCompatible needs { baseURL }, the server root such as http://localhost:11434/v1.',
    );
  }
  return (model, overrides = {}) => {
    if (typeof model !== 'string' || model === '') {
      throw new ConfigError('openaiCompatible(...)(model) needs a model name.');
    }
    const merged: OpenAICompatibleOptions = { ...options, ...overrides };
    const { name, apiKey, apiKeyEnv, ...rest } = merged;
    const key = apiKey ?? (apiKeyEnv === undefined ? undefined : process.env[apiKeyEnv]);
    if (key === undefined && apiKeyEnv !== undefined) {
      throw new ConfigError(
        `The ${name ?? 'openai-compatible'} provider needs an API key: pass { apiKey } or set the ${apiKeyEnv} environment variable.`,
      );
    }
    return chatProvider(
      model,
      {
        strictSchemas: false,
        maxTokensField: 'max_tokens',
        ...rest,
        // The SDK insists on a key; servers without auth ignore the header.
        apiKey: key ?? 'not-needed',
      },
      name ?? 'openai-compatible',
      'openaiCompatible',
    );
  };
}
