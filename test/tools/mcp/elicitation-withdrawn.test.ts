import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApprovalError, createAgentSystem, createSqliteStore, defineAgent, type Session } from 'troupe';
import { mcpServer } from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { AskingServer } from './asking-server.ts';

/*
 * An MCP server's question on a store that outlives the process is a pending approval record. A run that ends
 * while it waits (aborted, stopped, failed, timed out, closed) withdraws it: no one is asked any more, and an answer
 * is refused. Only a suspended (or crashed) session keeps it, for the call a recovered session sends again.
 */

const callId = 'c1/elicitation-1';

describe.each(['stateless', 'stateful'] as const)('an MCP question whose run ended, %s server', (form) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function setUp(options: { timeoutMs?: number; sampling?: { needsApproval: true } } = {}) {
    const asking = new AskingServer(form);
    await asking.start();
    cleanups.push(() => asking.stop());
    const server = mcpServer({
      name: 'asking',
      url: asking.url,
      elicitation: true,
      scope: 'session',
      ...options,
    });
    cleanups.push(() => server.close());
    // The tool that asks: `who` asks a question, `summarize` a sampling request.
    const tool: { name: string; args: Record<string, string> } = options.sampling
      ? { name: 'summarize', args: { text: 'x' } }
      : { name: 'who', args: {} };
    const model = scriptedModel((request) => {
      const last = request.messages.at(-1);
      if (last?.role === 'tool') return { text: `got ${String(last.content)}` };
      // A greeting turn answers at once; the next message calls the asking tool.
      return last?.content === 'hello'
        ? { text: 'hi' }
        : { toolCalls: [{ id: 'c1', ...tool }], stopReason: 'tool_use' };
    });
    const clerk = defineAgent({ name: 'clerk', instructions: '', model, tools: [server] });
    const dir = mkdtempSync(join(tmpdir(), 'troupe-elicit-withdrawn-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'sessions.db');
    const open = () => {
      const system = createAgentSystem({ store: createSqliteStore(file), agents: [clerk] });
      cleanups.push(() => system.shutdown());
      return system;
    };
    /** Every approval record of the store, read by a store of its own (as another process would). */
    const stored = async () => {
      const store = createSqliteStore(file);
      try {
        return await store.approvals();
      } finally {
        await store.close();
      }
    };
    return { asking, clerk, open, stored };
  }

  async function asked(session: Session): Promise<void> {
    for await (const event of session.events({ after: 0 })) if (event.type === 'approval_requested') return;
  }

  it('is withdrawn when its turn is aborted: not pending, and an answer is refused', async () => {
    const { clerk, open } = await setUp();
    const system = open();
    const session = system.spawn(clerk, 'hello', { sessionId: 'desk-1' });
    await session.result;
    const controller = new AbortController();
    const turn = session.send('who am I?', { signal: controller.signal });
    await asked(session);
    expect(await system.approvals()).toMatchObject([{ callId, kind: 'question' }]);
    controller.abort();
    expect((await turn).stopReason).toBe('aborted');
    expect(await system.approvals()).toEqual([]);
    expect(session.pendingApprovals()).toEqual([]);
    const answering = session.answer(callId, '{"name":"Bo"}');
    await expect(answering).rejects.toBeInstanceOf(ApprovalError);
    await expect(answering).rejects.toThrow(/no longer waiting/);
    // The withdrawal is announced: the tool hears a refusal, and so does anyone following the events.
    expect(await decisions(session)).toMatchObject([{ callId, decision: { type: 'reject' } }]);
    // The session goes on with the next message.
    expect(session.status).toBe('idle');
  });

  it('is withdrawn when the session is stopped: not pending in the store, and an answer is refused', async () => {
    const { clerk, open, stored } = await setUp();
    const system = open();
    const session = system.spawn(clerk, 'who am I?', { sessionId: 'desk-1' });
    await asked(session);
    expect(await system.approvals()).toMatchObject([{ callId, kind: 'question' }]);
    await session.stop();
    expect((await session.result).stopReason).toBe('aborted');
    expect(await system.approvals()).toEqual([]);
    expect(await stored()).toMatchObject([{ callId, status: 'withdrawn', decision: { type: 'reject' } }]);
    const answering = system.answer('desk-1', callId, '{"name":"Bo"}');
    await expect(answering).rejects.toBeInstanceOf(ApprovalError);
    await expect(answering).rejects.toThrow(/no longer waiting/);
  });

  it('is withdrawn when the system shuts down in abort mode', async () => {
    const { clerk, open, stored } = await setUp();
    const system = open();
    const session = system.spawn(clerk, 'who am I?', { sessionId: 'desk-1' });
    await asked(session);
    await system.shutdown({ mode: 'abort' });
    expect(await stored()).toMatchObject([{ callId, status: 'withdrawn' }]);
    const after = open();
    expect(await after.approvals()).toEqual([]);
    await expect(after.answer('desk-1', callId, '{"name":"Bo"}')).rejects.toThrow(/no longer waiting/);
  });

  it('is withdrawn when the tool call that asked ends (its time limit) while the turn goes on', async () => {
    const { clerk, open, stored } = await setUp({ timeoutMs: 300 });
    const system = open();
    const session = system.spawn(clerk, 'who am I?', { sessionId: 'desk-1' });
    const result = await session.result;
    expect(result.status).toBe('completed');
    expect(await stored()).toMatchObject([
      {
        callId,
        status: 'withdrawn',
        decision: { type: 'reject', reason: 'the tool call that asked ended before a decision' },
      },
    ]);
    await expect(session.answer(callId, '{"name":"Bo"}')).rejects.toThrow(/no longer waiting/);
  });

  it('withdraws a sampling request waiting for approval when the session is stopped', async () => {
    const { clerk, open, stored } = await setUp({ sampling: { needsApproval: true } });
    const system = open();
    const session = system.spawn(clerk, 'summarize', { sessionId: 'desk-1' });
    await asked(session);
    expect(await system.approvals()).toMatchObject([{ callId: 'c1/sampling-1', kind: 'approval' }]);
    await session.stop();
    expect(await system.approvals()).toEqual([]);
    expect(await stored()).toMatchObject([{ callId: 'c1/sampling-1', status: 'withdrawn' }]);
    await expect(system.approve('desk-1', 'c1/sampling-1')).rejects.toThrow(/no longer waiting/);
  });

  it('stays pending when the system is suspended, and the recovered session gets the answer', async () => {
    const { asking, clerk, open } = await setUp();
    const system = open();
    const session = system.spawn(clerk, 'who am I?', { sessionId: 'desk-1' });
    await asked(session);
    await system.shutdown({ mode: 'suspend' });
    const after = open();
    expect(await after.approvals()).toMatchObject([{ callId, kind: 'question' }]);
    await after.answer('desk-1', callId, '{"name":"Bo"}');
    const { sessions } = await after.recover();
    const result = await sessions[0]?.result;
    expect(result?.status).toBe('completed');
    if (form === 'stateless') {
      expect(result?.text).toBe('got elicit:accept:{"name":"Bo","age":30,"color":"blue"}');
      expect(asking.log.answers).toEqual(['elicit:accept:{"name":"Bo","age":30,"color":"blue"}']);
    }
  });
});

/** The decisions the session's events announced, in order. */
async function decisions(session: Session): Promise<unknown[]> {
  const found: unknown[] = [];
  const stop = new AbortController();
  for await (const event of session.events({ after: 0, signal: stop.signal })) {
    if (event.type === 'approval_decided')
      found.push({ callId: event.data.callId, decision: event.data.decision });
    if (event.type === 'run_end' && event.data.stopReason === 'aborted') stop.abort();
  }
  return found;
}
