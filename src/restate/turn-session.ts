import { fromCallback } from 'xstate';
import type { HandoffInputFilter } from '../agent/handoff.ts';
import { TroupeError, toErrorInfo } from '../core/errors.ts';
import { validateHistory } from '../core/history.ts';
import { compileMachine } from '../engine/compiled-machine.ts';
import type { AgentCheckpoint } from '../machines/agent.ts';
import { type SessionCommand, type SessionMachine, sessionMachine } from '../machines/session.ts';
import { runtimeAgentMachine } from '../run/runtime-agent-machine.ts';

/** What the session machine's effects ask of the turn that runs it. */
export interface CheckpointSource {
  /** The agent's last checkpoint in this turn, for a supervised restart (null: start the agent afresh). */
  checkpointFor(agent: string, segment: number): AgentCheckpoint | null;
  /** The handoff input filter of an agent handing the conversation over. */
  filterFor(agent: string): HandoffInputFilter | undefined;
}

const sources = new Map<string, CheckpointSource>();

/** Makes a turn's checkpoints and filters reachable from its session machine (by the machine's session id). */
export function registerTurnSession(sessionId: string, source: CheckpointSource): () => void {
  sources.set(sessionId, source);
  return () => {
    if (sources.get(sessionId) === source) sources.delete(sessionId);
  };
}

/**
 * The session machine's effects inside a Restate handler: apply a handoff input filter, and resume a restarted
 * agent from the checkpoint the turn kept in memory (the journal replays everything before it). Never throws:
 * failures become `prepare.failed`.
 */
const turnSessionEffects = fromCallback<SessionCommand, { sessionId: string }>(
  ({ input, sendBack, receive }) => {
    let closed = false;
    receive((command) => {
      if (closed) return;
      try {
        const source = sources.get(input.sessionId);
        if (!source) throw new TroupeError('runtime_missing', `No turn for session ${input.sessionId}.`);
        let history = command.history;
        const filter = command.filterFrom === null ? undefined : source.filterFor(command.filterFrom);
        if (filter && command.filterFrom !== null) {
          history = [...filter({ history, from: command.filterFrom, to: command.agent })];
          validateHistory(history);
        }
        const resume = command.fromCheckpoint ? source.checkpointFor(command.agent, command.segment) : null;
        sendBack({ type: 'prepared', history, resume });
      } catch (error) {
        sendBack({ type: 'prepare.failed', error: toErrorInfo(error) });
      }
    });
    return () => {
      closed = true;
    };
  },
);

/** The session machine with the real agent runtime and the turn's effects; built once. */
export const restateSessionMachine: SessionMachine = compileMachine(
  sessionMachine.provide({ actors: { agent: runtimeAgentMachine, sessionEffects: turnSessionEffects } }),
);
