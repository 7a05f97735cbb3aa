/**
 * MCP (Model Context Protocol) for Troupe: MCP servers' tools in an agent's `tools`, and agents served as an MCP
 * server. Needs the optional peer dependencies `@modelcontextprotocol/client` (and, to serve agents,
 * `@modelcontextprotocol/server`).
 */
export type { ReconnectPolicy } from './connection.ts';
export { McpConnectionError } from './errors.ts';
export { type McpServing, type ServeMcpOptions, type ServeMcpTransport, serveMcp } from './serve.ts';
export {
  type McpHttpServerOptions,
  type McpServer,
  type McpServerOptions,
  type McpSessionInfo,
  type McpSetting,
  type McpStdioServerOptions,
  mcpServer,
} from './server.ts';
