import { assertPeerInstalled, loadPeer, type OptionalPeer } from '../../core/optional-peer.ts';

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

const client = '@modelcontextprotocol/client';
const server = '@modelcontextprotocol/server';

// Literal specifiers, so bundlers and type checkers see each import.
const peers: { [P in McpModule]: OptionalPeer<McpModules[P]> & { import: () => Promise<McpModules[P]> } } = {
  '@modelcontextprotocol/client': { package: client, import: () => import('@modelcontextprotocol/client') },
  '@modelcontextprotocol/client/stdio': {
    package: client,
    specifier: '@modelcontextprotocol/client/stdio',
    import: () => import('@modelcontextprotocol/client/stdio'),
  },
  '@modelcontextprotocol/server': { package: server, import: () => import('@modelcontextprotocol/server') },
  '@modelcontextprotocol/server/stdio': {
    package: server,
    specifier: '@modelcontextprotocol/server/stdio',
    import: () => import('@modelcontextprotocol/server/stdio'),
  },
};

/** Throws a ConfigError naming the package to install when `module` cannot be resolved. */
export function assertMcpSdkInstalled(module: McpModule, caller: string): void {
  assertPeerInstalled(peers[module], caller);
}

/** The module, imported once per process; a failed import is not kept, so installing it later works. */
export function loadMcpSdk<P extends McpModule>(module: P, caller: string): Promise<McpModules[P]> {
  return loadPeer(peers[module], caller);
}
