/** The parts of an MCP `tools/call` result the model is given (the SDK's CallToolResult, read structurally). */
export interface McpToolResult {
  content?: readonly unknown[] | undefined;
  structuredContent?: unknown;
  isError?: boolean | undefined;
}

/**
 * The text a tool message carries for an MCP result. Tool messages carry text only, so an image or audio block
 * becomes a line saying what it was (type and size) rather than its bytes; an embedded text resource is given in
 * full; structured content is given as JSON when no text block came with it (a server that sends both gives the
 * text as its rendering of the structure, as the protocol asks).
 */
export function resultText(result: McpToolResult): string {
  const lines: string[] = [];
  const texts: string[] = [];
  for (const block of result.content ?? []) {
    if (typeof block !== 'object' || block === null) continue;
    const part = block as Record<string, unknown>;
    switch (part.type) {
      case 'text':
        if (typeof part.text === 'string') {
          lines.push(part.text);
          texts.push(part.text);
        }
        break;
      case 'image':
      case 'audio':
        lines.push(
          `[${part.type} ${typeof part.mimeType === 'string' ? part.mimeType : ''}, ${approximateBytes(part.data)} bytes: not shown, tool results carry text only]`,
        );
        break;
      case 'resource_link':
        lines.push(`[resource ${String(part.uri)}${typeof part.name === 'string' ? ` (${part.name})` : ''}]`);
        break;
      case 'resource': {
        const resource = (part.resource ?? {}) as Record<string, unknown>;
        if (typeof resource.text === 'string')
          lines.push(`[resource ${String(resource.uri)}]\n${resource.text}`);
        else
          lines.push(
            `[resource ${String(resource.uri)}${typeof resource.mimeType === 'string' ? `, ${resource.mimeType}` : ''}, ${approximateBytes(resource.blob)} bytes of binary data: not shown]`,
          );
        break;
      }
      default:
        lines.push(`[${String(part.type)} content: not shown]`);
    }
  }
  if (result.structuredContent !== undefined && texts.length === 0)
    lines.push(JSON.stringify(result.structuredContent));
  return lines.join('\n');
}

function approximateBytes(base64: unknown): number {
  if (typeof base64 !== 'string') return 0;
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((base64.length * 3) / 4) - padding);
}
