import type { Agent } from '../agent/define-agent.ts';
import { ConfigError } from '../core/errors.ts';
import { validateHistory } from '../core/history.ts';
import type { Message, RunInput } from '../core/messages.ts';
import { randomUuid } from '../core/random-id.ts';
import type { SupervisionPolicy } from '../machines/session.ts';
import type { StoredSession, StoredSessionState, TurnCheckpoint } from '../persistence/store.ts';
import { sessionIdRunning } from '../run/live-sessions.ts';
import { checkRunInput } from '../run/run-options.ts';
import type { SessionEnvironment, SessionOptions, SessionStart } from './session.ts';
import { agentCatalog, supervisionOf } from './session-catalog.ts';

/** Everything a session is started from, worked out and checked before anything runs. */
export interface SessionPlan {
  sessionId: string;
  /** Every agent the session can reach, by name. */
  agents: Map<string, Agent<unknown>>;
  supervision: SupervisionPolicy;
  handoffLimits: { maxDepth: number; maxRevisits: number };
  /** The conversation before the first turn of this start. */
  history: readonly Message[];
  /** The input of the first turn this start runs (or resumes). */
  firstInput: RunInput;
  /** The stored turn being resumed, or null. */
  resumedTurn: TurnCheckpoint | null;
  /** Messages already queued behind the first turn (stored ones, then a restore's new input). */
  queued: RunInput[];
  /** The agent the session machine starts with. */
  startAgent: string;
  /** The session's row as the store has it (or a new one). */
  row: StoredSession;
  /** Seq of the last event in the session's log, -1 for none. */
  lastSeq: number;
  /** The stored state, for a restored session. */
  stored: StoredSessionState | undefined;
}

/**
 * Checks a session's definition and works out where it starts: fresh, resuming an interrupted turn, or
 * continuing a finished conversation with new input. Throws a ConfigError (or HistoryValidationError) for anything
 * wrong, before anything runs.
 */
export function planSession(
  entry: Agent<unknown>,
  input: RunInput,
  options: SessionOptions,
  environment: SessionEnvironment,
  start: SessionStart,
  now: number,
): SessionPlan {
  if (entry?.kind !== 'agent')
    throw new ConfigError('spawn(): the first argument must be an agent from defineAgent().');
  checkRunInput(input, 'spawn()');
  const stored = start.kind === 'fresh' ? undefined : start.stored;
  const history = stored ? stored.session.transcript : (options.history ?? []);
  validateHistory(history);
  const sessionId = stored?.session.id ?? options.sessionId ?? randomUuid();
  if (sessionIdRunning(sessionId))
    throw new ConfigError(`A session with id "${sessionId}" is already running.`);
  const agents = agentCatalog(entry, environment.agents);
  const kept = stored?.session.options;
  const supervision = supervisionOf(environment.supervision, kept?.supervision ?? options.supervision);
  const handoffLimits = {
    maxDepth: count(
      kept?.maxHandoffDepth ?? options.maxHandoffDepth,
      entry.maxHandoffDepth,
      'maxHandoffDepth',
    ),
    maxRevisits: count(
      kept?.maxHandoffRevisits ?? options.maxHandoffRevisits,
      entry.maxHandoffRevisits,
      'maxHandoffRevisits',
    ),
  };
  const resumedTurn = start.kind === 'resume' ? start.stored.session.turn : null;
  if (resumedTurn?.agent && !agents.has(resumedTurn.session.current))
    throw new ConfigError(
      `restore: session "${sessionId}" was held by "${resumedTurn.session.current}", which ${entry.name} cannot reach.`,
    );
  const queued: RunInput[] = [];
  if (start.kind === 'resume') {
    queued.push(...start.stored.session.queued);
    if (start.extraInput !== undefined) queued.push(start.extraInput);
  }
  const row: StoredSession = stored?.session ?? {
    id: sessionId,
    status: 'running',
    entry: entry.name,
    agent: entry.name,
    turns: 0,
    transcript: [...history],
    turn: null,
    queued: [],
    options: {
      maxHandoffDepth: handoffLimits.maxDepth,
      maxHandoffRevisits: handoffLimits.maxRevisits,
      supervision,
      ...(options.tenant !== undefined ? { tenant: options.tenant } : {}),
      ...(options.parentScope !== undefined ? { parentScope: options.parentScope } : {}),
      ...(options.budget !== undefined ? { budget: options.budget } : {}),
    },
    updatedAt: now,
  };
  return {
    sessionId,
    agents,
    supervision,
    handoffLimits,
    history,
    firstInput: resumedTurn ? resumedTurn.input : input,
    resumedTurn,
    queued,
    // A resumed turn continues with the agent its checkpoint names; a continued session with the one that answered.
    startAgent: resumedTurn?.agent ? resumedTurn.session.current : stored ? stored.session.agent : entry.name,
    row,
    lastSeq: stored?.lastSeq ?? -1,
    stored,
  };
}

function count(value: number | undefined, fallback: number, key: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0) throw new ConfigError(`${key} must be an integer >= 0.`);
  return value;
}
