import { TroupeError } from '../../core/errors.ts';

/** An MCP server could not be reached, or stayed unreachable after reconnecting with back-off. */
export class McpConnectionError extends TroupeError {
  /** The server's name, as given to `mcpServer({ name })` or derived from its command or URL. */
  readonly server: string;
  constructor(server: string, message: string, options?: { cause?: unknown; code?: string }) {
    super(options?.code ?? 'mcp_connection', message, options);
    this.server = server;
  }
}

/**
 * An MCP server answered that it needs authorization (HTTP 401) and none is configured (`mcpServer({ auth })`), or
 * the authorization did not complete: the user declined, the callback did not match the request, or the
 * authorization server refused. Not retried: reconnecting cannot change the answer.
 */
export class McpAuthorizationError extends McpConnectionError {
  constructor(server: string, message: string, options?: { cause?: unknown }) {
    super(server, message, { ...options, code: 'mcp_authorization' });
  }
}

/**
 * A stdio MCP server's command could not be started: it is not installed, not on `PATH`, or not executable. Not
 * retried: starting it again cannot change the answer.
 */
export class McpCommandNotFoundError extends McpConnectionError {
  /** The command as given to `mcpServer({ command })`. */
  readonly command: string;
  constructor(server: string, command: string, options?: { cause?: unknown }) {
    super(
      server,
      `MCP server "${server}": its command "${command}" could not be started (not found or not executable): install it, or give its full path in mcpServer({ command }).`,
      { ...options, code: 'mcp_command_not_found' },
    );
    this.command = command;
  }
}
