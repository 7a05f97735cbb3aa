import { describe, expect, it } from 'vitest';
import {
  allStates,
  allTransitions,
  applicableGraph,
  everyGuardrail,
  sessionOnlyStates,
} from '../../src/testing/agent-graph.ts';

const none = { input: false, parallelInput: false, output: false, tools: false };

describe('applicableGraph', () => {
  it('for an agent without guardrails: neither the guardrail states nor their transitions, nor a session’s', () => {
    const graph = applicableGraph(none);
    expect(allStates().filter((id) => !graph.states.includes(id))).toEqual(
      ['agent.running.checkingInput', 'agent.running.checkingOutput', ...sessionOnlyStates].sort(
        (a, b) => allStates().indexOf(a) - allStates().indexOf(b),
      ),
    );
    expect(graph.transitions.some((name) => /guardrail|checking/.test(name))).toBe(false);
    expect(graph.transitions.length).toBeLessThan(allTransitions().length);
  });

  it('with every kind of guardrail: every transition a plain run can take', () => {
    const graph = applicableGraph(everyGuardrail);
    expect(graph.transitions).toEqual(allTransitions());
    expect(graph.states).toEqual(allStates().filter((id) => !sessionOnlyStates.includes(id)));
  });

  it('one kind at a time: only tool guardrails add the blocked batch, not the checking states', () => {
    const graph = applicableGraph({ ...none, tools: true });
    expect(graph.states).not.toContain('agent.running.checkingInput');
    expect(graph.transitions).toContain('agent.running.toolUse.runningTools --tools.done[0]');
    expect(applicableGraph({ ...none, input: true }).states).toContain('agent.running.checkingInput');
    expect(applicableGraph({ ...none, input: true }).states).not.toContain('agent.running.checkingOutput');
  });
});
