import type { Agent } from '../agent/define-agent.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import { ConfigError } from '../core/errors.ts';
import { type ResolvedPii, resolvePii } from '../pii/pii-options.ts';
import type { BudgetLimit } from '../resources/ledger.ts';
import { checkReachablePrices } from '../resources/priced-agents.ts';
import { checkBudget } from '../resources/resource-config.ts';

/**
 * Which options the Restate entry points take, and why they refuse the others. A feature that holds in-process
 * either holds on Restate too or is refused here with a ConfigError that says why: nothing is silently ignored.
 */

/** What the `context` function of restateAgents is asked for: the run context of one turn. */
export interface ContextRequest {
  /** The user's session id (also for an agent used as a tool, whose object has a key of its own). */
  sessionId: string;
  /** The agent whose object runs the turn (the session's object, or the object of an agent used as a tool). */
  agent: string;
}

/** Computes a turn's run context in the endpoint process; never journaled or stored. */
export type ContextSource<TContext> = (request: ContextRequest) => TContext | Promise<TContext>;

/** The options of restateAgents (and serveAgents), by name. */
export const restateAgentsOptionNames: ReadonlySet<string> = new Set([
  'objectName',
  'inactivityTimeout',
  'abortTimeout',
  'retryPolicy',
  'maxEffectRetries',
  'maxJournaledBytes',
  'maxEvents',
  'supervision',
  'context',
  'pii',
  'audit',
  'budget',
]);

/** The options serveAgents adds to restateAgents'. */
export const serveAgentsOptionNames: ReadonlySet<string> = new Set([
  'port',
  'hostname',
  'identityKeys',
  'logger',
  'register',
]);

/** Options of other entry points that cannot hold on Restate, with the reason the ConfigError gives. */
const refused = new Map<string, string>([
  [
    'resources',
    'a resource manager lives in one process, while the turns of a session run in any endpoint process and are replayed after a crash, so shared budgets and quotas would not hold; give `budget` for a budget per turn',
  ],
  ['tenant', 'tenants belong to a shared resource manager (`resources`), which Restate cannot honour'],
  ['parentScope', 'an agent used as a tool draws on its caller’s turn budget by itself'],
  [
    'inspect',
    'the inspector watches the actors of one process, while a turn may be replayed in another; read `events` instead',
  ],
  ['store', 'sessions live in the objects’ state on Restate'],
  ['history', 'a session keeps its conversation: import one with `importConversation`'],
  ['sessionId', 'the session id is the object key of each request'],
  ['signal', 'cancel a turn through Restate (its invocation), not with an AbortSignal'],
  ['clock', 'a turn reads journaled time'],
  ['onApproval', 'calls wait for people durably: decide them with `approve`, `reject` or `answer`'],
]);

/** Throws a ConfigError naming the first option that is unknown, or known and refused with the reason. */
export function checkOptionNames(options: object, known: ReadonlySet<string>, where: string): void {
  for (const name of Object.keys(options)) {
    if (known.has(name)) continue;
    const reason = refused.get(name);
    if (reason !== undefined)
      throw new ConfigError(`${where}: the option "${name}" does not apply on Restate: ${reason}.`);
    throw new ConfigError(`${where}: unknown option "${name}" (known: ${[...known].sort().join(', ')}).`);
  }
}

/** The cross-cutting features of every turn, checked. */
export interface TurnFeatures {
  /** The run context of a turn (see ContextSource). */
  context?: ContextSource<unknown>;
  pii?: ResolvedPii;
  audit?: AuditLog;
  /** The budget of each turn (an agent used as a tool draws on its caller's). */
  budget?: BudgetLimit;
}

export function featuresOf(
  options: { context?: unknown; pii?: unknown; audit?: unknown; budget?: unknown },
  agents: Iterable<Agent<unknown>>,
  where: string,
): TurnFeatures {
  const features: TurnFeatures = {};
  if (options.context !== undefined) {
    if (typeof options.context !== 'function')
      throw new ConfigError(
        `${where}: context must be a function ({ sessionId, agent }) => context, called in the endpoint process for each turn.`,
      );
    features.context = options.context as ContextSource<unknown>;
  }
  const pii = resolvePii(options.pii as Parameters<typeof resolvePii>[0], where);
  if (pii) features.pii = pii;
  if (options.audit !== undefined) {
    if ((options.audit as { kind?: unknown } | null)?.kind !== 'audit-log')
      throw new ConfigError(`${where}: audit must be an audit log from createAuditLog().`);
    features.audit = options.audit as AuditLog;
  }
  if (options.budget !== undefined) {
    const budget = options.budget as BudgetLimit;
    checkBudget(budget, `${where}: budget`);
    checkReachablePrices(agents, { budget }, { sessionId: 'each turn' });
    features.budget = { ...budget };
  }
  return features;
}
