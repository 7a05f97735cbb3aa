import { ConfigError } from '../core/errors.ts';
import type { JsonObject } from '../core/json.ts';
import type { ProviderTool } from '../core/model.ts';

const provider = 'anthropic';

/** The user's approximate location, for more relevant search results. */
export interface AnthropicUserLocation {
  city?: string;
  region?: string;
  /** Two-letter ISO country code. */
  country?: string;
  /** IANA time zone, e.g. `Europe/Paris`. */
  timezone?: string;
}

export interface AnthropicWebSearchOptions {
  /** At most this many searches per request. */
  maxUses?: number;
  /** Only these domains appear in results (not with `blockedDomains`). */
  allowedDomains?: string[];
  /** These domains never appear in results (not with `allowedDomains`). */
  blockedDomains?: string[];
  userLocation?: AnthropicUserLocation;
  /** The tool version. Default `web_search_20250305`. */
  version?: 'web_search_20250305' | 'web_search_20260209';
}

export interface AnthropicToolSearchOptions {
  /** How the model searches the deferred tools: regular expressions (default) or BM25 over names and descriptions. */
  variant?: 'regex' | 'bm25';
  /**
   * The function tools the model finds through search rather than sees up front (sent with `defer_loading`).
   * Default `'all'`. A name the request does not offer is ignored.
   */
  deferTools?: readonly string[] | 'all' | undefined;
}

export interface AnthropicCodeExecutionOptions {
  /** The tool version. Default `code_execution_20250825` (Python and bash in a sandbox, with file editing). */
  version?: 'code_execution_20250825' | 'code_execution_20260120';
}

/**
 * Anthropic's server tools, to list in an agent's `settings.providerTools`: Anthropic runs them during the
 * request, and their calls and results come back as blocks kept on the assistant message, sent back in order on
 * the next turn. Another provider refuses them with a ConfigError.
 */
export const anthropicTools = {
  /** Web search, with citations in the answer's text blocks. */
  webSearch(options: AnthropicWebSearchOptions = {}): ProviderTool {
    if (options.allowedDomains !== undefined && options.blockedDomains !== undefined) {
      throw new ConfigError('anthropic.tools.webSearch takes allowedDomains or blockedDomains, not both.');
    }
    const definition: JsonObject = { type: options.version ?? 'web_search_20250305', name: 'web_search' };
    if (options.maxUses !== undefined) definition.max_uses = positiveInteger(options.maxUses, 'maxUses');
    if (options.allowedDomains !== undefined) {
      definition.allowed_domains = domains(options.allowedDomains, 'allowedDomains');
    }
    if (options.blockedDomains !== undefined) {
      definition.blocked_domains = domains(options.blockedDomains, 'blockedDomains');
    }
    if (options.userLocation !== undefined) {
      definition.user_location = { type: 'approximate', ...location(options.userLocation) };
    }
    return { provider, name: 'web_search', definition };
  },

  /** Tool search: the model looks up the function tools it needs instead of receiving all of them. */
  toolSearch(options: AnthropicToolSearchOptions = {}): ProviderTool {
    const variant = options.variant ?? 'regex';
    if (variant !== 'regex' && variant !== 'bm25') {
      throw new ConfigError(`anthropic.tools.toolSearch: variant is "regex" or "bm25", not "${variant}".`);
    }
    const deferTools = options.deferTools ?? 'all';
    if (
      deferTools !== 'all' &&
      !(Array.isArray(deferTools) && deferTools.every((n) => typeof n === 'string'))
    ) {
      throw new ConfigError('anthropic.tools.toolSearch: deferTools is "all" or a list of tool names.');
    }
    const name = `tool_search_tool_${variant}`;
    return {
      provider,
      name,
      definition: { type: `${name}_20251119`, name },
      deferTools: deferTools === 'all' ? 'all' : [...deferTools],
    };
  },

  /** Code execution in Anthropic's sandbox. */
  codeExecution(options: AnthropicCodeExecutionOptions = {}): ProviderTool {
    return {
      provider,
      name: 'code_execution',
      definition: { type: options.version ?? 'code_execution_20250825', name: 'code_execution' },
    };
  },
};

function positiveInteger(value: number, field: string): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new ConfigError(`anthropic.tools.webSearch: ${field} must be a positive integer; got ${value}.`);
  }
  return value;
}

function domains(value: readonly string[], field: string): string[] {
  if (!Array.isArray(value) || !value.every((domain) => typeof domain === 'string' && domain !== '')) {
    throw new ConfigError(`anthropic.tools.webSearch: ${field} must be a list of domain names.`);
  }
  return [...value];
}

function location(value: AnthropicUserLocation): JsonObject {
  const out: JsonObject = {};
  for (const key of ['city', 'region', 'country', 'timezone'] as const) {
    const field = value[key];
    if (field === undefined) continue;
    if (typeof field !== 'string') {
      throw new ConfigError(`anthropic.tools.webSearch: userLocation.${key} must be a string.`);
    }
    out[key] = field;
  }
  return out;
}
