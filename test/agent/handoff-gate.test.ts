import {
  contextType,
  createAgentSystem,
  createAuditLog,
  defineAgent,
  memoryAuditSink,
  type PermissionDecision,
  permissions,
  type RunEvent,
  run,
  stream,
  type ToolPermissionPolicy,
  tool,
} from 'troupe';
import { type ScriptedTurn, scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { until } from '../support/until.ts';

/**
 * A handoff is a tool call: the caller's permission policy is asked about `transfer_to_<target>` like about any
 * other call, and a person approves it when the policy asks, before the conversation moves.
 */

interface Caller {
  role: 'admin' | 'user';
}

const transfer = (id = 'h1'): ScriptedTurn => ({
  toolCalls: [{ id, name: 'transfer_to_helper', args: { reason: 'it knows' } }],
  stopReason: 'tool_use',
});

/** `front` hands off to `helper`; `helper` has no policy and runs `remove`, which `front`'s policy denies. */
function desk(policy: ToolPermissionPolicy<Caller>, frontTurns: ScriptedTurn[]) {
  const ran: string[] = [];
  const remove = tool({
    name: 'remove',
    description: 'Removes things.',
    input: z.object({ what: z.string() }),
    execute: ({ what }) => {
      ran.push(what);
      return `removed ${what}`;
    },
  });
  const helper = defineAgent({
    name: 'helper',
    description: 'Helps.',
    contextType: contextType<Caller>(),
    instructions: '',
    model: scriptedModel([
      { toolCalls: [{ id: 'r1', name: 'remove', args: { what: 'everything' } }], stopReason: 'tool_use' },
      { text: 'helper: removed' },
    ]),
    tools: [remove],
  });
  const front = defineAgent({
    name: 'front',
    contextType: contextType<Caller>(),
    instructions: '',
    model: scriptedModel(frontTurns),
    tools: [remove],
    handoffs: [helper],
    permissions: policy,
  });
  return { front, ran };
}

const userPolicy = permissions.byRole<Caller>({ user: ['search'] }, (context) => context.role);
const denyAll = (call: { tool: string }): PermissionDecision => ({
  decision: 'deny',
  reason: `no ${call.tool} for you`,
});

function toolAnswers(history: readonly { role: string; content?: unknown }[]): unknown[] {
  return history.filter((message) => message.role === 'tool').map((message) => message.content);
}

describe('handoffs pass the tool gate', () => {
  it('in a session, a handoff the policy denies does not happen: the model reads why, a permission event and an audit record say so', async () => {
    const sink = memoryAuditSink();
    const audit = createAuditLog({ sink });
    const system = createAgentSystem({ audit });
    const { front, ran } = desk(userPolicy, [transfer(), { text: 'front: I cannot hand you over' }]);
    const session = system.spawn(front, 'remove everything', { context: { role: 'user' } });
    const events: RunEvent[] = [];
    const reading = (async () => {
      for await (const event of session.events({ after: -1 })) events.push(event);
    })();
    const result = await session.result;
    expect(result).toMatchObject({
      status: 'completed',
      agent: 'front',
      text: 'front: I cannot hand you over',
    });
    expect(result.path).toEqual(['front']);
    expect(ran).toEqual([]);
    expect(toolAnswers(result.history)).toEqual([
      'Error: permission denied: the call to "transfer_to_helper" was not run: role "user" may not call "transfer_to_helper"',
    ]);
    await system.shutdown();
    await reading;
    expect(events.filter((event) => event.type === 'handoff')).toEqual([]);
    expect(events.filter((event) => event.type === 'permission').map((event) => event.data)).toEqual([
      {
        tool: 'transfer_to_helper',
        callId: 'h1',
        decision: 'deny',
        reason: 'role "user" may not call "transfer_to_helper"',
      },
    ]);
    await audit.close();
    expect(sink.records.filter((record) => record.type === 'permission')).toMatchObject([
      { agent: 'front', data: { tool: 'transfer_to_helper', decision: 'deny' } },
    ]);
  });

  it('the same policy lets a handoff through when it allows it', async () => {
    const { front, ran } = desk(() => 'allow', [transfer()]);
    const system = createAgentSystem();
    const session = system.spawn(front, 'remove everything', { context: { role: 'admin' } });
    const events: RunEvent[] = [];
    const reading = (async () => {
      for await (const event of session.events({ after: -1 })) events.push(event);
    })();
    const result = await session.result;
    expect(result).toMatchObject({ status: 'completed', agent: 'helper', text: 'helper: removed' });
    expect(result.path).toEqual(['front', 'helper']);
    expect(ran).toEqual(['everything']);
    await system.shutdown();
    await reading;
    // A handoff let through is announced by the session's handoff event, not as a tool call of its own.
    expect(
      events
        .filter((event) => ['tool_call', 'handoff'].includes(event.type))
        .map((event) => `${event.agent}:${event.type}`),
    ).toEqual(['front:handoff', 'helper:tool_call']);
  });

  it('a handoff the policy asks about waits for a person: approve moves the conversation, reject tells the model', async () => {
    for (const decision of ['approve', 'reject'] as const) {
      const { front, ran } = desk(
        (call) =>
          call.tool === 'transfer_to_helper' ? { decision: 'ask', reason: 'handoffs need a look' } : 'allow',
        [transfer(), { text: 'front: staying' }],
      );
      const system = createAgentSystem();
      const session = system.spawn(front, 'remove everything', { context: { role: 'user' } });
      await until(() => session.pendingApprovals().length === 1);
      expect(session.status).toBe('awaiting');
      expect(session.pendingApprovals()[0]).toMatchObject({
        callId: 'h1',
        tool: 'transfer_to_helper',
        kind: 'approval',
        agent: 'front',
      });
      expect(ran).toEqual([]);
      if (decision === 'approve') await session.approve('h1');
      else await session.reject('h1', 'not now');
      const result = await session.result;
      if (decision === 'approve') {
        expect(result).toMatchObject({ agent: 'helper', text: 'helper: removed' });
        expect(ran).toEqual(['everything']);
      } else {
        expect(result).toMatchObject({ agent: 'front', text: 'front: staying' });
        expect(ran).toEqual([]);
        expect(toolAnswers(result.history)).toEqual(['Not run: a person rejected this call: not now']);
      }
      await system.shutdown();
    }
  });

  it('the turn’s other calls wait on the handoff: they are not run, and after a refusal the model may call them again', async () => {
    const { front, ran } = desk(denyOnly('transfer_to_helper'), [
      {
        toolCalls: [
          { id: 'r0', name: 'remove', args: { what: 'first' } },
          { id: 'h1', name: 'transfer_to_helper', args: {} },
        ],
        stopReason: 'tool_use',
      },
      { text: 'front: done' },
    ]);
    const system = createAgentSystem();
    const result = await system.spawn(front, 'go', { context: { role: 'user' } }).result;
    expect(result.agent).toBe('front');
    expect(ran).toEqual([]);
    expect(toolAnswers(result.history)).toEqual([
      'Error: permission denied: the call to "transfer_to_helper" was not run: no transfer_to_helper for you',
      'Not run: the handoff to helper asked for in the same turn did not happen; call it again if it is still needed',
    ]);
    await system.shutdown();
  });

  it('run() (a private session) asks the policy too: a denied handoff does not happen and the target never runs', async () => {
    const sink = memoryAuditSink();
    const audit = createAuditLog({ sink });
    const { front, ran } = desk(denyAll, [transfer(), { text: 'front: no' }]);
    const result = await run(front, 'remove everything', { context: { role: 'user' }, audit });
    expect(result).toMatchObject({ status: 'completed', agent: 'front', text: 'front: no' });
    expect(ran).toEqual([]);
    expect(toolAnswers(result.history)).toEqual([
      'Error: permission denied: the call to "transfer_to_helper" was not run: no transfer_to_helper for you',
    ]);
    await audit.close();
    expect(sink.records.filter((record) => record.type === 'permission')).toMatchObject([
      { data: { tool: 'transfer_to_helper', decision: 'deny' } },
    ]);
  });

  it('in run(), an ask goes to onApproval (and is a denial without it)', async () => {
    const asks = (call: { tool: string }): PermissionDecision =>
      call.tool === 'transfer_to_helper' ? 'ask' : 'allow';
    const approved = desk(asks, [transfer()]);
    const requests: string[] = [];
    const running = stream(approved.front, 'remove everything', {
      context: { role: 'user' },
      onApproval: (request) => {
        requests.push(`${request.agent}:${request.tool}`);
        return { type: 'approve' };
      },
    });
    for await (const _event of running) {
      // drain
    }
    const result = await running.result;
    expect(requests).toEqual(['front:transfer_to_helper']);
    expect(result).toMatchObject({ agent: 'helper', text: 'helper: removed' });
    expect(approved.ran).toEqual(['everything']);

    const alone = desk(asks, [transfer(), { text: 'front: nobody to ask' }]);
    const denied = await run(alone.front, 'remove everything', { context: { role: 'user' } });
    expect(denied.agent).toBe('front');
    expect(alone.ran).toEqual([]);
    expect(toolAnswers(denied.history)[0]).toContain('nobody can decide in this run');
  });

  it('a handoff with arguments its schema refuses does not happen: the model reads the schema error', async () => {
    const { front, ran } = desk(
      () => 'allow',
      [
        {
          toolCalls: [{ id: 'h1', name: 'transfer_to_helper', args: { reason: 42 } }],
          stopReason: 'tool_use',
        },
        { text: 'front: oops' },
      ],
    );
    const system = createAgentSystem();
    const session = system.spawn(front, 'go', { context: { role: 'admin' } });
    const events: RunEvent[] = [];
    const reading = (async () => {
      for await (const event of session.events({ after: -1 })) events.push(event);
    })();
    const result = await session.result;
    expect(result.agent).toBe('front');
    expect(ran).toEqual([]);
    expect(String(toolAnswers(result.history)[0])).toMatch(
      /^Error: invalid arguments for tool "transfer_to_helper": reason: /,
    );
    await system.shutdown();
    await reading;
    // Refused like any call: announced and answered in the stream.
    expect(
      events
        .filter((event) => event.type === 'tool_call' || event.type === 'tool_response')
        .map((event) => event.type),
    ).toEqual(['tool_call', 'tool_response']);
  });
});

function denyOnly(name: string) {
  return (call: { tool: string }): PermissionDecision =>
    call.tool === name ? { decision: 'deny', reason: `no ${call.tool} for you` } : 'allow';
}
