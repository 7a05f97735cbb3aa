import {
  ApprovalError,
  type ApprovalRequest,
  askHuman,
  ConfigError,
  createAgentSystem,
  createMemoryStore,
  defineAgent,
  type RunEvent,
  run,
  stream,
  tool,
  validateHistory,
} from 'troupe';
import { type ScriptedTurn, scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { dyingStore } from '../support/dying-store.ts';
import { until } from '../support/until.ts';

function payments() {
  const paid: number[] = [];
  const pay = tool({
    name: 'pay',
    description: 'pays an amount',
    input: z.object({ cents: z.number(), card: z.string() }),
    secret: ['card'],
    // Small amounts go through; larger ones wait for a person.
    needsApproval: ({ cents }) => cents > 100,
    execute: ({ cents }) => {
      paid.push(cents);
      return `paid ${cents}`;
    },
  });
  return { pay, paid };
}

const payTurn = (...amounts: number[]): ScriptedTurn => ({
  toolCalls: amounts.map((cents, index) => ({
    id: `pay_${index}`,
    name: 'pay',
    args: { cents, card: '4242' },
  })),
  stopReason: 'tool_use',
});

describe('approvals: tool calls that wait for people', () => {
  it('pause the run until a person decides; small amounts run at once, the rejected reason goes to the model', async () => {
    const { pay, paid } = payments();
    const model = scriptedModel([payTurn(50, 500, 900), { text: 'done' }]);
    const agent = defineAgent({ name: 'clerk', instructions: '', model, tools: [pay] });
    const system = createAgentSystem();
    const session = system.spawn(agent, 'pay them', { sessionId: 'shop-1' });
    const seen: RunEvent[] = [];
    void (async () => {
      for await (const event of session.events()) seen.push(event);
    })();
    await until(() => session.pendingApprovals().length === 2);
    expect(session.status).toBe('awaiting');
    expect(paid).toEqual([50]);
    const pending = session.pendingApprovals();
    expect(pending.map((request) => [request.callId, request.tool, request.kind])).toEqual([
      ['pay_1', 'pay', 'approval'],
      ['pay_2', 'pay', 'approval'],
    ]);
    // The declared secret never reaches the request a person sees, nor the events.
    expect(pending[0]?.args).toEqual({ cents: 500, card: '[redacted]' });
    expect(await system.approvals()).toHaveLength(2);

    await session.approve('pay_1');
    expect(paid).toEqual([50]); // waits until every call of the batch is decided
    await session.reject('pay_2', 'over the daily limit');
    const result = await session.result;
    expect(result).toMatchObject({ status: 'completed', text: 'done' });
    expect(paid).toEqual([50, 500]);
    const answers = result.history.filter((message) => message.role === 'tool');
    expect(answers.map((message) => message.content)).toEqual([
      'paid 50',
      'paid 500',
      'Not run: a person rejected this call: over the daily limit',
    ]);
    validateHistory(result.history);
    await until(() => seen.some((event) => event.type === 'run_end'));
    expect(
      seen.filter((event) => event.type === 'approval_requested').map((event) => event.data),
    ).toHaveLength(2);
    expect(
      seen
        .filter((event) => event.type === 'approval_decided')
        .map((event) => (event.type === 'approval_decided' ? event.data.decision.type : '')),
    ).toEqual(['approve', 'reject']);
    expect(JSON.stringify(seen)).not.toContain('4242');
    await system.shutdown();
  });

  it('askHuman delegates a question to a person and uses the answer', async () => {
    const model = scriptedModel((request, index) =>
      index === 0
        ? {
            toolCalls: [{ id: 'q', name: 'ask_human', args: { question: 'Which colour?' } }],
            stopReason: 'tool_use',
          }
        : { text: `You said ${String(request.messages.at(-1)?.content)}` },
    );
    const agent = defineAgent({ name: 'asker', instructions: '', model, tools: [askHuman()] });
    const system = createAgentSystem();
    const session = system.spawn(agent, 'paint it');
    await until(() => session.pendingApprovals().length === 1);
    expect(session.pendingApprovals()[0]).toMatchObject({ kind: 'question', question: 'Which colour?' });
    await expect(session.approve('q')).rejects.toBeInstanceOf(ApprovalError);
    await session.answer('q', 'blue');
    expect((await session.result).text).toBe('You said blue');
    await system.shutdown();
  });

  it('refuses decisions that do not fit: unknown ids, a second decision, an answer to an approval', async () => {
    const { pay } = payments();
    const agent = defineAgent({
      name: 'clerk',
      instructions: '',
      model: scriptedModel([payTurn(500), { text: 'ok' }]),
      tools: [pay],
    });
    const system = createAgentSystem();
    const session = system.spawn(agent, 'pay');
    await until(() => session.pendingApprovals().length === 1);
    await expect(session.approve('nope')).rejects.toThrow(/no call waits under this id/);
    await expect(session.answer('pay_0', 'yes')).rejects.toThrow(/approve\(\) or reject\(\)/);
    await expect(session.reject('pay_0', '')).rejects.toBeInstanceOf(ConfigError);
    await session.approve('pay_0');
    await expect(session.approve('pay_0')).rejects.toThrow(/already approved/);
    expect((await session.result).text).toBe('ok');
    await system.shutdown();
  });

  it('run() and stream() decide through onApproval, and refuse an agent that waits for people without one', async () => {
    const { pay, paid } = payments();
    const agent = (turns: ScriptedTurn[]) =>
      defineAgent({ name: 'clerk', instructions: '', model: scriptedModel(turns), tools: [pay] });
    await expect(run(agent([payTurn(500)]), 'pay')).rejects.toBeInstanceOf(ConfigError);
    expect(() => stream(agent([payTurn(500)]), 'pay')).toThrow(ConfigError);
    const asked: ApprovalRequest[] = [];
    const result = await run(agent([payTurn(500, 700), { text: 'done' }]), 'pay', {
      onApproval: (request) => {
        asked.push(request);
        return request.callId === 'pay_0' ? { type: 'approve' } : { type: 'reject', reason: 'no' };
      },
    });
    expect(result.text).toBe('done');
    expect(asked.map((request) => request.callId)).toEqual(['pay_0', 'pay_1']);
    expect(paid).toEqual([500]);
    const failing = stream(agent([payTurn(500), { text: 'fine' }]), 'pay', {
      onApproval: () => {
        throw new Error('approver offline');
      },
    });
    const final = await failing.result;
    expect(final.history.find((message) => message.role === 'tool')?.content).toContain('approver offline');
    // A decision of the wrong kind (an answer to an approval) rejects the call instead of leaving the run waiting.
    const mismatched = await run(agent([payTurn(500), { text: 'went on' }]), 'pay', {
      onApproval: () => ({ type: 'answer', text: 'yes' }),
    });
    expect(mismatched.text).toBe('went on');
    expect(mismatched.history.find((message) => message.role === 'tool')?.content).toContain('does not fit');
  });

  it('a decision made by another process (another system on the same store) reaches a waiting session', async () => {
    const store = createMemoryStore();
    const { pay, paid } = payments();
    const agent = defineAgent({
      name: 'clerk',
      instructions: '',
      model: scriptedModel([payTurn(500), { text: 'approved elsewhere' }]),
      tools: [pay],
    });
    const owner = createAgentSystem({ store, approvalPollMs: 10 });
    const session = owner.spawn(agent, 'pay', { sessionId: 'remote' });
    await until(() => session.pendingApprovals().length === 1);
    const elsewhere = createAgentSystem({ store });
    expect((await elsewhere.approvals()).map((record) => record.callId)).toEqual(['pay_0']);
    await elsewhere.approve('remote', 'pay_0');
    await expect(elsewhere.approve('remote', 'pay_0')).rejects.toBeInstanceOf(ApprovalError);
    expect((await session.result).text).toBe('approved elsewhere');
    expect(paid).toEqual([500]);
    await owner.shutdown();
    await elsewhere.shutdown();
  });

  it('an approval survives the process that asked: decided while it is down, applied when it is recovered', async () => {
    const store = createMemoryStore();
    const dying = dyingStore(store);
    const { pay, paid } = payments();
    const agent = (turns: ScriptedTurn[]) =>
      defineAgent({ name: 'clerk', instructions: '', model: scriptedModel(turns), tools: [pay] });
    const first = createAgentSystem({ store: dying.store });
    const asking = first.spawn(agent([payTurn(500, 600)]), 'pay', { sessionId: 'crashy' });
    await until(() => asking.pendingApprovals().length === 2);
    dying.kill();
    await first.shutdown();

    const approver = createAgentSystem({ store });
    expect(await approver.interrupted()).toMatchObject([
      { sessionId: 'crashy', status: 'awaiting', pendingApprovals: 2 },
    ]);
    await approver.approve('crashy', 'pay_0');
    await approver.reject('crashy', 'pay_1', 'not this one');

    const model = scriptedModel([{ text: 'finished after recovery' }]);
    // recover() runs the sessions with the agents the recovering system knows (here: a new model).
    const recovering = createAgentSystem({
      store,
      agents: [defineAgent({ name: 'clerk', instructions: '', model, tools: [pay] })],
    });
    const { sessions, failures } = await recovering.recover();
    expect(failures).toEqual([]);
    expect(sessions.map((session) => session.sessionId)).toEqual(['crashy']);
    const result = await (sessions[0] as (typeof sessions)[number]).result;
    expect(result.text).toBe('finished after recovery');
    expect(paid).toEqual([500]);
    expect(model.calls).toBe(1);
    validateHistory(result.history);
    await recovering.shutdown();
    await approver.shutdown();
  });
});
