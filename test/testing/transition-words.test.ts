import { describe, expect, it } from 'vitest';
import { agentMachine } from '../../src/machines/agent.ts';
import { allTransitions } from '../../src/testing/agent-graph.ts';
import { shortStateName, transitionWords } from '../../src/testing/transition-words.ts';

describe('transitionWords', () => {
  const ids = [...allTransitions(agentMachine.root, 'run'), ...allTransitions(agentMachine.root, 'session')];

  it('names a transition by its states, event and guards', () => {
    expect(transitionWords('agent.running.toolUse.callingModel --model.response[1]')).toBe(
      'toolUse.callingModel → runningTools on model response with tool calls',
    );
    expect(transitionWords('agent.running.finalOutput.decoding --[4]')).toBe(
      'decoding → finalOutput.callingModel with decode retries left',
    );
    expect(transitionWords('agent.running --abort[0]')).toBe('running → stopped on abort');
    expect(transitionWords('agent.running.toolUse.runningTools --tools.done[5]')).toBe(
      'runningTools → toolUse.callingModel on tool results otherwise',
    );
  });

  it('gives every transition of the agent statechart words of its own, with no id left as is', () => {
    const words = ids.map((id) => transitionWords(id));
    expect(new Set(words).size).toBe(ids.length);
    expect(words.filter((name) => name.includes(' --'))).toEqual([]);
  });

  it('leaves an id it does not know as it is, and shortens state names only as far as they stay unique', () => {
    expect(transitionWords('agent.nowhere --x[0]')).toBe('agent.nowhere --x[0]');
    expect(shortStateName('agent.running.toolUse.callingModel')).toBe('toolUse.callingModel');
    expect(shortStateName('agent.stopped')).toBe('stopped');
  });
});
