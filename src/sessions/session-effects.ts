import { type AnyActorRef, fromCallback } from 'xstate';
import type { HandoffInputFilter } from '../agent/handoff.ts';
import { TroupeError, toErrorInfo } from '../core/errors.ts';
import { validateHistory } from '../core/history.ts';
import { parentOf } from '../engine/actor-links.ts';
import type { AgentCheckpoint } from '../machines/agent.ts';
import type { SessionCommand } from '../machines/session.ts';

/** What a session's effects ask of the session (or Restate turn) that runs the session machine. */
export interface SessionEffectsHost {
  /** The handoff input filter of an agent handing the conversation over. */
  filterFor(agent: string): HandoffInputFilter | undefined;
  /** The agent's last committed checkpoint in `segment`, to resume from (null: start the agent afresh). */
  checkpointFor(agent: string, segment: number): AgentCheckpoint | null;
}

const hostSlot = Symbol('troupe.sessionEffectsHost');

/** Gives a session machine's actor (created, not yet started) the host its effects ask. */
export function attachSessionEffectsHost(sessionActor: AnyActorRef, host: SessionEffectsHost): void {
  Object.defineProperty(sessionActor, hostSlot, { value: host, enumerable: false, configurable: true });
}

/**
 * The session's effects: applies the handing-off agent's input filter (a user function) and finds the last
 * committed checkpoint after a restart or a recovery. It finds its host on the session actor that runs it. Never
 * throws: failures become `prepare.failed`.
 */
export const sessionEffectsLogic = fromCallback<SessionCommand, { sessionId: string }>(
  ({ input, sendBack, receive, self }) => {
    let closed = false;
    const reply = (event: Parameters<typeof sendBack>[0]) => {
      if (!closed) sendBack(event);
    };
    const session = parentOf(self) as (AnyActorRef & { [hostSlot]?: SessionEffectsHost }) | undefined;
    receive((command) => {
      const host = session?.[hostSlot];
      try {
        if (!host) throw new TroupeError('runtime_missing', `No runtime for session ${input.sessionId}.`);
        let history = command.history;
        const filter = command.filterFrom === null ? undefined : host.filterFor(command.filterFrom);
        if (filter && command.filterFrom !== null) {
          history = [...filter({ history, from: command.filterFrom, to: command.agent })];
          validateHistory(history);
        }
        const resume = command.fromCheckpoint ? host.checkpointFor(command.agent, command.segment) : null;
        reply({ type: 'prepared', history, resume });
      } catch (error) {
        reply({ type: 'prepare.failed', error: toErrorInfo(error) });
      }
    });
    return () => {
      closed = true;
    };
  },
);
