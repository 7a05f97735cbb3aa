import { ConfigError } from '../core/errors.ts';
import type { JsonObject } from '../core/json.ts';
import type { ProviderTool } from '../core/model.ts';
import { openaiResponsesProviderName } from './provider-names.ts';

/** The user's approximate location, for more relevant search results. */
export interface OpenAIUserLocation {
  city?: string;
  region?: string;
  /** Two-letter ISO country code. */
  country?: string;
  /** IANA time zone, e.g. `Europe/Paris`. */
  timezone?: string;
}

export interface OpenAIWebSearchOptions {
  /** Only these domains (and their subdomains) are searched. */
  allowedDomains?: string[];
  /** How much of the context window search results may use. Default `medium` (the API's). */
  searchContextSize?: 'low' | 'medium' | 'high';
  userLocation?: OpenAIUserLocation;
}

export interface OpenAIFileSearchOptions {
  /** The vector stores to search (at least one). */
  vectorStoreIds: string[];
  /** At most this many results, 1 to 50. */
  maxNumResults?: number;
  /** A metadata filter, exactly as the API takes it (`{ type: 'eq', key, value }`, or a compound one). */
  filters?: JsonObject;
}

/**
 * The Responses API's built-in tools, to list in an agent's `settings.providerTools` of an
 * `openai.responses(...)` model: OpenAI runs them during the request, and their calls come back as items kept on
 * the assistant message, sent back in order on the next turn. Chat Completions and other providers refuse them
 * with a ConfigError.
 */
export const openaiTools = {
  /** Web search; the answer cites its sources. */
  webSearch(options: OpenAIWebSearchOptions = {}): ProviderTool {
    const definition: JsonObject = { type: 'web_search' };
    if (options.allowedDomains !== undefined) {
      if (
        !Array.isArray(options.allowedDomains) ||
        !options.allowedDomains.every((domain) => typeof domain === 'string' && domain !== '')
      ) {
        throw new ConfigError('openai.tools.webSearch: allowedDomains must be a list of domain names.');
      }
      definition.filters = { allowed_domains: [...options.allowedDomains] };
    }
    if (options.searchContextSize !== undefined) {
      if (!['low', 'medium', 'high'].includes(options.searchContextSize)) {
        throw new ConfigError(
          `openai.tools.webSearch: searchContextSize is "low", "medium" or "high", not "${options.searchContextSize}".`,
        );
      }
      definition.search_context_size = options.searchContextSize;
    }
    if (options.userLocation !== undefined) {
      const location: JsonObject = { type: 'approximate' };
      for (const key of ['city', 'region', 'country', 'timezone'] as const) {
        const field = options.userLocation[key];
        if (field === undefined) continue;
        if (typeof field !== 'string') {
          throw new ConfigError(`openai.tools.webSearch: userLocation.${key} must be a string.`);
        }
        location[key] = field;
      }
      definition.user_location = location;
    }
    return { provider: openaiResponsesProviderName, name: 'web_search', definition };
  },

  /** Search over the files of your vector stores. */
  fileSearch(options: OpenAIFileSearchOptions): ProviderTool {
    const ids = options?.vectorStoreIds;
    if (!Array.isArray(ids) || ids.length === 0 || !ids.every((id) => typeof id === 'string' && id !== '')) {
      throw new ConfigError(
        'openai.tools.fileSearch needs { vectorStoreIds }: the ids of one or more vector stores.',
      );
    }
    const definition: JsonObject = { type: 'file_search', vector_store_ids: [...ids] };
    if (options.maxNumResults !== undefined) {
      const max = options.maxNumResults;
      if (!Number.isInteger(max) || max < 1 || max > 50) {
        throw new ConfigError(
          `openai.tools.fileSearch: maxNumResults is an integer from 1 to 50; got ${max}.`,
        );
      }
      definition.max_num_results = max;
    }
    if (options.filters !== undefined) definition.filters = options.filters;
    return { provider: openaiResponsesProviderName, name: 'file_search', definition };
  },
};
