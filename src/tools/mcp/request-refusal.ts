/**
 * This client refused a request of an MCP server (sampling, roots, elicitation): the server reads the message as
 * the error of its request on a 2025-era connection; on a 2026-07-28 one the tool call ends with it for the model.
 */
export class McpRequestRefusal extends Error {
  override readonly name = 'McpRequestRefusal';
}
