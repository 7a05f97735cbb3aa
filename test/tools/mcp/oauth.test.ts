import { statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineAgent, run } from 'troupe';
import {
  McpAuthorizationError,
  type McpAuthorizeRequest,
  type McpCredentialKey,
  type McpStoredCredentials,
  type McpTokenStore,
  mcpServer,
  memoryTokenStore,
  sqliteTokenStore,
} from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/core/errors.ts';
import { OAuthTestServer } from './oauth-server.ts';

const redirectUrl = 'http://127.0.0.1:8976/callback';

/**
 * A headless "browser": follows the authorization URL (logging in as the request's user) and hands back the
 * redirect it was sent to, as a CLI's local callback server or a web chat's callback route would.
 */
function headlessBrowser(seen: URL[]) {
  return async (url: URL, request: McpAuthorizeRequest): Promise<string> => {
    seen.push(url);
    const login = new URL(url);
    login.searchParams.set('login', request.user === 'default' ? 'alice' : request.user);
    const answer = await fetch(login, { redirect: 'manual' });
    return answer.headers.get('location') ?? '';
  };
}

/** A store that records what was written, to check tokens go there and nowhere else. */
function recordingStore(): McpTokenStore & { keys: McpCredentialKey[]; inner: McpTokenStore } {
  const inner = memoryTokenStore();
  const keys: McpCredentialKey[] = [];
  return {
    keys,
    inner,
    load: (key) => inner.load(key),
    save: (key, credentials: McpStoredCredentials) => {
      if (!keys.some((known) => known.user === key.user && known.server === key.server)) keys.push(key);
      return inner.save(key, credentials);
    },
    delete: (key) => inner.delete(key),
  };
}

function agentCalling(server: ReturnType<typeof mcpServer>, ...tools: string[]) {
  // Each run calls the tools once, then answers.
  const model = scriptedModel((request) =>
    request.messages.at(-1)?.role === 'tool'
      ? { text: 'done' }
      : { toolCalls: tools.map((name, i) => ({ id: `c${i}`, name, args: {} })) },
  );
  return defineAgent({ name: 'a', instructions: '', model, tools: [server] });
}

