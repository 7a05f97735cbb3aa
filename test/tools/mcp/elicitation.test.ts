import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type ApprovalRequest,
  ConfigError,
  createAgentSystem,
  createSqliteStore,
  defineAgent,
  run,
} from 'troupe';
import { type McpServer, mcpServer } from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { AskingServer } from './asking-server.ts';

const forms = [
  { form: 'stateless', protocol: '2026-07-28' },
  { form: 'stateful', protocol: '2025-11-25' },
] as const;

/** An agent that calls one tool of the server once, then answers. */
function caller(server: McpServer, tool = 'who') {
  const model = scriptedModel([{ toolCalls: [{ id: 'c1', name: tool, args: {} }] }, { text: 'done' }]);
  return defineAgent({ name: 'a', instructions: '', model, tools: [server] });
}

describe.each(forms)('elicitation for an MCP server, $form form ($protocol)', ({ form }) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  async function declared(options: Partial<Parameters<typeof mcpServer>[0]> = {}) {
    const asking = new AskingServer(form);
    await asking.start();
    cleanups.push(() => asking.stop());
    const server = mcpServer({ name: 'asking', url: asking.url, elicitation: true, ...options } as never);
    cleanups.push(() => server.close());
    return { asking, server };
  }

  it("is answered by run()'s onApproval, with the schema's defaults applied", async () => {
    const { asking, server } = await declared();
    const asked: ApprovalRequest[] = [];
    const result = await run(caller(server), 'go', {
      onApproval: (request) => {
        asked.push(request);
        return { type: 'answer', text: '{"name":"Ann"}' };
      },
    });
    expect(result.stopReason).toBe('completed');
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({
      kind: 'question',
      tool: 'asking/elicitation',
      callId: 'c1/elicitation-1',
      question: 'Who are you?',
      args: { mode: 'form' },
    });
    expect(asking.log.answers).toEqual(['elicit:accept:{"name":"Ann","age":30,"color":"blue"}']);
  });

  it('is a pending request of a session: an answer that does not fit is refused, then a good one is accepted', async () => {
    const { asking, server } = await declared();
    const system = createAgentSystem();
    cleanups.push(() => system.shutdown());
    const session = system.spawn(caller(server), 'go');
    for await (const event of session.events()) if (event.type === 'approval_requested') break;
    expect(session.pendingApprovals()).toMatchObject([{ callId: 'c1/elicitation-1', kind: 'question' }]);
    expect(session.status).toBe('awaiting');
    await expect(session.answer('c1/elicitation-1', '{"age":3}')).rejects.toThrow(/"name" is required/);
    await expect(session.answer('c1/elicitation-1', '{"name":"Bo","color":"green"}')).rejects.toThrow(
      /must be one of "red", "blue"/,
    );
    await expect(session.answer('c1/elicitation-1', 'Bo')).rejects.toThrow(/JSON object/);
    expect(session.pendingApprovals()).toHaveLength(1);
    await session.answer('c1/elicitation-1', '{"name":"Bo","color":"red"}');
    await session.result;
    expect(session.pendingApprovals()).toHaveLength(0);
    expect(asking.log.answers).toEqual(['elicit:accept:{"name":"Bo","color":"red","age":30}']);
  });

  it("declines on the session's reject, and cancels when the session stops while it waits", async () => {
    const { asking, server } = await declared();
    const system = createAgentSystem();
    cleanups.push(() => system.shutdown());
    const declining = system.spawn(caller(server), 'go');
    for await (const event of declining.events()) if (event.type === 'approval_requested') break;
    await declining.reject('c1/elicitation-1', 'not telling');
    await declining.result;
    expect(asking.log.answers).toEqual(['elicit:decline']);

    const stopping = system.spawn(caller(server), 'go');
    for await (const event of stopping.events()) if (event.type === 'approval_requested') break;
    expect(stopping.pendingApprovals()).toHaveLength(1);
    await stopping.stop();
    expect(stopping.pendingApprovals()).toHaveLength(0);
  });

  it('refuses in a run nobody can answer in, and the model reads why', async () => {
    const { asking, server } = await declared();
    const result = await run(caller(server), 'go');
    const tool = result.history.find((message) => message.role === 'tool');
    expect(tool).toMatchObject({ isError: true });
    expect(String(tool?.content)).toMatch(/nobody can answer/);
    if (form === 'stateful') expect(asking.log.answers[0]).toMatch(/^elicit-error:.*nobody can answer/);
  });

  it('takes URL-mode questions only when declared with url: true; approving one says the flow is done', async () => {
    const { asking, server } = await declared({ elicitation: { url: true } });
    const asked: ApprovalRequest[] = [];
    await run(caller(server, 'sign_in'), 'go', {
      onApproval: (request) => {
        asked.push(request);
        return { type: 'approve' };
      },
    });
    expect(asked[0]).toMatchObject({
      question: 'Sign in\nhttps://example.com/sign-in',
      args: { mode: 'url' },
    });
    expect(asking.log.answers).toEqual(['elicit:accept']);

    // Declared for forms only, the client refuses a URL-mode question before anyone is asked.
    const formsOnly = mcpServer({ name: 'forms', url: asking.url, elicitation: true });
    cleanups.push(() => formsOnly.close());
    const refused = await run(caller(formsOnly, 'sign_in'), 'go', {
      onApproval: (request) => {
        asked.push(request);
        return { type: 'approve' };
      },
    });
    expect(asked).toHaveLength(1);
    expect(refused.history.find((message) => message.role === 'tool')).toMatchObject({ isError: true });
  });

  it('waits as a stored question where the store outlives the process, answered with session.answer()', async () => {
    const { asking, server } = await declared();
    const dir = mkdtempSync(join(tmpdir(), 'troupe-elicit-'));
    const store = createSqliteStore(join(dir, 'sessions.db'));
    cleanups.push(async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const system = createAgentSystem({ store });
    cleanups.push(() => system.shutdown());
    const session = system.spawn(caller(server), 'go');
    for await (const event of session.events()) if (event.type === 'approval_requested') break;
    // Committed before it was announced: the store (any process reading it) holds the question.
    expect(await store.approvals({ sessionId: session.sessionId })).toMatchObject([
      { callId: 'c1/elicitation-1', kind: 'question', status: 'pending' },
    ]);
    expect(session.pendingApprovals()).toMatchObject([{ callId: 'c1/elicitation-1' }]);
    await expect(session.answer('c1/elicitation-1', '{"age":3}')).rejects.toThrow(/"name" is required/);
    await session.answer('c1/elicitation-1', '{"name":"Bo"}');
    await session.result;
    expect(asking.log.answers).toEqual(['elicit:accept:{"name":"Bo","age":30,"color":"blue"}']);
    expect(await store.approvals({ sessionId: session.sessionId })).toMatchObject([
      { callId: 'c1/elicitation-1', status: 'answered', decision: { type: 'answer', text: '{"name":"Bo"}' } },
    ]);
  });
});

describe('elicitation, declared', () => {
  it('refuses bad settings with a ConfigError', () => {
    const url = 'http://127.0.0.1:1/mcp';
    expect(() => mcpServer({ url, elicitation: 'yes' as never })).toThrow(ConfigError);
    expect(() => mcpServer({ url, elicitation: { url: 'yes' as never } })).toThrow(/elicitation.url/);
    expect(() => mcpServer({ url, elicitation: { form: true } as never })).toThrow(ConfigError);
  });
});
