import { askHuman, createAgentSystem, defineAgent, run, tool } from 'troupe';
import { type ScriptedTurn, scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const pay = tool({
  name: 'pay',
  description: 'pays',
  input: z.object({ cents: z.number() }),
  needsApproval: true,
  execute: ({ cents }) => `paid ${cents}`,
});

const batch: ScriptedTurn = {
  toolCalls: [
    { id: 'p1', name: 'pay', args: { cents: 5 } },
    { id: 'p2', name: 'pay', args: { cents: 7 } },
    { id: 'q1', name: 'ask_human', args: { question: 'which card?' } },
  ],
  stopReason: 'tool_use',
};

/** The tool messages the model was sent on its second call. */
function toolAnswers(model: ReturnType<typeof scriptedModel>) {
  return (model.requests[1]?.messages ?? []).flatMap((message) =>
    message.role === 'tool' ? [{ id: message.toolCallId, content: message.content }] : [],
  );
}

describe('decisions people take reach the model', () => {
  it("a session's rejection reason and answer are the calls' results; the approved call runs", async () => {
    const model = scriptedModel([batch, { text: 'done' }]);
    const system = createAgentSystem();
    const session = system.spawn(
      defineAgent({ name: 'clerk', instructions: '', model, tools: [pay, askHuman()] }),
      'pay',
    );
    for (let i = 0; i < 200 && session.pendingApprovals().length < 3; i++)
      await new Promise((resolve) => setTimeout(resolve, 2));
    await session.reject('p1', 'too much');
    await session.approve('p2');
    await session.answer('q1', 'the blue one');
    expect(await session.result).toMatchObject({ status: 'completed', text: 'done' });
    expect(toolAnswers(model)).toEqual([
      { id: 'p1', content: 'Not run: a person rejected this call: too much' },
      { id: 'p2', content: 'paid 7' },
      { id: 'q1', content: 'the blue one' },
    ]);
    await system.shutdown();
  });

  it('run() with onApproval: a rejected call is answered with the reason', async () => {
    const model = scriptedModel([
      { toolCalls: [{ id: 'p1', name: 'pay', args: { cents: 5 } }], stopReason: 'tool_use' },
      { text: 'done' },
    ]);
    const result = await run(defineAgent({ name: 'clerk', instructions: '', model, tools: [pay] }), 'pay', {
      onApproval: () => ({ type: 'reject', reason: 'not today' }),
    });
    expect(result.status).toBe('completed');
    expect(toolAnswers(model)).toEqual([
      { id: 'p1', content: 'Not run: a person rejected this call: not today' },
    ]);
  });
});
