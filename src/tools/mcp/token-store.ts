import type { JsonObject } from '../../core/json.ts';

/** Whose credentials for which server: tokens are kept per user and per MCP server URL. */
export interface McpCredentialKey {
  /** The MCP server's URL. */
  readonly server: string;
  /** The user the tokens were granted to (`auth.user`; `'default'` when not given). */
  readonly user: string;
}

/**
 * What is kept for one user of one server: the OAuth tokens and the client registration (when the client
 * registered itself), each stamped with the authorization server that issued it. All JSON.
 */
export interface McpStoredCredentials {
  tokens?: JsonObject | undefined;
  client?: JsonObject | undefined;
}

/**
 * Where OAuth tokens for MCP servers are kept, given as `mcpServer({ auth: { store } })`. Tokens live only here:
 * never in events, logs, traces or the inspector. Implement it over the application's own secret storage to keep
 * users signed in across restarts; the default (`memoryTokenStore()`) forgets them when the process ends.
 */
export interface McpTokenStore {
  load(key: McpCredentialKey): McpStoredCredentials | undefined | Promise<McpStoredCredentials | undefined>;
  save(key: McpCredentialKey, credentials: McpStoredCredentials): void | Promise<void>;
  delete(key: McpCredentialKey): void | Promise<void>;
}

/** A token store in this process's memory: each user's tokens last until the process ends. */
export function memoryTokenStore(): McpTokenStore {
  const entries = new Map<string, McpStoredCredentials>();
  const id = (key: McpCredentialKey) => JSON.stringify([key.server, key.user]);
  return {
    load: (key) => {
      const found = entries.get(id(key));
      return found === undefined ? undefined : structuredClone(found);
    },
    save: (key, credentials) => {
      entries.set(id(key), structuredClone(credentials));
    },
    delete: (key) => {
      entries.delete(id(key));
    },
  };
}
