import type { ClientOptions } from '@anthropic-ai/sdk';
import { ConfigError } from '../core/errors.ts';
import type { ModelProvider, ModelRequest, ModelResponse, ModelSettings } from '../core/model.ts';
import { anthropicTools } from './anthropic-tools.ts';
import { anthropicProviderName } from './provider-names.ts';
import { providerToolsFor } from './provider-tools.ts';
import { withDefaultSettings } from './request-defaults.ts';
import { type RetryOptions, withRetries } from './retry.ts';
import { assertSdkInstalled, lazySdkClient } from './sdk-loader.ts';

export interface AnthropicOptions extends RetryOptions {
  /** Defaults to the ANTHROPIC_API_KEY environment variable. */
  apiKey?: string | undefined;
  baseURL?: string | undefined;
  /** A fetch implementation for the SDK (tests, proxies). */
  fetch?: typeof fetch | undefined;
  /** Extra headers on every request (for example `anthropic-beta`). */
  headers?: Record<string, string> | undefined;
  /** `max_tokens` when the request's settings do not say (the API requires one). Default 4096. */
  maxTokens?: number | undefined;
  /** Defaults for every request; the request's own settings win. */
  settings?: ModelSettings | undefined;
}

/** `anthropic(model)` is a Messages API model; `anthropic.tools` builds Anthropic's server tools. */
export interface AnthropicFactory {
  (model: string, options?: AnthropicOptions): ModelProvider;
  tools: typeof anthropicTools;
}

/**
 * A ModelProvider for the Anthropic Messages API through the official SDK (`@anthropic-ai/sdk`, an optional peer
 * dependency, loaded on the first call). Always streams; the SDK's own retries are off (`maxRetries: 0`),
 * retries are ours. Thinking blocks, server tool calls and their results come back in `reasoning` and are sent
 * back unchanged, in order, by the history formatter (anthropic-format.ts).
 */
function createAnthropic(model: string, options: AnthropicOptions = {}): ModelProvider {
  assertSdkInstalled('@anthropic-ai/sdk', 'anthropic()');
  const apiKey = options.apiKey ?? process.env.ANTHROPIC_API_KEY;
  if (!apiKey) {
    throw new ConfigError(
      'The Anthropic provider needs an API key: pass { apiKey } or set the ANTHROPIC_API_KEY environment variable.',
    );
  }
  providerToolsFor(options.settings, { family: anthropicProviderName, label: `anthropic("${model}")` });
  const clientOptions: ClientOptions = { apiKey, maxRetries: 0 };
  if (options.baseURL !== undefined) clientOptions.baseURL = options.baseURL;
  if (options.fetch !== undefined) clientOptions.fetch = options.fetch;
  if (options.headers !== undefined) clientOptions.defaultHeaders = options.headers;
  const connect = lazySdkClient(
    '@anthropic-ai/sdk',
    'anthropic()',
    (sdk) => new sdk.Anthropic(clientOptions),
  );

  return withRetries(
    {
      provider: anthropicProviderName,
      model,
      async generate(request: ModelRequest): Promise<ModelResponse> {
        const { sdk, client } = await connect();
        // The call's code loads with the SDK, on the first call: importing troupe/providers stays light.
        const { streamAnthropicOnce } = await import('./anthropic-call.ts');
        return streamAnthropicOnce(
          sdk,
          client,
          model,
          withDefaultSettings(request, options.settings),
          options,
        );
      },
    },
    options,
  );
}

export const anthropic: AnthropicFactory = Object.assign(createAnthropic, { tools: anthropicTools });
