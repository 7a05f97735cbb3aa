import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { serveWithFetch } from '../../../src/tools/mcp/node-http.ts';

interface Grant {
  clientId: string;
  subject: string;
  scope: string;
}

interface PendingCode extends Grant {
  redirectUri: string;
  challenge: string;
}

/** Everything the authorization server saw, for the tests to check. */
export interface OAuthLog {
  registrations: number;
  authorizations: { scope: string; login: string }[];
  /** Token requests by grant type; `pkce` counts code exchanges whose verifier matched the challenge. */
  grants: string[];
  pkce: number;
  /** Requests to the MCP endpoint answered 401 or 403. */
  refusals: number;
  /** Tool runs, as `tool:subject`. */
  calls: string[];
}

/**
 * An OAuth 2.1 authorization server and an MCP server it protects, both on one 127.0.0.1 port (the issuer is the
 * origin, the MCP endpoint `/mcp`): protected-resource metadata (RFC 9728), authorization-server metadata
 * (RFC 8414), dynamic client registration, authorization code with PKCE (S256 only), refresh tokens, and the
 * client credentials grant. `/authorize` answers at once with the redirect (the "person" is `login`, default
 * `alice`). The tool `admin` needs the scope `admin` (a 403 `insufficient_scope` asks for it).
 */
export class OAuthTestServer {
  readonly log: OAuthLog = {
    registrations: 0,
    authorizations: [],
    grants: [],
    pkce: 0,
    refusals: 0,
    calls: [],
  };
  /** A client registered beforehand (with a secret), usable for the client credentials grant. */
  readonly service = { clientId: 'svc-reports', clientSecret: 'svc-secret' };
  /** Access tokens handed out, so a test can look for them where they must not be. */
  readonly issuedTokens: string[] = [];
  readonly #clients = new Map<string, { redirectUris: string[]; secret?: string }>();
  readonly #codes = new Map<string, PendingCode>();
  readonly #access = new Map<string, Grant>();
  readonly #refresh = new Map<string, Grant>();
  #http: Server | undefined;
  #port = 0;
  #mcp: ReturnType<typeof createMcpHandler> | undefined;

  constructor() {
    this.#clients.set(this.service.clientId, { redirectUris: [], secret: this.service.clientSecret });
  }

  get issuer(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  get url(): string {
    return `${this.issuer}/mcp`;
  }

  /** Every access token stops working (as when they expire): the next request is answered 401. */
  expireAccessTokens(): void {
    this.#access.clear();
  }

  /** Registers a client with a fixed id, as an administrator would beforehand. */
  preRegister(clientId: string, redirectUri: string): void {
    this.#clients.set(clientId, { redirectUris: [redirectUri] });
  }

  async start(): Promise<void> {
    this.#mcp = createMcpHandler(() => this.#buildMcp());
    const http = createServer((req, res) => void serveWithFetch(req, res, (request) => this.#route(request)));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    this.#port = (http.address() as AddressInfo).port;
    this.#http = http;
  }

  async stop(): Promise<void> {
    await this.#mcp?.close();
    const http = this.#http;
    this.#http = undefined;
    if (!http) return;
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  }

  #buildMcp(): McpServer {
    const server = new McpServer({ name: 'oauth-test', version: '1.0.0' });
    server.registerTool(
      'whoami',
      { description: 'Says who the token belongs to', inputSchema: z.object({}) },
      (_, ctx) => {
        const subject = String(ctx.http?.authInfo?.extra?.subject ?? '?');
        this.log.calls.push(`whoami:${subject}`);
        return { content: [{ type: 'text', text: `you are ${subject}` }] };
      },
    );
    server.registerTool(
      'admin',
      { description: 'Needs the admin scope', inputSchema: z.object({}) },
      (_, ctx) => {
        const subject = String(ctx.http?.authInfo?.extra?.subject ?? '?');
        this.log.calls.push(`admin:${subject}`);
        return { content: [{ type: 'text', text: `admin done for ${subject}` }] };
      },
    );
    return server;
  }

  async #route(request: Request): Promise<Response> {
    const url = new URL(request.url);
    switch (url.pathname) {
      case '/.well-known/oauth-protected-resource/mcp':
        return Response.json({
          resource: this.url,
          authorization_servers: [this.issuer],
          scopes_supported: ['mcp', 'admin'],
        });
      case '/.well-known/oauth-authorization-server':
        return Response.json({
          issuer: this.issuer,
          authorization_endpoint: `${this.issuer}/authorize`,
          token_endpoint: `${this.issuer}/token`,
          registration_endpoint: `${this.issuer}/register`,
          response_types_supported: ['code'],
          grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials'],
          code_challenge_methods_supported: ['S256'],
          token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
          scopes_supported: ['mcp', 'admin'],
        });
      case '/register':
        return this.#register(request);
      case '/authorize':
        return this.#authorize(url);
      case '/token':
        return this.#token(request);
      case '/mcp':
        return this.#protectedMcp(request);
      default:
        return new Response('not found', { status: 404 });
    }
  }

  async #register(request: Request): Promise<Response> {
    const metadata = (await request.json()) as { redirect_uris?: string[] };
    const clientId = `dcr-${randomBytes(6).toString('hex')}`;
    this.#clients.set(clientId, { redirectUris: metadata.redirect_uris ?? [] });
    this.log.registrations++;
    return Response.json(
      { ...metadata, client_id: clientId, client_id_issued_at: Math.floor(Date.now() / 1000) },
      { status: 201 },
    );
  }

