import { ConfigError } from '../core/errors.ts';
import type { JsonObject } from '../core/json.ts';
import type { ModelSettings, ProviderTool, ToolSpec } from '../core/model.ts';

/** Who is checking: the adapter family a provider tool must name, and how to call the adapter in messages. */
export interface ProviderToolHost {
  /** The `provider` a tool must carry to run here (`anthropic`, `openai-responses`); undefined: none may. */
  family: string | undefined;
  /** The adapter as the user wrote it, e.g. `anthropic("claude-sonnet-4-6")`. */
  label: string;
}

/** Where each family's tools can run, for the hint in a refusal. */
const familyFactories = new Map<string, string>([
  ['anthropic', 'an anthropic(...) model'],
  ['openai-responses', 'an openai.responses(...) model'],
]);

/**
 * The provider tools of `settings`, checked for this adapter: each must be a well-formed ProviderTool (settings
 * may come from JSON), built for this adapter's family, and named apart from the function tools and from each
 * other (the API rejects two tools of one name). Anything else is a ConfigError that says what to change.
 */
export function providerToolsFor(
  settings: ModelSettings | undefined,
  host: ProviderToolHost,
  functionTools: readonly ToolSpec[] = [],
): readonly ProviderTool[] {
  const tools = settings?.providerTools;
  if (tools === undefined) return [];
  if (!Array.isArray(tools)) {
    throw new ConfigError('settings.providerTools must be an array of provider tools.');
  }
  const names = new Set(functionTools.map((tool) => tool.name));
  for (const [index, tool] of tools.entries()) {
    if (!isProviderTool(tool)) {
      throw new ConfigError(
        `settings.providerTools[${index}] is not a provider tool: build it with a provider's helpers, e.g. anthropic.tools.webSearch() or openai.tools.webSearch().`,
      );
    }
    if (tool.provider !== host.family) {
      const where = familyFactories.get(tool.provider) ?? `a ${tool.provider} model`;
      throw new ConfigError(
        `${host.label} cannot run the provider tool "${tool.name}", which is made for ${tool.provider}: offer it to ${where}, or remove it from settings.providerTools.`,
      );
    }
    if (names.has(tool.name)) {
      throw new ConfigError(
        `${host.label}: the provider tool "${tool.name}" has the name of another tool in the same request; tool names must be unique.`,
      );
    }
    names.add(tool.name);
  }
  return tools;
}

/** Whether a function tool is deferred (loaded through tool search) by one of the provider tools. */
export function isDeferred(toolName: string, providerTools: readonly ProviderTool[]): boolean {
  for (const tool of providerTools) {
    const deferred = tool.deferTools;
    if (deferred === 'all' || deferred?.includes(toolName)) return true;
  }
  return false;
}

/**
 * The request's raw `providerOptions.tools`, when the user passed some: kept and sent before ours instead of
 * being replaced by them. Anything but an array of objects is a ConfigError.
 */
export function rawToolsOf(providerOptions: JsonObject | undefined, label: string): JsonObject[] {
  if (providerOptions === undefined || !Object.hasOwn(providerOptions, 'tools')) return [];
  const tools = providerOptions.tools;
  if (
    !Array.isArray(tools) ||
    !tools.every((tool) => typeof tool === 'object' && tool !== null && !Array.isArray(tool))
  ) {
    throw new ConfigError(`${label}: settings.providerOptions.tools must be an array of tool objects.`);
  }
  return tools as JsonObject[];
}

function isProviderTool(value: unknown): value is ProviderTool {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const tool = value as Partial<Record<keyof ProviderTool, unknown>>;
  const deferred = tool.deferTools;
  return (
    typeof tool.provider === 'string' &&
    typeof tool.name === 'string' &&
    tool.name !== '' &&
    typeof tool.definition === 'object' &&
    tool.definition !== null &&
    !Array.isArray(tool.definition) &&
    (deferred === undefined ||
      deferred === 'all' ||
      (Array.isArray(deferred) && deferred.every((name) => typeof name === 'string')))
  );
}
