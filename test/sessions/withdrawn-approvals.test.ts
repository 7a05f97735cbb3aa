import {
  ApprovalError,
  createAgentSystem,
  createMemoryStore,
  defineAgent,
  type RunEvent,
  type Session,
  tool,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/*
 * A tool call that waits for a person, in a turn that ends other than by a suspension (aborted, the session
 * stopped): nobody will act on a decision any more, so the request is withdrawn in the store, announced, and a
 * decision given afterwards is refused.
 */

function clerk() {
  const pay = tool({
    name: 'pay',
    description: 'pays an amount',
    input: z.object({ cents: z.number() }),
    needsApproval: true,
    execute: ({ cents }) => `paid ${cents}`,
  });
  // A greeting is answered at once; any other message pays.
  const model = scriptedModel((request) => {
    const last = request.messages.at(-1);
    return last?.role === 'tool' || last?.content === 'hello'
      ? { text: 'done' }
      : { toolCalls: [{ id: 'pay_0', name: 'pay', args: { cents: 500 } }], stopReason: 'tool_use' };
  });
  return defineAgent({ name: 'clerk', instructions: '', model, tools: [pay] });
}

/** Waits for the approval request, collecting the session's events until the turn's end. */
function follow(session: Session) {
  const seen: RunEvent[] = [];
  let requested!: () => void;
  const asked = new Promise<void>((resolve) => {
    requested = resolve;
  });
  const ended = (async () => {
    for await (const event of session.events({ after: 0 })) {
      seen.push(event);
      if (event.type === 'approval_requested') requested();
      if (event.type === 'run_end' && event.data.stopReason !== 'completed') return;
    }
  })();
  return { seen, asked, ended };
}

describe('an approval whose turn ended', () => {
  it('is withdrawn when the turn is aborted: announced, not pending, and a decision is refused', async () => {
    const store = createMemoryStore();
    const system = createAgentSystem({ store });
    const session = system.spawn(clerk(), 'hello', { sessionId: 'shop-1' });
    await session.result;
    const controller = new AbortController();
    const turn = session.send('pay', { signal: controller.signal });
    const followed = follow(session);
    await followed.asked;
    expect(await system.approvals()).toMatchObject([{ callId: 'pay_0', status: 'pending' }]);
    controller.abort();
    expect((await turn).stopReason).toBe('aborted');
    await followed.ended;
    expect(await system.approvals()).toEqual([]);
    expect(session.pendingApprovals()).toEqual([]);
    expect(await store.approvals({ sessionId: 'shop-1' })).toMatchObject([
      { callId: 'pay_0', status: 'withdrawn', decision: { type: 'reject' } },
    ]);
    expect(followed.seen.filter((event) => event.type === 'approval_decided')).toMatchObject([
      { data: { callId: 'pay_0', decision: { type: 'reject', reason: 'the turn ended before a decision' } } },
    ]);
    const approving = session.approve('pay_0');
    await expect(approving).rejects.toBeInstanceOf(ApprovalError);
    await expect(approving).rejects.toThrow(/no longer waiting: the turn ended before a decision/);
    await system.shutdown();
  });

  it('is withdrawn when the session is stopped, and the system refuses a decision for it', async () => {
    const store = createMemoryStore();
    const system = createAgentSystem({ store });
    const session = system.spawn(clerk(), 'pay', { sessionId: 'shop-2' });
    const followed = follow(session);
    await followed.asked;
    await session.stop();
    expect(await system.approvals()).toEqual([]);
    expect(await store.approvals({ sessionId: 'shop-2' })).toMatchObject([
      { callId: 'pay_0', status: 'withdrawn' },
    ]);
    await expect(system.approve('shop-2', 'pay_0')).rejects.toThrow(/no longer waiting/);
    await system.shutdown();
  });
});
