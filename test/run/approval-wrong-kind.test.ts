import { type ApprovalDecision, askHuman, defineAgent, type RunEvent, stream, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * run() and stream() decide on calls that wait for people through `onApproval`. A decision of the wrong kind (an
 * approval for a question asked with askHuman, an answer to a tool that needs an approval) must still end the wait:
 * the call is rejected with a reason the model reads, and the run goes on.
 */

async function settles(events: RunEvent[], reading: Promise<void>, callId: string): Promise<void> {
  // Event-loop turns, not time: a decision is applied within a few of them.
  let done = false;
  void reading.then(() => {
    done = true;
  });
  for (let i = 0; i < 200 && !done; i++) await new Promise((resolve) => setImmediate(resolve));
  const answered = events.find((e) => e.type === 'tool_response' && e.data.callId === callId);
  expect(answered).toMatchObject({ data: { isError: true } });
  expect(done).toBe(true);
}

describe('onApproval decisions of the wrong kind', () => {
  it('approving a question (askHuman) rejects the call and the run ends', async () => {
    const agent = defineAgent({
      name: 'asker',
      instructions: 'x',
      model: scriptedModel([
        { toolCalls: [{ id: 'q1', name: 'ask_human', args: { question: 'why?' } }], stopReason: 'tool_use' },
        { text: 'fine' },
      ]),
      tools: [askHuman()],
    });
    const decisions: string[] = [];
    const s = stream(agent, 'go', {
      onApproval: (request): ApprovalDecision => {
        decisions.push(request.kind);
        return { type: 'approve' };
      },
    });
    const events: RunEvent[] = [];
    const reading = (async () => {
      for await (const event of s) events.push(event);
    })();
    await settles(events, reading, 'q1');
    expect(decisions).toEqual(['question']);
    expect(await s.result).toMatchObject({ status: 'completed', text: 'fine' });
  });

  it('answering a call that needs an approval rejects it and the run ends', async () => {
    const guarded = tool({
      name: 'guarded',
      description: 'needs a person',
      input: z.object({}),
      needsApproval: true,
      execute: () => 'ran',
    });
    const agent = defineAgent({
      name: 'worker',
      instructions: 'x',
      model: scriptedModel([
        { toolCalls: [{ id: 'g1', name: 'guarded', args: {} }], stopReason: 'tool_use' },
        { text: 'fine' },
      ]),
      tools: [guarded],
    });
    const s = stream(agent, 'go', { onApproval: () => ({ type: 'answer', text: 'yes' }) });
    const events: RunEvent[] = [];
    const reading = (async () => {
      for await (const event of s) events.push(event);
    })();
    await settles(events, reading, 'g1');
    expect(await s.result).toMatchObject({ status: 'completed', text: 'fine' });
  });
});
