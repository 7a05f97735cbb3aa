import { randomBytes } from 'node:crypto';
import type {
  OAuthClientMetadata,
  OAuthClientProvider,
  OAuthDiscoveryState,
  StoredOAuthClientInformation,
  StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import { ConfigError } from '../../core/errors.ts';
import type { JsonObject } from '../../core/json.ts';
import { checkOptionObject, describeValue, isPlainObject } from '../../core/options.ts';
import { McpAuthorizationError } from './errors.ts';
import { loadMcpSdk } from './sdk.ts';
import {
  type McpCredentialKey,
  type McpStoredCredentials,
  type McpTokenStore,
  memoryTokenStore,
} from './token-store.ts';

/** What the application is told when a user must authorize Troupe at an MCP server's authorization server. */
export interface McpAuthorizeRequest {
  /** The MCP server's name (see `mcpServer({ name })`). */
  server: string;
  /** The user whose authorization is asked for (`auth.user`). */
  user: string;
  /** The session the connection belongs to (empty for a connection shared by the process). */
  sessionId: string;
  /** Aborted when the run that needs the connection ends: stop waiting for the browser. */
  signal: AbortSignal;
}

interface McpAuthCommonOptions {
  /**
   * Whose tokens these are: tokens are kept per user. A string, or with `scope: 'session'` a function of the
   * session (`({ context }) => context.userId`). Default `'default'`.
   */
  user?: string | ((session: { sessionId: string; context?: unknown }) => string) | undefined;
  /** Where tokens are kept. Default: `memoryTokenStore()` (forgotten when the process ends). */
  store?: McpTokenStore | undefined;
  /** The scopes to ask for, space-separated. Default: what the server asks for in its challenge or metadata. */
  scope?: string | undefined;
}

/**
 * OAuth with a person's consent (authorization code with PKCE). Troupe discovers the authorization server from the
 * MCP server's 401 (protected-resource and authorization-server metadata), registers itself there unless `client`
 * is given, and hands the consent step to `onAuthorize`. Tokens are refreshed when they expire, and a server
 * asking for more scope (403 `insufficient_scope`) starts a new consent for the wider scope.
 */
export interface McpAuthorizationCodeOptions extends McpAuthCommonOptions {
  /** Where the authorization server sends the browser back to; it must be registered for the client. */
  redirectUrl: string | URL;
  /**
   * Hands the authorization step to the application: open `url` in a browser (CLI), show it as a link (web chat),
   * or follow it in a test. Resolve with the URL the browser came back to (`redirectUrl` with `code` and `state`);
   * reject to give up (the run fails with McpAuthorizationError).
   */
  onAuthorize: (url: URL, request: McpAuthorizeRequest) => Promise<string | URL>;
  /** A client registered beforehand with the authorization server. Without it, Troupe registers itself. */
  client?: { clientId: string; clientSecret?: string | undefined } | undefined;
  /** The name shown on the consent screen when Troupe registers itself. Default `'troupe'`. */
  clientName?: string | undefined;
  /**
   * The HTTPS URL of a client metadata document the application publishes: an authorization server that accepts
   * such documents takes the URL as the client id, with no registration.
   */
  clientMetadataUrl?: string | undefined;
}

/** A service account's credentials: a shared secret, or a private key that signs a JWT (`private_key_jwt`). */
export type McpClientCredentials = {
  clientId: string;
  /** The authorization server's issuer URL: the credentials are sent to that server only. */
  issuer: string;
} & (
  | { clientSecret: string; privateKey?: undefined; algorithm?: undefined }
  | {
      clientSecret?: undefined;
      /** A PEM string or a JWK. */
      privateKey: string | Record<string, unknown>;
      /** The signing algorithm, e.g. `'ES256'` or `'RS256'`. */
      algorithm: string;
    }
);

/** OAuth for a service without a person (the client credentials grant). */
export interface McpClientCredentialsOptions extends McpAuthCommonOptions {
  clientCredentials: McpClientCredentials;
}

/** How Troupe authorizes at a Streamable HTTP MCP server that answers 401. */
export type McpAuthOptions = McpAuthorizationCodeOptions | McpClientCredentialsOptions;

const authKeys: readonly string[] = [
  'user',
  'store',
  'scope',
  'redirectUrl',
  'onAuthorize',
  'client',
  'clientName',
  'clientMetadataUrl',
  'clientCredentials',
];

/** Checks `mcpServer({ auth })` where the server is declared. */
export function checkAuthOptions(auth: unknown, where: string, perSession: boolean): McpAuthOptions {
  if (!isPlainObject(auth)) throw new ConfigError(`${where}: auth must be an object.`);
  checkOptionObject(auth, authKeys, `${where} auth`);
  const options = auth as Partial<McpAuthorizationCodeOptions & McpClientCredentialsOptions>;
  const nonEmpty = (value: unknown) => typeof value === 'string' && value !== '';
  if (options.user !== undefined) {
    if (typeof options.user === 'function' && !perSession)
      throw new ConfigError(
        `${where}: auth.user can be a function of the session only with scope: 'session'.`,
      );
    if (typeof options.user !== 'function' && !nonEmpty(options.user))
      throw new ConfigError(`${where}: auth.user must be a non-empty string or a function of the session.`);
  }
  const store = options.store as Partial<McpTokenStore> | undefined;
  if (
    store !== undefined &&
    (typeof store !== 'object' ||
      store === null ||
      typeof store.load !== 'function' ||
      typeof store.save !== 'function' ||
      typeof store.delete !== 'function')
  )
    throw new ConfigError(`${where}: auth.store must have load, save and delete (an McpTokenStore).`);
  if (options.scope !== undefined && typeof options.scope !== 'string')
    throw new ConfigError(`${where}: auth.scope must be a space-separated string of scopes.`);
  if (options.clientCredentials !== undefined) {
    for (const key of ['redirectUrl', 'onAuthorize', 'client', 'clientName', 'clientMetadataUrl'] as const)
      if (options[key] !== undefined)
        throw new ConfigError(
          `${where}: auth.${key} belongs to the authorization-code flow; with clientCredentials no person is asked.`,
        );
    const credentials = options.clientCredentials as Partial<{
      clientId: unknown;
      clientSecret: unknown;
      privateKey: unknown;
      algorithm: unknown;
      issuer: unknown;
    }>;
    if (!isPlainObject(credentials) || !nonEmpty(credentials.clientId))
      throw new ConfigError(`${where}: auth.clientCredentials needs a clientId.`);
    const secret = credentials.clientSecret !== undefined;
    const key = credentials.privateKey !== undefined;
    if (secret === key)
      throw new ConfigError(
        `${where}: auth.clientCredentials needs either a clientSecret or a privateKey (with its algorithm).`,
      );
    if (secret && !nonEmpty(credentials.clientSecret))
      throw new ConfigError(`${where}: auth.clientCredentials.clientSecret must be a non-empty string.`);
    if (key && !nonEmpty(credentials.privateKey) && !isPlainObject(credentials.privateKey))
      throw new ConfigError(`${where}: auth.clientCredentials.privateKey must be a PEM string or a JWK.`);
    if (key && !nonEmpty(credentials.algorithm))
      throw new ConfigError(
        `${where}: auth.clientCredentials.algorithm must name the signing algorithm (ES256, RS256...).`,
      );
    if (typeof credentials.issuer !== 'string' || !URL.canParse(credentials.issuer))
      throw new ConfigError(
        `${where}: auth.clientCredentials.issuer must be the authorization server's issuer URL, got ${describeValue(credentials.issuer)}.`,
      );
    return options as McpClientCredentialsOptions;
  }
  if (typeof options.onAuthorize !== 'function')
    throw new ConfigError(
      `${where}: auth needs onAuthorize (the step where a person consents) or clientCredentials (a service account).`,
    );
  const redirect = options.redirectUrl;
  if (!(redirect instanceof URL) && (typeof redirect !== 'string' || !URL.canParse(redirect)))
    throw new ConfigError(
      `${where}: auth.redirectUrl must be an absolute URL, got ${describeValue(redirect)}.`,
    );
  if (options.client !== undefined) {
    const client = options.client as Partial<NonNullable<McpAuthorizationCodeOptions['client']>>;
    if (!isPlainObject(client) || !nonEmpty(client.clientId))
      throw new ConfigError(`${where}: auth.client needs a clientId.`);
    if (client.clientSecret !== undefined && !nonEmpty(client.clientSecret))
      throw new ConfigError(`${where}: auth.client.clientSecret must be a non-empty string.`);
  }
  if (options.clientName !== undefined && !nonEmpty(options.clientName))
    throw new ConfigError(`${where}: auth.clientName must be a non-empty string.`);
  const document = options.clientMetadataUrl;
  if (
    document !== undefined &&
    (typeof document !== 'string' || !URL.canParse(document) || new URL(document).protocol !== 'https:')
  )
    throw new ConfigError(
      `${where}: auth.clientMetadataUrl must be an https URL, got ${describeValue(document)}.`,
    );
  return options as McpAuthorizationCodeOptions;
}

/** The token store of one declaration, created once so every connection of the server shares it. */
export function storeOf(auth: McpAuthOptions): McpTokenStore {
  return auth.store ?? memoryTokenStore();
}

/**
 * OAuth for one connection (one user of one server): the SDK's OAuthClientProvider over the token store, and the
 * consent step handed to `onAuthorize`. The SDK runs discovery, registration, PKCE, the token requests and refresh.
 */
export class McpOAuth {
  readonly provider: OAuthClientProvider;
  readonly #auth: McpAuthOptions;
  readonly #store: McpTokenStore;
  readonly #key: McpCredentialKey;
  readonly #server: string;
  #verifier: string | undefined;
  /** The states this connection put in authorization URLs: a callback must carry the one of its request. */
  readonly #states = new Set<string>();
  /** The PKCE verifier of each authorization URL, by its state (two flows may start before either ends). */
  readonly #verifiers = new Map<string, string>();
  #pending: URL | undefined;
  /**
   * What discovery found, kept for the flow in progress only (the callback is checked against its issuer): each
   * new flow discovers again, so a server that moved to another authorization server is followed there.
   */
  #discovery: OAuthDiscoveryState | undefined;
  #inFlow = false;

  constructor(server: string, auth: McpAuthOptions, store: McpTokenStore, key: McpCredentialKey) {
    this.#server = server;
    this.#auth = auth;
    this.#store = store;
    this.#key = key;
    this.provider = this.#buildProvider();
  }

  /** Whether a consent step can be run (the authorization-code flow). */
  get interactive(): boolean {
    return !('clientCredentials' in this.#auth && this.#auth.clientCredentials !== undefined);
  }

  /**
   * Runs the consent step the SDK asked for: the application opens the URL and gives back where the browser
   * returned; the state is checked, and `finish` (the transport's `finishAuth`) exchanges the code for tokens.
   */
  async authorize(
    finish: (callback: URLSearchParams) => Promise<void>,
    sessionId: string,
    signal: AbortSignal,
  ): Promise<void> {
    try {
      await finish(await this.#consent(sessionId, signal));
    } finally {
      this.#inFlow = false;
      this.#discovery = undefined;
    }
  }

  async #consent(sessionId: string, signal: AbortSignal): Promise<URLSearchParams> {
    const url = this.#pending;
    this.#pending = undefined;
    const auth = this.#auth;
    if (url === undefined || !('onAuthorize' in auth))
      throw new McpAuthorizationError(
        this.#server,
        `MCP server "${this.#server}" refused the credentials and no new authorization can be asked for.`,
      );
    let back: string | URL;
    try {
      back = await auth.onAuthorize(new URL(url), {
        server: this.#server,
        user: this.#key.user,
        sessionId,
        signal,
      });
    } catch (error) {
      throw new McpAuthorizationError(
        this.#server,
        `MCP server "${this.#server}": the authorization was not completed: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
    const callback = back instanceof URL ? back : URL.canParse(back) ? new URL(back) : undefined;
    if (callback === undefined)
      throw new McpAuthorizationError(
        this.#server,
        `MCP server "${this.#server}": onAuthorize must resolve with the URL the browser came back to.`,
      );
    const params = callback.searchParams;
    const sent = url.searchParams.get('state');
    if (sent === null || !this.#states.has(sent) || params.get('state') !== sent)
      throw new McpAuthorizationError(
        this.#server,
        `MCP server "${this.#server}": the authorization callback does not belong to this request (its state differs).`,
      );
    this.#states.delete(sent);
    this.#verifier = this.#verifiers.get(sent) ?? this.#verifier;
    this.#verifiers.delete(sent);
    const refusal = params.get('error');
    if (refusal !== null)
      throw new McpAuthorizationError(
        this.#server,
        `MCP server "${this.#server}": the authorization server refused: ${refusal}.`,
      );
    return params;
  }

  async #load(): Promise<McpStoredCredentials> {
    return (await this.#store.load(this.#key)) ?? {};
  }

  async #update(change: (credentials: McpStoredCredentials) => void): Promise<void> {
    const credentials = await this.#load();
    change(credentials);
    if (credentials.tokens === undefined && credentials.client === undefined)
      await this.#store.delete(this.#key);
    else await this.#store.save(this.#key, credentials);
  }

  #buildProvider(): OAuthClientProvider {
    const auth = this.#auth;
    const scope = auth.scope;
    if ('clientCredentials' in auth && auth.clientCredentials !== undefined) {
      const credentials = auth.clientCredentials;
      const { clientId, clientSecret, issuer } = credentials;
      const metadata: OAuthClientMetadata = {
        client_name: 'troupe',
        redirect_uris: [],
        grant_types: ['client_credentials'],
        token_endpoint_auth_method: clientSecret === undefined ? 'private_key_jwt' : 'client_secret_basic',
        ...(scope ? { scope } : {}),
      };
      const signed: Partial<OAuthClientProvider> =
        credentials.privateKey === undefined
          ? {}
          : {
              // The client authenticates with a JWT it signs for each token request (RFC 7523).
              addClientAuthentication: async (headers, params, url, serverMetadata) => {
                const sdk = await loadMcpSdk('@modelcontextprotocol/client', 'mcpServer()');
                await sdk.createPrivateKeyJwtAuth({
                  issuer: clientId,
                  subject: clientId,
                  privateKey: credentials.privateKey,
                  alg: credentials.algorithm,
                })(headers, params, url, serverMetadata);
              },
            };
      return {
        ...signed,
        get redirectUrl() {
          return undefined;
        },
        get clientMetadata() {
          return metadata;
        },
        clientInformation: () => ({
          client_id: clientId,
          ...(clientSecret === undefined ? {} : { client_secret: clientSecret }),
          issuer,
        }),
        tokens: async () => (await this.#load()).tokens as StoredOAuthTokens | undefined,
        saveTokens: (tokens) =>
          this.#update((credentials) => {
            credentials.tokens = tokens as unknown as JsonObject;
          }),
        redirectToAuthorization: () => {
          throw new McpAuthorizationError(
            this.#server,
            `MCP server "${this.#server}": the client credentials grant has no consent step.`,
          );
        },
        saveCodeVerifier: () => undefined,
        codeVerifier: () => '',
        prepareTokenRequest: (requested) => {
          const params = new URLSearchParams({ grant_type: 'client_credentials' });
          const wanted = requested ?? scope;
          if (wanted) params.set('scope', wanted);
          return params;
        },
        invalidateCredentials: (what) =>
          this.#update((credentials) => {
            if (what === 'all' || what === 'tokens') credentials.tokens = undefined;
          }),
      };
    }
    const code = auth as McpAuthorizationCodeOptions;
    const redirect = String(code.redirectUrl);
    const preRegistered = code.client;
    const metadata: OAuthClientMetadata = {
      client_name: code.clientName ?? 'troupe',
      redirect_uris: [redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: preRegistered?.clientSecret ? 'client_secret_basic' : 'none',
      ...(scope ? { scope } : {}),
    };
    const provider: OAuthClientProvider = {
      ...(code.clientMetadataUrl ? { clientMetadataUrl: code.clientMetadataUrl } : {}),
      get redirectUrl() {
        return redirect;
      },
      get clientMetadata() {
        return metadata;
      },
      state: () => {
        const state = randomBytes(16).toString('base64url');
        this.#states.add(state);
        return state;
      },
      clientInformation: async () =>
        preRegistered
          ? {
              client_id: preRegistered.clientId,
              ...(preRegistered.clientSecret ? { client_secret: preRegistered.clientSecret } : {}),
            }
          : ((await this.#load()).client as StoredOAuthClientInformation | undefined),
      tokens: async () => (await this.#load()).tokens as StoredOAuthTokens | undefined,
      saveTokens: (tokens) =>
        this.#update((credentials) => {
          credentials.tokens = tokens as unknown as JsonObject;
        }),
      redirectToAuthorization: (url) => {
        const state = url.searchParams.get('state');
        if (state !== null && this.#verifier !== undefined) this.#verifiers.set(state, this.#verifier);
        this.#pending = url;
        this.#inFlow = true;
      },
      saveCodeVerifier: (verifier) => {
        this.#verifier = verifier;
      },
      codeVerifier: () => {
        if (this.#verifier === undefined)
          throw new McpAuthorizationError(
            this.#server,
            `MCP server "${this.#server}": no authorization is in progress.`,
          );
        return this.#verifier;
      },
      saveDiscoveryState: (state) => {
        this.#discovery = state;
      },
      discoveryState: () => (this.#inFlow ? this.#discovery : undefined),
      invalidateCredentials: async (what) => {
        if (what === 'verifier' || what === 'discovery') {
          if (what === 'verifier') this.#verifier = undefined;
          else this.#discovery = undefined;
          return;
        }
        await this.#update((credentials) => {
          if (what === 'all' || what === 'tokens') credentials.tokens = undefined;
          if ((what === 'all' || what === 'client') && !preRegistered) credentials.client = undefined;
        });
        if (what === 'all') this.#discovery = undefined;
      },
    };
    if (!preRegistered)
      provider.saveClientInformation = (client) =>
        this.#update((credentials) => {
          credentials.client = client as unknown as JsonObject;
        });
    return provider;
  }
}
