/**
 * The agent statechart alone: the real agent machine with an effects actor that answers every command at once (no
 * model, tools or event bus), for runs of `steps` tool steps. What a step costs the statechart runtime and nothing
 * else; shared by bench/profile.ts and the experiments.
 */
import { createActor, fromCallback } from 'xstate';
import { defaultLimits } from '../dist/index.js';
import { agentMachine } from '../dist/testing/index.js';

type Command = { type: string; history?: { role: string }[]; calls?: { id: string; name: string }[] };
const usage = { input: 1, output: 1, cached: 0, reasoning: 0 };

/** An effects actor that answers model calls (a tool call per step, then 'done') and tool batches at once. */
function instantEffects(steps: number) {
  return fromCallback<Command, { sessionId: string }>(({ receive, sendBack }) => {
    receive((command) => {
      if (command.type === 'model.call') {
        const results = (command.history ?? []).filter((message) => message.role === 'tool').length;
        const toolCalls =
          results < steps ? [{ id: `c${results}`, name: 'step', args: { step: results } }] : [];
        const response = toolCalls.length
          ? { text: '', toolCalls, stopReason: 'tool_use', usage }
          : { text: 'done', toolCalls, stopReason: 'end_turn', usage };
        sendBack({ type: 'model.response', response } as never);
      } else {
        const results = (command.calls ?? []).map((call) => ({
          callId: call.id,
          name: call.name,
          content: 'ok',
          isError: false,
          executed: true,
          degraded: false,
          attempts: 1,
        }));
        sendBack({ type: 'tools.done', results } as never);
      }
    });
  });
}

/** The agent machine on XState's interpreter with instant effects, and the input of a run of `steps` tool steps. */
export function statechartAlone(steps: number) {
  const machine = agentMachine.provide({ actors: { effects: instantEffects(steps) as never } });
  const input = {
    sessionId: 's',
    agent: 'bench',
    limits: { ...defaultLimits, maxSteps: steps + 1, maxToolCallsPerTool: null },
    toolNames: ['step'],
    hasOutputSchema: false,
    history: [{ role: 'user' as const, content: 'go' }],
    baseLength: 0,
  };
  /** One whole run on `logic` (the machine above, or a compiled copy); throws unless it ran every step. */
  const runOnce = (logic: typeof machine = machine) => {
    const snapshot = createActor(logic, { input }).start().getSnapshot();
    if (snapshot.status !== 'done' || snapshot.context.toolCallsRun !== steps)
      throw new Error('the run did not finish');
    return snapshot;
  };
  return { machine, input, runOnce };
}
