import { fromCallback } from 'xstate';
import type { Agent } from '../agent/define-agent.ts';
import { TroupeError, toErrorInfo } from '../core/errors.ts';
import { validateHistory } from '../core/history.ts';
import type { AgentCheckpoint } from '../machines/agent.ts';
import type { SessionCommand } from '../machines/session.ts';

/** What a running session's effects need besides the command: its agents (for filters) and its checkpoints. */
export interface SessionRuntime {
  agents: ReadonlyMap<string, Agent<unknown>>;
  sessionId: string;
  /** The last committed checkpoint of `agent` in `segment`, to resume from. */
  checkpoint(agent: string, segment: number): AgentCheckpoint | undefined;
}

const sessionRuntimes = new Map<string, SessionRuntime>();

export function registerSessionRuntime(runtime: SessionRuntime): void {
  sessionRuntimes.set(runtime.sessionId, runtime);
}

export function unregisterSessionRuntime(sessionId: string): void {
  sessionRuntimes.delete(sessionId);
}

export function hasSessionRuntime(sessionId: string): boolean {
  return sessionRuntimes.has(sessionId);
}

/**
 * The session's effects: applies the handing-off agent's input filter (a user function) and finds the last
 * committed checkpoint after a restart or a recovery. Never throws: failures become `prepare.failed`.
 */
export const sessionEffectsLogic = fromCallback<SessionCommand, { sessionId: string }>(
  ({ input, sendBack, receive }) => {
    let closed = false;
    const reply = (event: Parameters<typeof sendBack>[0]) => {
      if (!closed) sendBack(event);
    };
    receive((command) => {
      const runtime = sessionRuntimes.get(input.sessionId);
      try {
        if (!runtime) throw new TroupeError('runtime_missing', `No runtime for session ${input.sessionId}.`);
        let history = command.history;
        const from = command.filterFrom === null ? undefined : runtime.agents.get(command.filterFrom);
        if (from?.handoffInputFilter) {
          history = [...from.handoffInputFilter({ history, from: from.name, to: command.agent })];
          validateHistory(history);
        }
        const resume = command.fromCheckpoint
          ? (runtime.checkpoint(command.agent, command.segment) ?? null)
          : null;
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
