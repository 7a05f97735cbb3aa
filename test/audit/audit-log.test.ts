import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type AuditRecord,
  ConfigError,
  contextType,
  createAgentSystem,
  createAuditLog,
  createSqliteStore,
  defineAgent,
  jsonlAuditSink,
  memoryAuditSink,
  permissions,
  run,
  sqliteAuditSink,
  tool,
  verifyAuditLog,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { callerOf, emitFrom } from '../../src/run/run-runtime.ts';
import { until } from '../support/until.ts';

interface Caller {
  role: 'admin' | 'user';
  apiKey: string;
}
const contextSecret = 'ctx-secret-77d1';
const user: Caller = { role: 'user', apiKey: contextSecret };

let directory = '';
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'troupe-audit-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

/** A clerk that may search but must ask to pay (the card number is a secret argument) and may not delete. */
function clerk() {
  const ran: string[] = [];
  const search = tool({
    name: 'search',
    description: 'Searches.',
    input: z.object({ q: z.string() }),
    execute: ({ q }) => {
      ran.push(`search:${q}`);
      return 'found';
    },
  });
  const pay = tool({
    name: 'pay',
    description: 'Pays.',
    input: z.object({ cents: z.number(), card: z.string() }),
    secret: ['card'],
    execute: ({ cents }) => {
      ran.push(`pay:${cents}`);
      return 'paid';
    },
  });
  const remove = tool({
    name: 'remove',
    description: 'Deletes.',
    input: z.object({ id: z.string() }),
    execute: ({ id }) => {
      ran.push(`remove:${id}`);
      return 'gone';
    },
  });
  const agent = defineAgent({
    name: 'clerk',
    contextType: contextType<Caller>(),
    instructions: ({ context }) => `Serve a ${context.role}.`,
    model: scriptedModel([
      {
        toolCalls: [
          { id: 'c1', name: 'search', args: { q: 'shoes' } },
          { id: 'c2', name: 'pay', args: { cents: 500, card: '4242-4242' } },
          { id: 'c3', name: 'remove', args: { id: 'order-1' } },
        ],
        stopReason: 'tool_use',
      },
      { text: 'done' },
    ]),
    tools: [search, pay, remove],
    permissions: permissions.all(
      permissions.byRole<Caller>({ admin: ['*'], user: ['search', 'pay'] }, (context) => context.role),
      (call) => (call.tool === 'pay' ? { decision: 'ask', reason: 'payments need a person' } : 'allow'),
    ),
  });
  return { agent, ran };
}

const types = (records: readonly AuditRecord[]) => records.map((record) => record.type);

