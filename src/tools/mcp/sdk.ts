import { ConfigError } from '../../core/errors.ts';

/**
 * The MCP SDK (`@modelcontextprotocol/client`, and `@modelcontextprotocol/server` for serving agents) is an
 * optional peer dependency: `troupe` loads it only when an MCP server is first used, and `troupe/mcp` checks where
 * a server is declared that it can be found, so a missing package fails there with the command that fixes it.
 */

export type McpClientSdk = typeof import('@modelcontextprotocol/client');
export type McpStdioClientSdk = typeof import('@modelcontextprotocol/client/stdio');
export type McpServerSdk = typeof import('@modelcontextprotocol/server');
export type McpStdioServerSdk = typeof import('@modelcontextprotocol/server/stdio');

interface McpModules {
  '@modelcontextprotocol/client': McpClientSdk;
  '@modelcontextprotocol/client/stdio': McpStdioClientSdk;
  '@modelcontextprotocol/server': McpServerSdk;
  '@modelcontextprotocol/server/stdio': McpStdioServerSdk;
}

type McpModule = keyof McpModules;

// Literal specifiers, so bundlers and type checkers see each import.
const importers: { [P in McpModule]: () => Promise<McpModules[P]> } = {
  '@modelcontextprotocol/client': () => import('@modelcontextprotocol/client'),
  '@modelcontextprotocol/client/stdio': () => import('@modelcontextprotocol/client/stdio'),
  '@modelcontextprotocol/server': () => import('@modelcontextprotocol/server'),
  '@modelcontextprotocol/server/stdio': () => import('@modelcontextprotocol/server/stdio'),
};

const loading = new Map<McpModule, Promise<unknown>>();

function packageOf(module: McpModule): string {
  return module.startsWith('@modelcontextprotocol/client')
    ? '@modelcontextprotocol/client'
    : '@modelcontextprotocol/server';
}

/** Throws a ConfigError naming the package to install when `module` cannot be resolved. */
export function assertMcpSdkInstalled(module: McpModule, caller: string): void {
  if (typeof import.meta.resolve !== 'function') return;
  try {
    import.meta.resolve(module);
  } catch (error) {
    throw missingSdkError(module, caller, error);
  }
}

/** The module, imported once per process; a failed import is not kept, so installing it later works. */
export function loadMcpSdk<P extends McpModule>(module: P, caller: string): Promise<McpModules[P]> {
  let pending = loading.get(module) as Promise<McpModules[P]> | undefined;
  if (pending === undefined) {
    pending = importers[module]().catch((error: unknown) => {
      loading.delete(module);
      throw missingSdkError(module, caller, error);
    }) as Promise<McpModules[P]>;
    loading.set(module, pending);
  }
  return pending;
}

function missingSdkError(module: McpModule, caller: string, cause: unknown): ConfigError {
  const pkg = packageOf(module);
  return new ConfigError(
    `${caller} needs the "${pkg}" package, an optional peer dependency of troupe that is not installed (or cannot be loaded): run \`npm install ${pkg}\`.`,
    { cause },
  );
}
