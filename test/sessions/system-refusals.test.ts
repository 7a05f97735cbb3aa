import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ConfigError,
  createAgentSystem,
  createSqliteStore,
  defineAgent,
  SessionClosedError,
  SystemClosedError,
  tool,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

const dir = mkdtempSync(join(tmpdir(), 'troupe-refusals-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const refund = tool({
  name: 'refund',
  description: 'refunds an order',
  input: z.object({ order: z.string() }),
  needsApproval: true,
  execute: ({ order }) => `refunded ${order}`,
});
const clerk = () =>
  defineAgent({
    name: 'clerk',
    instructions: '',
    model: scriptedModel([
      { toolCalls: [{ id: 'c1', name: 'refund', args: { order: 'A-1' } }], stopReason: 'tool_use' },
      { text: 'done' },
    ]),
    tools: [refund],
  });

describe('recover({ sessionIds }) names every id it cannot resume', () => {
  it('reports an id the store does not hold, a finished session and one running here; resumes the others', async () => {
    const file = join(dir, 'recover.db');
    const first = createAgentSystem({ store: createSqliteStore(file) });
    const waiting = first.spawn(clerk(), 'refund A-1', { sessionId: 'waiting' });
    for await (const event of waiting.events()) if (event.type === 'approval_requested') break;
    const greeter = defineAgent({ name: 'clerk', instructions: '', model: scriptedModel([{ text: 'hi' }]) });
    const finished = first.spawn(greeter, 'hello', { sessionId: 'finished' });
    await finished.result;
    await finished.stop();
    await first.shutdown();

    const agent = clerk();
    const second = createAgentSystem({ store: createSqliteStore(file), agents: [agent] });
    const running = second.spawn(agent, 'refund B-2', { sessionId: 'running-here' });
    const { sessions, failures } = await second.recover({
      sessionIds: ['waiting', 'typo', 'finished', 'running-here'],
    });
    expect(sessions.map((session) => session.sessionId)).toEqual(['waiting']);
    expect(failures.map((failure) => failure.sessionId)).toEqual(['typo', 'finished', 'running-here']);
    for (const failure of failures) expect(failure.error).toBeInstanceOf(ConfigError);
    expect(failures[0]?.error.message).toContain('holds no session "typo"');
    expect(failures[1]?.error.message).toContain('is closed, not interrupted');
    expect(failures[2]?.error.message).toContain('running in this process already');
    await expect(second.recover({ sessionIds: 'waiting' as unknown as string[] })).rejects.toThrow(
      ConfigError,
    );
    expect(running.sessionId).toBe('running-here');
    await second.shutdown();
  });
});

describe('a system that shuts down', () => {
  it('refuses spawn(), restore() and recover() with SystemClosedError, a lifecycle error, not a ConfigError', async () => {
    const system = createAgentSystem();
    const session = system.spawn(clerk(), 'refund A-1');
    const stopping = system.shutdown();
    const late = (() => {
      try {
        system.spawn(clerk(), 'late');
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(late).toBeInstanceOf(SystemClosedError);
    expect(late).not.toBeInstanceOf(ConfigError);
    expect((late as SystemClosedError).code).toBe('system_closed');
    await stopping;
    await expect(system.restore('any', clerk())).rejects.toBeInstanceOf(SystemClosedError);
    await expect(system.recover()).rejects.toBeInstanceOf(SystemClosedError);
    await expect(session.send('more')).rejects.toBeInstanceOf(SessionClosedError);
  });
});