describe('the audit log', () => {
  it('records permission decisions and approvals of a session, chained, without the context or secrets', async () => {
    const path = join(directory, 'audit.jsonl');
    const audit = createAuditLog({ sink: jsonlAuditSink(path) });
    const system = createAgentSystem({ audit });
    const { agent, ran } = clerk();
    const session = system.spawn(agent, 'buy shoes', { context: user });
    await until(() => session.pendingApprovals().length === 1);
    await session.approve('c2');
    expect((await session.result).text).toBe('done');
    expect(ran).toEqual(['search:shoes', 'pay:500']);
    await system.shutdown(); // flushes the log

    const records = (await readFile(path, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as AuditRecord);
    expect(types(records)).toEqual(['permission', 'permission', 'approval_requested', 'approval_decided']);
    expect(records.map((record) => record.seq)).toEqual([1, 2, 3, 4]);
    expect(records[0]).toMatchObject({
      sessionId: session.sessionId,
      agent: 'clerk',
      route: 'clerk',
      data: { tool: 'pay', callId: 'c2', decision: 'ask', reason: 'payments need a person' },
    });
    expect(records[1]?.data).toMatchObject({ tool: 'remove', decision: 'deny' });
    expect(records[2]?.data).toMatchObject({ callId: 'c2', args: { cents: 500, card: '[redacted]' } });
    expect(records[3]?.data).toMatchObject({ callId: 'c2', decision: { type: 'approve' } });
    expect(verifyAuditLog(path)).toEqual({ ok: true, count: 4 });
    const text = await readFile(path, 'utf8');
    expect(text).not.toContain(contextSecret);
    expect(text).not.toContain('4242-4242');
  });

  it('records a budget denial of run()', async () => {
    const sink = memoryAuditSink();
    const audit = createAuditLog({ sink });
    const agent = defineAgent({
      name: 'spender',
      instructions: 'Spend.',
      model: scriptedModel([
        {
          toolCalls: [{ name: 'noop', args: {} }],
          stopReason: 'tool_use',
          usage: { input: 500, output: 500 },
        },
        { text: 'more' },
      ]),
      tools: [tool({ name: 'noop', description: 'Does nothing.', input: z.object({}), execute: () => 'ok' })],
    });
    const result = await run(agent, 'go', { budget: { tokens: 600 }, audit });
    expect(result.stopReason).toBe('budget_exhausted');
    await audit.flush();
    expect(types(sink.records)).toEqual(['budget_denied']);
    expect(sink.records[0]).toMatchObject({
      agent: 'spender',
      sessionId: result.sessionId,
      data: { stopReason: 'budget_exhausted' },
    });
  });

  it('maps guardrail, redaction and breaker events of the stream by their type', async () => {
    const sink = memoryAuditSink();
    const audit = createAuditLog({ sink });
    // A tool that emits what the guardrail, masking and breaker features emit, through the run's own event bus.
    const emitter = tool({
      name: 'emit',
      description: 'Emits security events.',
      input: z.object({}),
      execute: (_args, ctx) => {
        const runtime = callerOf(ctx);
        if (!runtime) throw new Error('no runtime');
        emitFrom(runtime, 'guardrail', { guardrail: 'no-pii', stage: 'tool_input', decision: 'block' });
        emitFrom(runtime, 'redaction', { target: 'model', counts: { email: 2 } });
        emitFrom(runtime, 'breaker', { breaker: 'openai/gpt', scope: 'model', state: 'open' });
        return 'ok';
      },
    });
    const agent = defineAgent({
      name: 'guarded',
      instructions: '',
      model: scriptedModel(
        [{ toolCalls: [{ name: 'emit', args: {} }], stopReason: 'tool_use' }, { text: 'ok' }],
        { loop: true },
      ),
      tools: [emitter],
    });
    const system = createAgentSystem({ audit });
    await system.spawn(agent, 'go').result;
    await system.shutdown();
    expect(types(sink.records)).toEqual(['guardrail', 'redaction', 'breaker']);
    expect(sink.records[1]?.data).toEqual({ target: 'model', counts: { email: 2 } });
    // Also from a plain run.
    const plain = memoryAuditSink();
    const planLog = createAuditLog({ sink: plain });
    await run(agent, 'go', { audit: planLog });
    await planLog.flush();
    expect(types(plain.records)).toEqual(['guardrail', 'redaction', 'breaker']);
  });

  it('records configuration errors of calls to the system and of run()', async () => {
    const sink = memoryAuditSink();
    const audit = createAuditLog({ sink });
    const system = createAgentSystem({ audit });
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: 'hi' }, { text: 'again' }]),
    });
    expect(() => system.spawn(agent, 'go', { tenat: 'x' } as never)).toThrow(ConfigError);
    await expect(system.restore('nope', agent)).rejects.toThrow(ConfigError);
    const session = system.spawn(agent, 'go');
    await session.result;
    await expect(session.send('more', { timeoutMs: -1 })).rejects.toThrow(ConfigError);
    await expect(run(agent, 'go', { audit, sessionId: '' })).rejects.toThrow(ConfigError);
    await system.shutdown();
    expect(types(sink.records)).toEqual(['config_error', 'config_error', 'config_error', 'config_error']);
    expect(sink.records.map((record) => (record.data as { where: string }).where)).toEqual([
      'spawn()',
      'restore()',
      'send()',
      'run()',
    ]);
    expect(verifyAuditLog(sink.records)).toEqual({ ok: true, count: 4 });
  });

  it('keeps records in the SQLite store file, continued after a reopen, never the context', async () => {
    const path = join(directory, 'sessions.db');
    const store = createSqliteStore(path);
    const audit = createAuditLog({ sink: sqliteAuditSink(store) });
    const system = createAgentSystem({ store, audit });
    const { agent } = clerk();
    const session = system.spawn(agent, 'buy', { context: user });
    await until(() => session.pendingApprovals().length === 1);
    await session.reject('c2', 'no');
    await session.result;
    await system.shutdown();
    await audit.close();
    expect(types(store.readAudit() as AuditRecord[])).toEqual([
      'permission',
      'permission',
      'approval_requested',
      'approval_decided',
    ]);
    store.close();

    const reopened = createSqliteStore(path);
    const again = createAuditLog({ sink: sqliteAuditSink(reopened) });
    expect(again.record({ type: 'breaker', data: { state: 'open' } }).seq).toBe(5);
    await again.close();
    expect(verifyAuditLog(reopened.readAudit())).toEqual({ ok: true, count: 5 });
    reopened.close();
    const bytes = await readFile(path);
    expect(bytes.includes(Buffer.from(contextSecret))).toBe(false);
  });

  it('records the ConfigError of a run() that could never be decided on', async () => {
    const sink = memoryAuditSink();
    const audit = createAuditLog({ sink });
    const asking = defineAgent({
      name: 'asking',
      instructions: '',
      model: scriptedModel([]),
      tools: [
        tool({
          name: 'pay',
          description: 'Pays.',
          input: z.object({}),
          needsApproval: true,
          execute: () => 'paid',
        }),
      ],
    });
    await expect(run(asking, 'go', { audit })).rejects.toThrow(ConfigError);
    await audit.flush();
    expect(sink.records.map((record) => record.data)).toMatchObject([
      { where: 'run()', code: 'config_invalid', message: expect.stringContaining('onApproval') },
    ]);
  });

  it('refuses records once closed, and an option that is not an audit log', async () => {
    const audit = createAuditLog();
    await audit.close();
    expect(() => audit.record({ type: 'breaker', data: {} })).toThrow(ConfigError);
    expect(() => createAgentSystem({ audit: {} as never })).toThrow(ConfigError);
  });
});
