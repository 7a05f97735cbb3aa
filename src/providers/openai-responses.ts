import type { ClientOptions } from 'openai';
import { ConfigError } from '../core/errors.ts';
import type { ModelProvider, ModelRequest, ModelResponse, ModelSettings } from '../core/model.ts';
import { openaiResponsesProviderName } from './provider-names.ts';
import { providerToolsFor } from './provider-tools.ts';
import { withDefaultSettings } from './request-defaults.ts';
import { type RetryOptions, withRetries } from './retry.ts';
import { assertSdkInstalled, lazySdkClient } from './sdk-loader.ts';

export interface ResponsesRequestOptions {
  /**
   * Ask for reasoning items' encrypted_content so they can be carried back without server-side state
   * (default true). Turn it off for a server that rejects the `include` value.
   */
  includeReasoning?: boolean | undefined;
  /** Send tool and output schemas with `strict: true` (default false: strict mode needs every property required). */
  strictSchemas?: boolean | undefined;
}

export interface OpenAIResponsesOptions extends ResponsesRequestOptions, RetryOptions {
  /** Defaults to the OPENAI_API_KEY environment variable. */
  apiKey?: string | undefined;
  baseURL?: string | undefined;
  organization?: string | undefined;
  /** A fetch implementation for the SDK (tests, proxies). */
  fetch?: typeof fetch | undefined;
  headers?: Record<string, string> | undefined;
  /** Defaults for every request; the request's own settings win. */
  settings?: ModelSettings | undefined;
}

/**
 * A ModelProvider for the OpenAI Responses API through the official `openai` package (an optional peer
 * dependency, loaded on the first call), always streaming and stateless (`store: false`, reasoning carried back
 * as encrypted items, messages with their phase, built-in tool calls in order). The SDK's own retries are off.
 */
export function openaiResponses(model: string, options: OpenAIResponsesOptions = {}): ModelProvider {
  assertSdkInstalled('openai', 'openai.responses()');
  const apiKey = options.apiKey ?? process.env.OPENAI_API_KEY;
  if (!apiKey) {
    throw new ConfigError(
      'The OpenAI Responses provider needs an API key: pass { apiKey } or set the OPENAI_API_KEY environment variable.',
    );
  }
  providerToolsFor(options.settings, {
    family: openaiResponsesProviderName,
    label: `openai.responses("${model}")`,
  });
  const clientOptions: ClientOptions = { apiKey, maxRetries: 0 };
  if (options.baseURL !== undefined) clientOptions.baseURL = options.baseURL;
  if (options.organization !== undefined) clientOptions.organization = options.organization;
  if (options.fetch !== undefined) clientOptions.fetch = options.fetch;
  if (options.headers !== undefined) clientOptions.defaultHeaders = options.headers;
  const connect = lazySdkClient('openai', 'openai.responses()', (sdk) => new sdk.OpenAI(clientOptions));

  return withRetries(
    {
      provider: openaiResponsesProviderName,
      model,
      async generate(request: ModelRequest): Promise<ModelResponse> {
        const { sdk, client } = await connect();
        // The call's code loads with the SDK, on the first call: importing troupe/providers stays light.
        const { streamResponsesOnce } = await import('./openai-responses-call.ts');
        return streamResponsesOnce(
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