describe('OAuth for a Streamable HTTP MCP server', () => {
  let as: OAuthTestServer;
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });
  async function started(): Promise<OAuthTestServer> {
    as = new OAuthTestServer();
    await as.start();
    cleanups.push(() => as.stop());
    return as;
  }

  it('without auth, a 401 is McpAuthorizationError at once (not an unreachable server retried with back-off)', async () => {
    await started();
    const server = mcpServer({ url: as.url });
    cleanups.push(() => server.close());
    const error = await server.connect().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(McpAuthorizationError);
    expect((error as Error).message).toContain('needs authorization');
    expect((error as McpAuthorizationError).code).toBe('mcp_authorization');
    expect(as.log.refusals).toBe(1);
  });

  it('discovers the authorization server, registers, asks the application for consent (PKCE), then calls', async () => {
    await started();
    const seen: URL[] = [];
    const store = recordingStore();
    const server = mcpServer({
      url: as.url,
      auth: { redirectUrl, onAuthorize: headlessBrowser(seen), store },
    });
    cleanups.push(() => server.close());
    const result = await run(agentCalling(server, 'whoami'), 'who');
    expect(result.history.find((message) => message.role === 'tool')).toMatchObject({
      content: 'you are alice',
    });
    expect(seen).toHaveLength(1);
    expect(seen[0]?.searchParams.get('code_challenge_method')).toBe('S256');
    expect(seen[0]?.searchParams.get('resource')).toBe(as.url);
    expect(as.log.registrations).toBe(1);
    expect(as.log.pkce).toBe(1);
    // The tokens are in the store, and in nothing the run hands out (events, history, the result).
    expect(store.keys).toEqual([{ server: as.url, user: 'default' }]);
    const kept = await store.inner.load({ server: as.url, user: 'default' });
    expect(as.issuedTokens).toContain(kept?.tokens?.access_token);
    const visible = JSON.stringify(result);
    for (const token of as.issuedTokens) expect(visible).not.toContain(token);
  });

  it('refreshes an expired access token without asking again, and the call runs once', async () => {
    await started();
    const seen: URL[] = [];
    const server = mcpServer({ url: as.url, auth: { redirectUrl, onAuthorize: headlessBrowser(seen) } });
    cleanups.push(() => server.close());
    await server.connect();
    as.expireAccessTokens();
    const result = await run(agentCalling(server, 'whoami'), 'who');
    expect(result.history.find((message) => message.role === 'tool')).toMatchObject({
      content: 'you are alice',
    });
    expect(seen).toHaveLength(1);
    expect(as.log.grants).toEqual(['authorization_code', 'refresh_token']);
    expect(as.log.calls).toEqual(['whoami:alice']);
  });

  it('a tool needing a wider scope (403 insufficient_scope) asks for consent to it, then runs once', async () => {
    await started();
    const seen: URL[] = [];
    const server = mcpServer({ url: as.url, auth: { redirectUrl, onAuthorize: headlessBrowser(seen) } });
    cleanups.push(() => server.close());
    const result = await run(agentCalling(server, 'admin'), 'do it');
    expect(result.history.find((message) => message.role === 'tool')).toMatchObject({
      content: 'admin done for alice',
    });
    expect(seen).toHaveLength(2);
    expect(seen[1]?.searchParams.get('scope')?.split(' ')).toContain('admin');
    expect(as.log.calls).toEqual(['admin:alice']);
  });

  it('uses a client registered beforehand instead of registering', async () => {
    await started();
    as.preRegister('troupe-cli', redirectUrl);
    const seen: URL[] = [];
    const server = mcpServer({
      url: as.url,
      auth: { redirectUrl, onAuthorize: headlessBrowser(seen), client: { clientId: 'troupe-cli' } },
    });
    cleanups.push(() => server.close());
    await server.connect();
    expect(seen[0]?.searchParams.get('client_id')).toBe('troupe-cli');
    expect(as.log.registrations).toBe(0);
  });

  it('a service account uses the client credentials grant, no person asked', async () => {
    await started();
    const server = mcpServer({
      url: as.url,
      auth: {
        clientCredentials: {
          clientId: as.service.clientId,
          clientSecret: as.service.clientSecret,
          issuer: as.issuer,
        },
      },
    });
    cleanups.push(() => server.close());
    const result = await run(agentCalling(server, 'whoami'), 'who');
    expect(result.history.find((message) => message.role === 'tool')).toMatchObject({
      content: 'you are svc-reports',
    });
    expect(as.log.grants).toEqual(['client_credentials']);
  });

  it("keeps tokens per user: each session's connection authorizes as its own user", async () => {
    await started();
    const seen: URL[] = [];
    const store = recordingStore();
    const server = mcpServer({
      url: as.url,
      scope: 'session',
      auth: {
        redirectUrl,
        onAuthorize: headlessBrowser(seen),
        store,
        user: ({ context }) => (context as { user: string }).user,
      },
    });
    cleanups.push(() => server.close());
    const agent = agentCalling(server, 'whoami');
    const answers: string[] = [];
    for (const user of ['bob', 'carol', 'bob']) {
      const result = await run(agent, 'who', { context: { user } });
      answers.push(String(result.history.find((message) => message.role === 'tool')?.content));
    }
    expect(answers).toEqual(['you are bob', 'you are carol', 'you are bob']);
    // bob's second session reused his stored tokens: two consents for three sessions.
    expect(seen).toHaveLength(2);
    expect(store.keys.map((key) => key.user)).toEqual(['bob', 'carol']);
  });

  it('a SQLite token store keeps a user signed in across a restart, in a file only its owner can read', async () => {
    await started();
    const folder = await mkdtemp(join(tmpdir(), 'troupe-tokens-'));
    cleanups.push(() => rm(folder, { recursive: true, force: true }));
    const file = join(folder, 'tokens.db');
    const seen: URL[] = [];
    for (let restart = 0; restart < 2; restart++) {
      const store = sqliteTokenStore(file);
      const server = mcpServer({
        url: as.url,
        auth: { redirectUrl, onAuthorize: headlessBrowser(seen), store },
      });
      const result = await run(agentCalling(server, 'whoami'), 'who');
      expect(result.history.find((message) => message.role === 'tool')).toMatchObject({
        content: 'you are alice',
      });
      await server.close();
      store.close();
    }
    expect(seen).toHaveLength(1);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('refuses a callback whose state does not match the request', async () => {
    await started();
    const server = mcpServer({
      url: as.url,
      auth: {
        redirectUrl,
        onAuthorize: async (url) => {
          const back = new URL((await fetch(url, { redirect: 'manual' })).headers.get('location') ?? '');
          back.searchParams.set('state', 'forged');
          return back;
        },
      },
    });
    cleanups.push(() => server.close());
    const error = await server.connect().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(McpAuthorizationError);
    expect((error as Error).message).toContain('state differs');
    expect(as.log.grants).toEqual([]);
  });

  it('an application that gives up fails the connection with McpAuthorizationError', async () => {
    await started();
    const server = mcpServer({
      url: as.url,
      auth: { redirectUrl, onAuthorize: () => Promise.reject(new Error('the user closed the window')) },
    });
    cleanups.push(() => server.close());
    await expect(server.connect()).rejects.toThrow(/not completed: the user closed the window/);
  });

  it('checks auth options where the server is declared', () => {
    expect(() =>
      mcpServer({ command: 'x', auth: { redirectUrl, onAuthorize: async () => '' } } as never),
    ).toThrow(ConfigError);
    expect(() => mcpServer({ url: 'http://127.0.0.1:1/mcp', auth: { redirectUrl } } as never)).toThrow(
      /onAuthorize/,
    );
    expect(() =>
      mcpServer({
        url: 'http://127.0.0.1:1/mcp',
        auth: { redirectUrl, onAuthorize: async () => '', user: () => 'x' },
      }),
    ).toThrow(/scope: 'session'/);
    expect(() =>
      mcpServer({
        url: 'http://127.0.0.1:1/mcp',
        auth: { clientCredentials: { clientId: 'a', clientSecret: 'b', issuer: 'not a url' } },
      }),
    ).toThrow(/issuer/);
  });
});
