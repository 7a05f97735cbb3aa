// The client the MCP conformance suite drives (`conformance client --command "node client.ts"`): a Troupe agent
// whose only tools come from `mcpServer({ url })`, run as a user would. The suite gives the server URL as the last
// argument, the scenario in MCP_CONFORMANCE_SCENARIO and credentials in MCP_CONFORMANCE_CONTEXT. The agent lists
// the server's tools and calls each once (numbers get 2 and 3, strings "test"); OAuth runs through `auth`, with a
// headless browser that follows the authorization URL and hands back the redirect. Elicitation is on, and the
// person (run()'s onApproval) accepts every question with the form's defaults.

import type { JsonObject } from '../../../../src/core/json.ts';
import { defineAgent, run } from '../../../../src/index.ts';
import { scriptedModel } from '../../../../src/testing/index.ts';
import { type McpAuthOptions, mcpServer } from '../../../../src/tools/mcp/index.ts';

const url = process.argv.at(-1) ?? '';
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as Record<string, string | undefined>;

/** The issuer the MCP server names in its protected-resource metadata (what an operator would write down). */
async function discoverIssuer(): Promise<string> {
  const challenge = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  const header = challenge.headers.get('www-authenticate') ?? '';
  const metadataUrl =
    /resource_metadata="([^"]+)"/.exec(header)?.[1] ??
    new URL(`/.well-known/oauth-protected-resource${new URL(url).pathname}`, url).href;
  const metadata = (await (await fetch(metadataUrl)).json()) as { authorization_servers?: string[] };
  return metadata.authorization_servers?.[0] ?? new URL(url).origin;
}

async function authFor(): Promise<McpAuthOptions | undefined> {
  if (!scenario.startsWith('auth/')) return undefined;
  if (context.client_id && context.client_secret && scenario.includes('client-credentials'))
    return {
      clientCredentials: {
        clientId: context.client_id,
        clientSecret: context.client_secret,
        issuer: await discoverIssuer(),
      },
    };
  if (context.client_id && context.private_key_pem && context.signing_algorithm)
    return {
      clientCredentials: {
        clientId: context.client_id,
        privateKey: context.private_key_pem,
        algorithm: context.signing_algorithm,
        issuer: await discoverIssuer(),
      },
    };
  return {
    redirectUrl: 'http://localhost:3000/callback',
    // The client's published metadata document (used where the authorization server accepts one).
    clientMetadataUrl: 'https://conformance-test.local/client-metadata.json',
    onAuthorize: async (authorization) => {
      const answer = await fetch(authorization, { redirect: 'manual' });
      return answer.headers.get('location') ?? '';
    },
    ...(context.client_id
      ? {
          client: {
            clientId: context.client_id,
            ...(context.client_secret ? { clientSecret: context.client_secret } : {}),
          },
        }
      : {}),
  };
}

/**
 * Arguments for one tool: its required properties (numbers 2, 3..., strings "test", booleans true), and for an
 * object property named `schema` the parameters Troupe would show the model for another of the server's tools
 * (the suite checks they arrive as the server wrote them).
 */
function argumentsFor(schema: JsonObject, others: readonly { parameters: JsonObject }[]): JsonObject {
  const args: JsonObject = {};
  const properties = (schema.properties ?? {}) as Record<string, { type?: string }>;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  let next = 2;
  for (const [name, property] of Object.entries(properties)) {
    if (name === 'schema' && property.type === 'object' && others[0]) args[name] = others[0].parameters;
    else if (!required.has(name)) continue;
    else if (property.type === 'number' || property.type === 'integer') args[name] = next++;
    else if (property.type === 'boolean') args[name] = true;
    else if (property.type === 'string') args[name] = 'test';
  }
  return args;
}

/** The calls the scenario asks for (MCP_CONFORMANCE_CONTEXT.toolCalls), or one call of each listed tool. */
function callsFor(tools: readonly { name: string; parameters: JsonObject }[]) {
  const asked = (context as { toolCalls?: { name: string; arguments: JsonObject }[] }).toolCalls;
  if (Array.isArray(asked))
    return asked.map((call, i) => ({ id: `c${i}`, name: call.name, args: call.arguments }));
  return tools.map((tool, i) => ({
    id: `c${i}`,
    name: tool.name,
    args: argumentsFor(
      tool.parameters,
      tools.filter((other) => other !== tool),
    ),
  }));
}

const auth = await authFor();
const server = mcpServer({ url, name: 'conformance', elicitation: true, ...(auth ? { auth } : {}) });
try {
  await server.connect();
  const calls = callsFor(server.current());
  const model = scriptedModel(
    calls.length > 0 ? [{ toolCalls: calls }, { text: 'done' }] : [{ text: 'done' }],
  );
  const agent = defineAgent({ name: 'conformance', instructions: '', model, tools: [server] });
  const result = await run(agent, 'Use the tools.', { onApproval: () => ({ type: 'approve' }) });
  for (const message of result.history)
    if (message.role === 'tool') console.log(`${message.name}: ${message.content}`);
  if (result.stopReason !== 'completed') throw result.error ?? new Error(result.stopReason);
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await server.close();
}
