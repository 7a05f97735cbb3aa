import http2 from 'node:http2';
import { createEndpointHandler, type LoggerTransport } from '@restatedev/restate-sdk';
import type { Agent } from '../agent/define-agent.ts';
import { auditConfigError } from '../audit/audit-log.ts';
import {
  agentObjects,
  auditOf,
  type RestateAgentsOptions,
  type RestateOptionsArgument,
} from './agent-objects.ts';
import { RestateRequestError } from './client.ts';
import { restateAgentsOptionNames, serveAgentsOptionNames } from './restate-options.ts';

export interface ServeAgentsOptions<TContext = unknown> extends RestateAgentsOptions<TContext> {
  /** Default 9080; 0 picks a free port. */
  port?: number;
  /** The interface to listen on. Default '127.0.0.1': put the endpoint where only your Restate server reaches it. */
  hostname?: string;
  /**
   * Public keys of the Restate server (`publickeyv1_...`): requests not signed by it are refused. Without them the
   * endpoint trusts whoever reaches it, so keep it on a private network.
   */
  identityKeys?: string[];
  /** Where the SDK logs (default: the console, at the level the RESTATE_LOGGING variable sets, INFO by default). */
  logger?: LoggerTransport;
  /**
   * The Restate server's admin URL (e.g. http://127.0.0.1:9070): once listening, the endpoint registers itself
   * there (`POST /deployments`). Leave it out when the endpoint is registered another way (the CLI, a deploy step)
   * or when Restate reaches it at another address than `url`.
   */
  register?: string;
}

/** A running endpoint: register `url` with the Restate server (`POST <admin>/deployments {"uri": url}`). */
export interface ServedEndpoint {
  port: number;
  url: string;
  /** Stops listening and closes the open HTTP/2 sessions. */
  close(): Promise<void>;
}

/**
 * Serves the agents' virtual objects (see restateAgents) over HTTP/2, the protocol Restate talks to endpoints in.
 * Resolves once it listens. Throws a ConfigError (synchronously) for what restateAgents refuses and for an option
 * that is unknown.
 */
export function serveAgents<TContext = unknown>(
  agents: readonly Agent<unknown, TContext>[],
  ...given: RestateOptionsArgument<ServeAgentsOptions<TContext>, TContext>
): Promise<ServedEndpoint> {
  const options = (given[0] ?? {}) as ServeAgentsOptions;
  let services: ReturnType<typeof agentObjects>;
  try {
    services = agentObjects(
      agents as readonly Agent<unknown>[],
      options,
      new Set([...restateAgentsOptionNames, ...serveAgentsOptionNames]),
      'serveAgents()',
    );
  } catch (error) {
    auditConfigError(auditOf(options), 'serveAgents()', error);
    throw error;
  }
  const server = http2.createServer(
    createEndpointHandler({
      services,
      ...(options.identityKeys ? { identityKeys: options.identityKeys } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
    }),
  );
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  const hostname = options.hostname ?? '127.0.0.1';
  const listening = new Promise<ServedEndpoint>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 9080, hostname, () => {
      server.off('error', reject);
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : (options.port ?? 9080);
      const host = hostname.includes(':') ? `[${hostname}]` : hostname;
      resolve({
        port,
        url: `http://${host}:${port}`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            for (const session of sessions) session.destroy();
          }),
      });
    });
  });
  const admin = options.register;
  if (admin === undefined) return listening;
  return listening.then(async (endpoint) => {
    try {
      await registerDeployment(admin, endpoint.url);
    } catch (error) {
      await endpoint.close();
      throw error;
    }
    return endpoint;
  });
}

/** Registers an endpoint with a Restate server (its services and handlers are discovered from it). */
async function registerDeployment(admin: string, uri: string): Promise<void> {
  const response = await fetch(`${admin.replace(/\/+$/, '')}/deployments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ uri }),
  });
  if (!response.ok)
    throw new RestateRequestError(
      response.status,
      `Registering ${uri} with ${admin} failed (${response.status}): ${await response.text()}`,
    );
}
