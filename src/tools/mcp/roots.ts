import type { ListRootsResult } from '@modelcontextprotocol/client';
import { ConfigError } from '../../core/errors.ts';
import { describeValue, isPlainObject } from '../../core/options.ts';

/** A directory the server may work in: a `file://` URI, and a name to show. */
export interface McpRoot {
  uri: string;
  name?: string | undefined;
}

/** Who asks: the session and run context of the tool call in flight (or of the session's connection). */
export interface McpRootsInfo {
  sessionId: string;
  /** The run context (the `context` option) of the calling run. */
  context?: unknown;
}

/** `mcpServer({ roots })`: fixed roots, or roots computed from the calling run's context at each request. */
export type McpRootsSetting = readonly McpRoot[] | ((info: McpRootsInfo) => readonly McpRoot[]);

/** Checks `roots` as `mcpServer()` takes it. */
export function checkRootsOption(value: unknown, where: string): McpRootsSetting | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'function') return value as McpRootsSetting;
  return checkRoots(value, `${where}: roots`, (message) => new ConfigError(message));
}

/** A server's `roots/list` answer for the roots given (checked: file URIs, names as strings). */
export function rootsResult(roots: unknown, where: string): ListRootsResult {
  const checked = checkRoots(roots, where, (message) => new Error(message));
  return {
    roots: checked.map((root) =>
      root.name === undefined ? { uri: root.uri } : { uri: root.uri, name: root.name },
    ),
  };
}

function checkRoots(value: unknown, where: string, fail: (message: string) => Error): readonly McpRoot[] {
  if (!Array.isArray(value))
    throw fail(
      `${where} must be an array of { uri, name? } (or a function giving one), got ${describeValue(value)}.`,
    );
  for (const root of value) {
    if (!isPlainObject(root) || typeof root.uri !== 'string' || !URL.canParse(root.uri))
      throw fail(`${where}: each root needs a uri, got ${describeValue(root)}.`);
    if (new URL(root.uri).protocol !== 'file:')
      throw fail(`${where}: a root's uri must be a file:// URI, got "${root.uri}".`);
    if (root.name !== undefined && typeof root.name !== 'string')
      throw fail(`${where}: a root's name must be a string.`);
  }
  return value as readonly McpRoot[];
}
