import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ConfigError,
  contextType,
  createAgentSystem,
  createSqliteStore,
  defineAgent,
  permissions,
  type RunEvent,
  run,
  stream,
  tool,
} from 'troupe';
import { type ScriptedTurn, scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { until } from '../support/until.ts';

interface Caller {
  role: 'admin' | 'user';
}

function tools() {
  const ran: string[] = [];
  const make = (name: string) =>
    tool({
      name,
      description: `${name} things`,
      input: z.object({ what: z.string() }),
      execute: ({ what }) => {
        ran.push(`${name}:${what}`);
        return `${name} ${what}`;
      },
    });
  return { ran, search: make('search'), remove: make('remove') };
}

const calls = (...names: string[]): ScriptedTurn => ({
  toolCalls: names.map((name, index) => ({ id: `c${index}`, name, args: { what: `x${index}` } })),
  stopReason: 'tool_use',
});

const byRole = permissions.byRole<Caller>({ admin: ['*'], user: ['search'] }, (context) => context.role);

function clerk(policy = byRole, model = scriptedModel([calls('search', 'remove'), { text: 'done' }])) {
  const { ran, search, remove } = tools();
  const agent = defineAgent({
    name: 'clerk',
    contextType: contextType<Caller>(),
    instructions: '',
    model,
    tools: [search, remove],
    permissions: policy,
  });
  return { agent, ran, model };
}

async function collect(events: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const seen: RunEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

describe('tool permissions', () => {
  it('a role policy denies a call: the tool never runs, the model gets an error result, a permission event says why', async () => {
    const { agent, ran } = clerk();
    const running = stream(agent, 'clean up', { context: { role: 'user' } });
    const events = await collect(running);
    const result = await running.result;
    expect(result).toMatchObject({ status: 'completed', text: 'done' });
    expect(ran).toEqual(['search:x0']);
    const answers = result.history
      .filter((message) => message.role === 'tool')
      .map((message) => message.content);
    expect(answers).toEqual([
      'search x0',
      'Error: permission denied: the call to "remove" was not run: role "user" may not call "remove"',
    ]);
    const decisions = events.filter((event) => event.type === 'permission').map((event) => event.data);
    expect(decisions).toEqual([
      { tool: 'remove', callId: 'c1', decision: 'deny', reason: 'role "user" may not call "remove"' },
    ]);
  });

  it('the same agent lets an admin run every tool', async () => {
    const { agent, ran } = clerk();
    const result = await run(agent, 'clean up', { context: { role: 'admin' } });
    expect(result.status).toBe('completed');
    expect(ran).toEqual(['search:x0', 'remove:x1']);
  });

  it('a policy that throws denies the call (fail closed), with the error as the reason', async () => {
    const { agent, ran } = clerk(() => {
      throw new Error('directory unreachable');
    });
    const result = await run(agent, 'clean up', { context: { role: 'admin' } });
    expect(ran).toEqual([]);
    const answers = result.history
      .filter((message) => message.role === 'tool')
      .map((message) => message.content);
    expect(answers[1]).toBe(
      'Error: permission denied: the call to "remove" was not run: the permission policy failed: directory unreachable',
    );
  });

  it('ask makes the call wait for a person in a session: approve runs it, reject tells the model', async () => {
    const policy = permissions.byRole<Caller>({ user: ['search'] }, (context) => context.role, {
      otherwise: 'ask',
    });
    const { agent, ran } = clerk(
      policy,
      scriptedModel([calls('search', 'remove'), calls('remove'), { text: 'done' }]),
    );
    const system = createAgentSystem();
    const session = system.spawn(agent, 'clean up', { context: { role: 'user' } });
    const events: RunEvent[] = [];
    const reading = (async () => {
      for await (const event of session.events({ after: -1 })) events.push(event);
    })();
    await until(() => session.pendingApprovals().length === 1);
    expect(session.status).toBe('awaiting');
    expect(ran).toEqual(['search:x0']); // allowed calls run at once; the asked one waits
    expect(session.pendingApprovals()[0]).toMatchObject({ callId: 'c1', tool: 'remove', kind: 'approval' });
    await session.approve('c1');
    await until(() => ran.length === 2 && session.pendingApprovals()[0]?.callId !== 'c1');
    await until(() => session.pendingApprovals().length === 1);
    expect(ran).toEqual(['search:x0', 'remove:x1']);
    // The model reused the id c0; the runtime gave the second call its own id.
    const second = session.pendingApprovals()[0]?.callId ?? '';
    await session.reject(second, 'not today');
    const result = await session.result;
    expect(result).toMatchObject({ status: 'completed', text: 'done' });
    expect(ran).toEqual(['search:x0', 'remove:x1']);
    expect(result.history.at(-2)?.content).toBe('Not run: a person rejected this call: not today');
    await system.shutdown();
    await reading;
    const types = events
      .filter((event) => ['permission', 'approval_requested', 'approval_decided'].includes(event.type))
      .map((event) => `${event.type}:${'callId' in event.data ? event.data.callId : ''}`);
    expect(types).toEqual([
      'permission:c1',
      'approval_requested:c1',
      'approval_decided:c1',
      `permission:${second}`,
      `approval_requested:${second}`,
      `approval_decided:${second}`,
    ]);
  });

  it('a call the policy asks about waits durably: it survives a shutdown and is decided after recover()', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'troupe-permissions-'));
    try {
      const path = join(directory, 'sessions.db');
      const policy = permissions.byRole<Caller>({ user: ['search'] }, (context) => context.role, {
        otherwise: 'ask',
      });
      const first = clerk(policy, scriptedModel([calls('remove')]));
      const before = createAgentSystem({ store: createSqliteStore(path) });
      const waiting = before.spawn(first.agent, 'clean up', { sessionId: 'p-1', context: { role: 'user' } });
      await until(() => waiting.pendingApprovals().length === 1);
      await before.shutdown();

      const second = clerk(policy, scriptedModel([{ text: 'removed' }]));
      const after = createAgentSystem({ store: createSqliteStore(path), agents: [second.agent] });
      expect(await after.approvals()).toMatchObject([{ sessionId: 'p-1', callId: 'c0', tool: 'remove' }]);
      const { sessions } = await after.recover({ context: { role: 'user' } });
      await after.approve('p-1', 'c0');
      const result = await (sessions[0] as (typeof sessions)[number]).result;
      expect(result).toMatchObject({ status: 'completed', text: 'removed' });
      expect(first.ran).toEqual([]);
      expect(second.ran).toEqual(['remove:x0']);
      await after.shutdown();
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('in run(), ask goes to onApproval; without it the call is denied rather than waiting forever', async () => {
    const policy = () => ({ decision: 'ask' as const, reason: 'large' });
    const approved = clerk(policy, scriptedModel([calls('remove'), { text: 'done' }]));
    const requests: string[] = [];
    const result = await run(approved.agent, 'go', {
      context: { role: 'user' },
      onApproval: (request) => {
        requests.push(request.callId);
        return { type: 'approve' };
      },
    });
    expect(result.status).toBe('completed');
    expect(requests).toEqual(['c0']);
    expect(approved.ran).toEqual(['remove:x0']);

    const alone = clerk(policy, scriptedModel([calls('remove'), { text: 'done' }]));
    const denied = await run(alone.agent, 'go', { context: { role: 'user' } });
    expect(alone.ran).toEqual([]);
    expect(denied.history.find((message) => message.role === 'tool')?.content).toContain(
      'nobody can decide in this run',
    );
  });

  it('a permissions option that is not a function is a ConfigError', () => {
    expect(() =>
      defineAgent({
        name: 'x',
        instructions: '',
        model: scriptedModel([]),
        permissions: 'admin' as never,
      }),
    ).toThrow(ConfigError);
  });
});