  #authorize(url: URL): Response {
    const query = url.searchParams;
    const client = this.#clients.get(query.get('client_id') ?? '');
    const redirectUri = query.get('redirect_uri') ?? '';
    if (!client?.redirectUris.includes(redirectUri))
      return new Response('unknown client or redirect_uri', { status: 400 });
    if (query.get('response_type') !== 'code' || query.get('code_challenge_method') !== 'S256')
      return new Response('PKCE with S256 is required', { status: 400 });
    const login = query.get('login') ?? 'alice';
    const scope = query.get('scope') ?? 'mcp';
    this.log.authorizations.push({ scope, login });
    const code = randomBytes(12).toString('base64url');
    this.#codes.set(code, {
      clientId: query.get('client_id') ?? '',
      subject: login,
      scope,
      redirectUri,
      challenge: query.get('code_challenge') ?? '',
    });
    const back = new URL(redirectUri);
    back.searchParams.set('code', code);
    const state = query.get('state');
    if (state !== null) back.searchParams.set('state', state);
    return new Response(null, { status: 302, headers: { location: back.href } });
  }

  async #token(request: Request): Promise<Response> {
    const form = new URLSearchParams(await request.text());
    const grant = form.get('grant_type') ?? '';
    this.log.grants.push(grant);
    const basic = request.headers.get('authorization');
    let clientId = form.get('client_id') ?? '';
    let secret = form.get('client_secret') ?? undefined;
    if (basic?.startsWith('Basic ')) {
      const [id, pass] = Buffer.from(basic.slice(6), 'base64').toString().split(':');
      clientId = decodeURIComponent(id ?? '');
      secret = decodeURIComponent(pass ?? '');
    }
    const client = this.#clients.get(clientId);
    if (!client || (client.secret !== undefined && client.secret !== secret))
      return Response.json({ error: 'invalid_client' }, { status: 401 });
    if (grant === 'authorization_code') {
      const pending = this.#codes.get(form.get('code') ?? '');
      this.#codes.delete(form.get('code') ?? '');
      if (!pending || pending.clientId !== clientId || pending.redirectUri !== form.get('redirect_uri'))
        return Response.json({ error: 'invalid_grant' }, { status: 400 });
      const verifier = form.get('code_verifier') ?? '';
      if (createHash('sha256').update(verifier).digest('base64url') !== pending.challenge)
        return Response.json({ error: 'invalid_grant', error_description: 'PKCE' }, { status: 400 });
      this.log.pkce++;
      return this.#issue(pending, true);
    }
    if (grant === 'refresh_token') {
      const known = this.#refresh.get(form.get('refresh_token') ?? '');
      if (!known || known.clientId !== clientId)
        return Response.json({ error: 'invalid_grant' }, { status: 400 });
      this.#refresh.delete(form.get('refresh_token') ?? '');
      return this.#issue(known, true);
    }
    if (grant === 'client_credentials' && client.secret !== undefined)
      return this.#issue({ clientId, subject: clientId, scope: form.get('scope') ?? 'mcp' }, false);
    return Response.json({ error: 'unsupported_grant_type' }, { status: 400 });
  }

  #issue(grant: Grant, withRefresh: boolean): Response {
    const access = `at-${randomBytes(12).toString('hex')}`;
    this.#access.set(access, grant);
    this.issuedTokens.push(access);
    const body: Record<string, unknown> = {
      access_token: access,
      token_type: 'Bearer',
      expires_in: 3600,
      scope: grant.scope,
    };
    if (withRefresh) {
      const refresh = `rt-${randomBytes(12).toString('hex')}`;
      this.#refresh.set(refresh, grant);
      this.issuedTokens.push(refresh);
      body.refresh_token = refresh;
    }
    return Response.json(body);
  }

  async #protectedMcp(request: Request): Promise<Response> {
    const metadata = `${this.issuer}/.well-known/oauth-protected-resource/mcp`;
    const header = request.headers.get('authorization') ?? '';
    const grant = header.startsWith('Bearer ') ? this.#access.get(header.slice(7)) : undefined;
    if (!grant) {
      this.log.refusals++;
      return new Response('unauthorized', {
        status: 401,
        headers: { 'www-authenticate': `Bearer resource_metadata="${metadata}", scope="mcp"` },
      });
    }
    if (request.method === 'POST') {
      const body = (await request.clone().json()) as { method?: string; params?: { name?: string } };
      if (
        body.method === 'tools/call' &&
        body.params?.name === 'admin' &&
        !grant.scope.split(' ').includes('admin')
      ) {
        this.log.refusals++;
        return new Response('insufficient scope', {
          status: 403,
          headers: {
            'www-authenticate': `Bearer error="insufficient_scope", scope="mcp admin", resource_metadata="${metadata}"`,
          },
        });
      }
    }
    const mcp = this.#mcp as ReturnType<typeof createMcpHandler>;
    return mcp.fetch(request, {
      authInfo: {
        token: header.slice(7),
        clientId: grant.clientId,
        scopes: grant.scope.split(' '),
        expiresAt: Math.floor(Date.now() / 1000) + 3600,
        extra: { subject: grant.subject },
      },
    });
  }
}
