import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAgentSystem, createSqliteStore, defineAgent, type ModelRequest, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { until } from '../support/until.ts';

const email = 'bob@example.com';

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'troupe-pii-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('PII masking across a suspend and recover', () => {
  it('the resumed turn masks the stored conversation again; its tool gets the real value; the stored log stays masked', async () => {
    const path = join(directory, 'sessions.db');
    const received: string[] = [];
    let release: (() => void) | undefined;
    const mailer = (blocking: boolean) =>
      tool({
        name: 'mail',
        description: 'sends mail',
        input: z.object({ to: z.string() }),
        execute: async ({ to }) => {
          received.push(to);
          if (blocking) await new Promise<void>((resolve) => (release = resolve));
          return `mailed ${to}`;
        },
      });
    const askToMail = { toolCalls: [{ id: 'm1', name: 'mail', args: { to: '<EMAIL_1>' } }] };
    const pii = { model: true };
    const first = createAgentSystem({ store: createSqliteStore(path), pii });
    const firstModel = scriptedModel([askToMail]);
    const session = first.spawn(
      defineAgent({ name: 'clerk', instructions: '', model: firstModel, tools: [mailer(true)] }),
      `please mail ${email}`,
      { sessionId: 'p-1' },
    );
    await until(() => received.length === 1);
    await first.shutdown();
    expect(await session.result).toMatchObject({ stopReason: 'suspended' });
    release?.();
    expect(received).toEqual([email]);

    const requests: ModelRequest[] = [];
    const secondModel = scriptedModel((request) => {
      requests.push(request);
      return { text: 'Mailed <EMAIL_1>.' };
    });
    const store = createSqliteStore(path);
    const second = createAgentSystem({
      store,
      pii,
      agents: [defineAgent({ name: 'clerk', instructions: '', model: secondModel, tools: [mailer(false)] })],
    });
    const { sessions } = await second.recover();
    const result = await (sessions[0] as (typeof sessions)[number]).result;
    expect(result.text).toBe(`Mailed ${email}.`);
    // The interrupted call ran again with the real address (it was revealed before the first process stored it).
    expect(received).toEqual([email, email]);
    const sent = JSON.stringify(requests[0]?.messages);
    expect(sent).not.toContain(email);
    expect(sent).toContain('please mail <EMAIL_1>');
    expect(sent).toContain('mailed <EMAIL_1>');
    await until(() => sessions[0]?.status === 'idle' || sessions[0]?.status === 'closed');
    const log = JSON.stringify(await store.readEvents('p-1', -1));
    expect(log).toContain('<EMAIL_1>');
    expect(log).not.toContain(email);
    await second.shutdown();
  });
});
