import { TroupeError } from '../../core/errors.ts';

/** An MCP server could not be reached, or stayed unreachable after reconnecting with back-off. */
export class McpConnectionError extends TroupeError {
  /** The server's name, as given to `mcpServer({ name })` or derived from its command or URL. */
  readonly server: string;
  constructor(server: string, message: string, options?: { cause?: unknown }) {
    super('mcp_connection', message, options);
    this.server = server;
  }
}
