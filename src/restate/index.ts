/**
 * Troupe on Restate: the same agent definitions served as Restate virtual objects (one per agent, keyed by session
 * id), for when one process is not enough. Needs the optional peer dependency `@restatedev/restate-sdk` and a
 * Restate server (see the README, "When one process is not enough").
 */
export {
  type AgentObject,
  type AgentObjectHandlers,
  type ImportRequest,
  type RestateAgentsOptions,
  type RestateOptionsArgument,
  restateAgents,
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
export { type ServeAgentsOptions, type ServedEndpoint, serveAgents } from './serve.ts';
export type {
  SessionStatusView,
  StoredApproval,
  StoredConversation,
  StoredTurn,
  TurnStatus,
  TurnSummary,
} from './state.ts';
export type { DelegateLimits, DelegateRequest } from './turn.ts';
