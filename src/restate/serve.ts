import http2 from 'node:http2';
import { createEndpointHandler, type LoggerTransport } from '@restatedev/restate-sdk';
import type { Agent } from '../agent/define-agent.ts';
import { type RestateAgentsOptions, restateAgents } from './agent-objects.ts';

export interface ServeAgentsOptions extends RestateAgentsOptions {
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
 * Resolves once it listens.
 */
export function serveAgents(
  agents: readonly Agent<unknown>[],
  options: ServeAgentsOptions = {},
): Promise<ServedEndpoint> {
  const services = restateAgents(agents, options);
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
  return new Promise((resolve, reject) => {
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
}
