import { mcpServer } from 'troupe/mcp';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelRequest } from '../../../src/core/model.ts';
import { toAnthropicRequest } from '../../../src/providers/anthropic-format.ts';
import { toGeminiRequest } from '../../../src/providers/gemini-format.ts';
import { toChatRequest } from '../../../src/providers/openai-chat-format.ts';
import { toResponsesRequest } from '../../../src/providers/openai-responses-format.ts';
import type { Tool } from '../../../src/tools/tool.ts';
import { TestHttpServer } from './http-server.ts';

const dialect = 'https://json-schema.org/draft/2020-12/schema';

function requestWith(tool: Tool): ModelRequest {
  return {
    messages: [{ role: 'user', content: 'hi' }],
    tools: [{ name: tool.name, description: tool.description, parameters: tool.parameters }],
    settings: {},
    signal: new AbortController().signal,
  };
}

describe("an MCP tool's $schema", () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it('is kept in the tool, sent to the providers that accept it and dropped for those that refuse it', async () => {
    const testServer = new TestHttpServer('stateless');
    await testServer.start();
    cleanups.push(() => testServer.stop());
    const server = mcpServer({ url: testServer.url });
    cleanups.push(() => server.close());
    await server.connect();
    const echo = server.current().find((tool) => tool.name === 'echo') as Tool;
    expect(echo.parameters.$schema).toBe(dialect);
    const request = requestWith(echo);

    const anthropic = toAnthropicRequest(request, 'claude-x');
    expect(JSON.stringify(anthropic.tools)).toContain(dialect);
    // Not closed (no additionalProperties: false), so OpenAI gets it non-strict, as given.
    const chat = toChatRequest(request, 'gpt-x');
    expect(chat.tools?.[0]).toMatchObject({ function: { parameters: { $schema: dialect } } });
    expect(JSON.stringify(toResponsesRequest(request, 'gpt-x').tools)).toContain(dialect);

    expect(JSON.stringify(toGeminiRequest(request, 'gemini-x').config?.tools)).not.toContain('$schema');
    const strictTool = {
      ...request.tools[0],
      parameters: { ...echo.parameters, additionalProperties: false },
    } as ModelRequest['tools'][number];
    const strict = toChatRequest({ ...request, tools: [strictTool] }, 'gpt-x');
    expect(strict.tools?.[0]).toMatchObject({ function: { strict: true } });
    expect(JSON.stringify(strict.tools)).not.toContain('$schema');
    const responses = toResponsesRequest({ ...request, tools: [strictTool] }, 'gpt-x', {
      strictSchemas: true,
    });
    expect(JSON.stringify(responses.tools)).not.toContain('$schema');
  });
});
