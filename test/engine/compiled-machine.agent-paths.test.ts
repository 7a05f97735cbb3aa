import { describe, expect, it } from 'vitest';
import { fromCallback } from 'xstate';
import { agentMachine } from '../../src/machines/agent.ts';
import { groupMachine } from '../../src/machines/supervisor-group.ts';
import { pathConfigs } from '../machines/agent-paths.ts';
import { definedTransitions, takenTransitions } from './differential.ts';
import { agentReplays, groupReplays, replayOnBoth, sessionOnlyAgentReplays } from './troupe-paths.ts';

/**
 * The agent machine and the group supervisor on the compiled interpreter (src/engine) and on XState's: every path
 * the model-based tests generate (test/machines/agent-paths.ts, with the configurations of agent.paths.test.ts,
 * plus the inputs only a session gives: a handoff tool, resumes from checkpoints; the group's from
 * test/machines/session-paths.ts) is replayed on both with the differential harness (./differential.ts), which
 * records the commands the agent emits (and compares them). The replays take every transition of both definitions.
 */

const inertAgent = fromCallback(() => undefined) as unknown as typeof agentMachine;

describe('the agent machine: every generated path on both interpreters', () => {
  const taken = new Set<string>();

  for (const config of pathConfigs) {
    it(`${config.name}`, async () => {
      const replays = agentReplays(config);
      expect(replays.length).toBeGreaterThan(10);
      takenTransitions(await replayOnBoth(agentMachine, replays, {}), taken);
    });
  }

  it('session-only inputs: handoff tools, resumes from checkpoints', async () => {
    const replays = sessionOnlyAgentReplays();
    expect(replays.length).toBeGreaterThan(10);
    takenTransitions(await replayOnBoth(agentMachine, replays, {}), taken);
  });

  it('the replays take every transition of the definition', () => {
    expect(definedTransitions(agentMachine).filter((name) => !taken.has(name))).toEqual([]);
  });
});

describe('the group supervisor: every generated path on both interpreters', () => {
  it('every path, taking every transition of the definition', async () => {
    const replays = groupReplays();
    expect(replays.length).toBeGreaterThan(10);
    const taken = takenTransitions(
      await replayOnBoth(groupMachine, replays, { actors: { agent: inertAgent } }),
    );
    expect(definedTransitions(groupMachine).filter((name) => !taken.has(name))).toEqual([]);
  });
});
