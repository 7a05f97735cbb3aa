import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { defaultLimits } from '../../src/core/limits.ts';
import { type AgentContext, agentMachine, agentOutputOf } from '../../src/machines/agent.ts';

// The machine's output is its context with the groups (`config`, `answer`) flattened: every field, once, in the
// order the groups and counters have in the context, whatever the output is built with.

const usage = { input: 1, output: 1, cached: 0, reasoning: 0 };

function flattened(context: AgentContext): Record<string, unknown> {
  const { config, answer, ...counters } = context;
  return { ...config, ...answer, ...counters };
}

describe('agentOutputOf', () => {
  it('flattens a finished run’s context: the same fields, values and order as the groups spread in turn', () => {
    const actor = createActor(agentMachine, {
      input: {
        sessionId: 's1',
        agent: 'helper',
        limits: defaultLimits,
        toolNames: ['search'],
        hasOutputSchema: false,
        history: [{ role: 'user', content: 'go' }],
        baseLength: 0,
      },
    }).start();
    const call = { id: 'c1', name: 'search', args: { q: 'x' } };
    actor.send({
      type: 'model.response',
      response: { text: '', toolCalls: [call], stopReason: 'tool_use', usage },
    });
    actor.send({
      type: 'tools.done',
      results: [
        {
          callId: 'c1',
          name: 'search',
          content: 'found',
          isError: false,
          executed: true,
          degraded: false,
          attempts: 1,
        },
      ],
    });
    actor.send({
      type: 'model.response',
      response: { text: 'done', toolCalls: [], stopReason: 'end_turn', usage },
    });
    const snapshot = actor.getSnapshot();
    expect(snapshot.status).toBe('done');
    const expected = flattened(snapshot.context);
    const output = agentOutputOf(snapshot.context);
    expect(Object.keys(output)).toEqual(Object.keys(expected));
    expect(output).toStrictEqual(expected);
    expect(snapshot.output).toStrictEqual(expected);
  });
});
