/**
 * Troupe on Restate: the same agent definitions served as Restate virtual objects (one per agent, keyed by session
 * id), for when one process is not enough. Needs the optional peer dependency `@restatedev/restate-sdk` and a
 * Restate server (see the Restate guide, docs/restate.md).
 */
import { assertPeerInstalled } from '../core/optional-peer.ts';

// The modules that serve agents import the SDK statically, so they are loaded only once it is known to be there:
// without it, importing this entry point fails with a ConfigError that names the package and its install command.
assertPeerInstalled({ package: '@restatedev/restate-sdk' }, "import 'troupe/restate'");
const agentObjects = await import('./agent-objects.ts');
const serve = await import('./serve.ts');

/**
 * The agents as Restate virtual objects, one per agent, keyed by session id: bind them to an endpoint
 * (`restate.createEndpointHandler({ services: restateAgents([triage]) })`, or `serveAgents`). Throws a ConfigError
 * for agents or options Restate cannot serve, saying why.
 */
export const restateAgents: typeof agentObjects.restateAgents = agentObjects.restateAgents;
/**
 * Serves the agents' virtual objects (see restateAgents) over HTTP/2, the protocol Restate talks to endpoints in.
 * Resolves once it listens. Throws a ConfigError (synchronously) for what restateAgents refuses.
 */
export const serveAgents: typeof serve.serveAgents = serve.serveAgents;

export type {
  AgentObject,
  AgentObjectHandlers,
  ImportRequest,
  RestateAgentsOptions,
  RestateOptionsArgument,
} from './agent-objects.ts';
export type { AppliedDecision, DecisionReceipt, DecisionRequest } from './approvals.ts';
export {
  type RestateAgentsClient,
  type RestateClientOptions,
  RestateRequestError,
  type RestateSession,
  restateClient,
  type SendOptions,
} from './client.ts';
export type { ContextRequest, ContextSource } from './restate-options.ts';
export type { ServeAgentsOptions, ServedEndpoint } from './serve.ts';
export type {
  SessionStatusView,
  StoredApproval,
  StoredConversation,
  StoredTurn,
  TurnStatus,
  TurnSummary,
} from './state.ts';
export type { DelegateLimits, DelegateRequest } from './turn.ts';
