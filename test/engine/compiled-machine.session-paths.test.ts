import { describe, expect, it } from 'vitest';
import { fromCallback } from 'xstate';
import type { agentMachine } from '../../src/machines/agent.ts';
import { sessionMachine } from '../../src/machines/session.ts';
import { sessionConfigs } from '../machines/session-paths.ts';
import { definedTransitions, record, takenTransitions } from './differential.ts';
import { replayOnBoth, sessionReplays } from './troupe-paths.ts';

/**
 * The session supervisor on the compiled interpreter (src/engine) and on XState's: every path its model-based test
 * generates (test/machines/session-paths.ts, as test/machines/session.paths.test.ts uses them: the same supervision
 * configurations, events and state keys) is replayed on both with the differential harness (./differential.ts), with inert agent
 * children and an effects actor that records the commands it receives. The replays take every transition.
 */

type AnyEvent = { type: string; [key: string]: unknown };

const effects = fromCallback<AnyEvent>(({ receive }) => {
  receive((command) => record(['effects', command.type]));
});
const inertAgent = fromCallback(() => undefined) as unknown as typeof agentMachine;

describe('the session supervisor: every generated path on both interpreters', () => {
  const taken = new Set<string>();

  for (const config of sessionConfigs) {
    it(`${config.name}`, async () => {
      const replays = sessionReplays(config);
      expect(replays.length).toBeGreaterThan(3);
      const observations = await replayOnBoth(sessionMachine, replays, {
        actors: { agent: inertAgent, sessionEffects: effects },
      });
      takenTransitions(observations, taken);
    });
  }

  it('the replays take every transition of the definition', () => {
    expect(definedTransitions(sessionMachine).filter((name) => !taken.has(name))).toEqual([]);
  });
});
