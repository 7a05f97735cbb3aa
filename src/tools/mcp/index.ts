/**
 * MCP (Model Context Protocol) for Troupe: MCP servers' tools in an agent's `tools`, and agents served as an MCP
 * server. Needs the optional peer dependencies `@modelcontextprotocol/client` (and, to serve agents,
 * `@modelcontextprotocol/server`).
 */

export { ToolNameCollisionError } from '../tool-name-collision-error.ts';
export type { ReconnectPolicy } from './connection.ts';
export { McpAuthorizationError, McpCommandNotFoundError, McpConnectionError } from './errors.ts';
export type {
  McpAuthOptions,
  McpAuthorizationCodeOptions,
  McpAuthorizeRequest,
  McpClientCredentialsOptions,
} from './oauth.ts';
export { McpRequestRefusal } from './request-refusal.ts';
export type { McpRoot, McpRootsInfo, McpRootsSetting } from './roots.ts';
export type { McpSamplingOptions } from './sampling.ts';
export {
  type McpCall,
  type McpIdentity,
  type McpServing,
  type ServeMcpAuth,
  type ServeMcpHttpTransport,
  type ServeMcpOptions,
  type ServeMcpTransport,
  serveMcp,
} from './serve.ts';
export {
  type McpHttpServerOptions,
  type McpServer,
  type McpServerOptions,
  type McpSessionInfo,
  type McpSetting,
  type McpStdioServerOptions,
  mcpServer,
} from './server.ts';
export { type SqliteTokenStore, sqliteTokenStore } from './sqlite-token-store.ts';
export {
  type McpCredentialKey,
  type McpStoredCredentials,
  type McpTokenStore,
  memoryTokenStore,
} from './token-store.ts';
