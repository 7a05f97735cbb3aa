import { fromCallback } from 'xstate';
import type { Agent } from '../agent/define-agent.ts';
import { TroupeError, toErrorInfo } from '../core/errors.ts';
import { validateHistory } from '../core/history.ts';
import type { SessionCommand } from '../machines/session.ts';
import { checkpointFor } from '../persistence/session-store.ts';
import { checkpointKey, type SnapshotStore } from '../persistence/snapshot-store.ts';

/** What a running session's effects need besides the command: its agents (for filters) and its store. */
export interface SessionRuntime {
  agents: ReadonlyMap<string, Agent<unknown>>;
  store: SnapshotStore;
  sessionId: string;
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
 * The session's effects: applies the handing-off agent's input filter (a user function) and loads the last
 * checkpoint from the store after a restart. Never throws: failures become `prepare.failed`.
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
        if (!command.fromCheckpoint) {
          reply({ type: 'prepared', history, resume: null });
          return;
        }
        void Promise.resolve(runtime.store.get(checkpointKey(input.sessionId))).then(
          (stored) => reply({ type: 'prepared', history, resume: checkpointFor(stored, command) }),
          (error: unknown) => reply({ type: 'prepare.failed', error: toErrorInfo(error) }),
        );
      } catch (error) {
        reply({ type: 'prepare.failed', error: toErrorInfo(error) });
      }
    });
    return () => {
      closed = true;
    };
  },
);
