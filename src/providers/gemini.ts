import type { GoogleGenAIOptions } from '@google/genai';
import { ConfigError } from '../core/errors.ts';
import type { ModelProvider, ModelRequest, ModelResponse, ModelSettings } from '../core/model.ts';
import { geminiProviderName } from './provider-names.ts';
import { providerToolsFor } from './provider-tools.ts';
import { withDefaultSettings } from './request-defaults.ts';
import { type RetryOptions, withRetries } from './retry.ts';
import { assertSdkInstalled, lazySdkClient } from './sdk-loader.ts';

export interface GeminiOptions extends RetryOptions {
  /** Defaults to GEMINI_API_KEY, then GOOGLE_API_KEY. */
  apiKey?: string | undefined;
  /** The API root, e.g. `http://127.0.0.1:1234` (the SDK appends `/v1beta/models/...`). */
  baseURL?: string | undefined;
  /** A fetch implementation for the SDK (tests, proxies). */
  fetch?: typeof fetch | undefined;
  headers?: Record<string, string> | undefined;
  /** Defaults for every request; the request's own settings win. */
  settings?: ModelSettings | undefined;
  /** Ids for function calls the model sent without one (older models). Default: `call_<uuid>`. */
  generateId?: (() => string) | undefined;
}

/**
 * A ModelProvider for the Gemini API through the official `@google/genai` SDK (an optional peer dependency,
 * loaded on the first call), always streaming (`generateContentStream`, `?alt=sse`). The SDK's retries and
 * automatic continuation stay off: retries are ours. Provider tools of other providers are refused.
 */
export function gemini(model: string, options: GeminiOptions = {}): ModelProvider {
  assertSdkInstalled('@google/genai', 'gemini()');
  const apiKey = options.apiKey ?? process.env.GEMINI_API_KEY ?? process.env.GOOGLE_API_KEY;
  if (!apiKey) {
    throw new ConfigError(
      'The Gemini provider needs an API key: pass { apiKey } or set the GEMINI_API_KEY (or GOOGLE_API_KEY) environment variable.',
    );
  }
  providerToolsFor(options.settings, { family: undefined, label: `gemini("${model}")` });
  const clientOptions: GoogleGenAIOptions = { apiKey };
  const httpOptions: NonNullable<GoogleGenAIOptions['httpOptions']> = {};
  if (options.baseURL !== undefined) httpOptions.baseUrl = options.baseURL;
  if (options.headers !== undefined) httpOptions.headers = options.headers;
  if (Object.keys(httpOptions).length > 0) clientOptions.httpOptions = httpOptions;
  const connect = lazySdkClient('@google/genai', 'gemini()', (sdk) => new sdk.GoogleGenAI(clientOptions));
  const generateId = options.generateId ?? (() => `call_${crypto.randomUUID().replaceAll('-', '')}`);
  const baseFetch = options.fetch;

  return withRetries(
    {
      provider: geminiProviderName,
      model,
      async generate(request: ModelRequest): Promise<ModelResponse> {
        const { sdk, client } = await connect();
        // The call's code loads with the SDK, on the first call: importing troupe/providers stays light.
        const { streamGeminiOnce } = await import('./gemini-call.ts');
        return streamGeminiOnce(
          sdk,
          client,
          model,
          withDefaultSettings(request, options.settings),
          generateId,
          baseFetch,
        );
      },
    },
    options,
  );
}
