import {
  ConfigError,
  createAgentSystem,
  defineAgent,
  type ModelRequest,
  type RunEvent,
  run,
  stream,
} from 'troupe';
import { mcpServer } from 'troupe/mcp';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { AskingServer } from './asking-server.ts';

const forms = [
  { form: 'stateless', protocol: '2026-07-28' },
  { form: 'stateful', protocol: '2025-11-25' },
] as const;

/** Whether a model request is the server's sampling request (its system prompt is the server's). */
function isSampling(request: ModelRequest): boolean {
  return request.messages[0]?.content === 'Be brief.';
}

describe.each(forms)('sampling for an MCP server, $form form ($protocol)', ({ form }) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  /** Runs the agent through stream(), keeping its events. */
  async function runWithEvents(
    agent: Parameters<typeof stream>[0],
    options: Parameters<typeof stream>[2] = {},
  ): Promise<{ result: Awaited<ReturnType<typeof run>>; events: RunEvent[] }> {
    const events: RunEvent[] = [];
    const running = stream(agent, 'go', options);
    for await (const event of running) events.push(event);
    return { result: await running.result, events };
  }

  async function started(): Promise<AskingServer> {
    const server = new AskingServer(form);
    await server.start();
    cleanups.push(() => server.stop());
    return server;
  }

  /** The agent's model: asks for `summarize`, then (after the tool) answers; `sampled` answers the server. */
  function agentModel(sampled: string, firstUsage = { input: 10, output: 5 }) {
    let turns = 0;
    return scriptedModel((request) => {
      if (isSampling(request)) return { text: sampled, usage: { input: 10, output: 5 } };
      return turns++ === 0
        ? { toolCalls: [{ id: 'c1', name: 'summarize', args: { text: 'a long text' } }], usage: firstUsage }
        : { text: 'done', usage: { input: 10, output: 5 } };
    });
  }

  it("is served by the calling agent's model, with its spend on the run and an mcp_sampling event", async () => {
    const asking = await started();
    const server = mcpServer({ name: 'asking', url: asking.url, sampling: true });
    cleanups.push(() => server.close());
    const model = agentModel('a short text');
    const agent = defineAgent({ name: 'a', instructions: 'Use tools.', model, tools: [server] });
    const { result, events } = await runWithEvents(agent, { budget: { tokens: 10_000 } });
    expect(result.stopReason).toBe('completed');
    expect(asking.log.answers).toEqual(['sampling:a short text']);
    const tool = result.history.find((message) => message.role === 'tool');
    expect(tool).toMatchObject({ content: 'sampling:a short text', isError: false });
    // The server's request reached the model as its own conversation, with its limit.
    const sampledRequest = model.requests.find((request) => isSampling(request));
    expect(sampledRequest?.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Summarize: a long text' },
    ]);
    expect(sampledRequest?.settings.maxOutputTokens).toBe(50);
    const sampling = events.filter((event) => event.type === 'mcp_sampling');
    expect(sampling).toHaveLength(1);
    expect(sampling[0]?.data).toMatchObject({ server: 'asking', callId: 'c1', outcome: 'answered' });
    // Three model calls were reserved and settled on the run's budget: two of the agent's, one for the server.
    expect(events.filter((event) => event.type === 'spend')).toHaveLength(3);
    // The result counts the server's call too, and says which part it was.
    expect(result.modelCalls).toBe(3);
    expect(result.usage).toMatchObject({ input: 30, output: 15 });
    expect(result.nested).toEqual({
      usage: { input: 10, output: 5, cached: 0, reasoning: 0 },
      modelCalls: 1,
    });
  });

  it("refuses when the run's budget is spent, and the server reads why", async () => {
    const asking = await started();
    const server = mcpServer({ name: 'asking', url: asking.url, sampling: true });
    cleanups.push(() => server.close());
    // The first call spends nearly all the budget: the server's request finds too little left.
    const model = agentModel('never', { input: 298, output: 1 });
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [server] });
    const { result, events } = await runWithEvents(agent, { budget: { tokens: 300 } });
    expect(model.requests.filter((request) => isSampling(request))).toHaveLength(0);
    const refused = events.find((event) => event.type === 'mcp_sampling');
    expect(refused?.data).toMatchObject({ outcome: 'refused', usage: null });
    if (form === 'stateful') {
      expect(asking.log.answers).toHaveLength(1);
      expect(asking.log.answers[0]).toMatch(/^sampling-error:.*budget/);
    } else {
      // On 2026-07-28 the answer travels with the retried call, so a refusal never reaches the server: the call
      // fails on the client with the reason, and the model reads it.
      const tool = result.history.find((message) => message.role === 'tool');
      expect(tool).toMatchObject({ isError: true });
      expect(String(tool?.content)).toMatch(/budget/);
    }
  });

  it('asks onApproval first when sampling needs approval; a rejection refuses the request', async () => {
    const asking = await started();
    const server = mcpServer({
      name: 'asking',
      url: asking.url,
      sampling: { needsApproval: true, maxTokens: 20 },
    });
    cleanups.push(() => server.close());
    const model = agentModel('approved text');
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [server] });
    const asked: string[] = [];
    const approved = await run(agent, 'go', {
      onApproval: (request) => {
        asked.push(`${request.tool}:${request.callId}`);
        return { type: 'approve' };
      },
    });
    expect(approved.stopReason).toBe('completed');
    expect(asked).toEqual(['asking/sampling:c1/sampling-1']);
    expect(asking.log.answers).toEqual(['sampling:approved text']);
    // The server asked for 50 tokens; the declaration caps them at 20.
    expect(model.requests.find((request) => isSampling(request))?.settings.maxOutputTokens).toBe(20);

    const rejectedModel = agentModel('never');
    const rejecting = defineAgent({ name: 'b', instructions: '', model: rejectedModel, tools: [server] });
    const { events } = await runWithEvents(rejecting, {
      onApproval: () => ({ type: 'reject', reason: 'not now' }),
    });
    expect(rejectedModel.requests.filter((request) => isSampling(request))).toHaveLength(0);
    expect(events.find((event) => event.type === 'mcp_sampling')?.data).toMatchObject({
      outcome: 'refused',
      reason: 'a person rejected it: not now',
    });
  });

  it('refuses a request that needs approval in a run nobody can decide in', async () => {
    const asking = await started();
    const server = mcpServer({ name: 'asking', url: asking.url, sampling: { needsApproval: true } });
    cleanups.push(() => server.close());
    const model = agentModel('never');
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [server] });
    const { events } = await runWithEvents(agent);
    expect(model.requests.filter((request) => isSampling(request))).toHaveLength(0);
    expect(events.find((event) => event.type === 'mcp_sampling')?.data).toMatchObject({
      outcome: 'refused',
      reason: expect.stringMatching(/pass onApproval/),
    });
  });

  it("waits as a pending approval of a session, and runs once the session's person approves", async () => {
    const asking = await started();
    const server = mcpServer({ name: 'asking', url: asking.url, sampling: { needsApproval: true } });
    cleanups.push(() => server.close());
    const system = createAgentSystem();
    cleanups.push(() => system.shutdown());
    const model = agentModel('approved in the session');
    const session = system.spawn(defineAgent({ name: 'a', instructions: '', model, tools: [server] }), 'go');
    for await (const event of session.events()) if (event.type === 'approval_requested') break;
    expect(session.pendingApprovals()).toMatchObject([
      { callId: 'c1/sampling-1', kind: 'approval', tool: 'asking/sampling' },
    ]);
    expect(model.requests.filter((request) => isSampling(request))).toHaveLength(0);
    await expect(session.answer('c1/sampling-1', 'yes')).rejects.toThrow(/not an answer/);
    await session.approve('c1/sampling-1');
    await session.result;
    expect(asking.log.answers).toEqual(['sampling:approved in the session']);
  });

  it('answers with the model named in the declaration', async () => {
    const asking = await started();
    const other = scriptedModel([{ text: 'from the other model' }], { model: 'other' });
    const server = mcpServer({ name: 'asking', url: asking.url, sampling: { model: other } });
    cleanups.push(() => server.close());
    const agent = defineAgent({ name: 'a', instructions: '', model: agentModel('unused'), tools: [server] });
    await run(agent, 'go');
    expect(asking.log.answers).toEqual(['sampling:from the other model']);
    expect(other.calls).toBe(1);
  });
});

describe('sampling, declared', () => {
  it('refuses bad settings with a ConfigError', () => {
    const url = 'http://127.0.0.1:1/mcp';
    expect(() => mcpServer({ url, sampling: 'yes' as never })).toThrow(ConfigError);
    expect(() => mcpServer({ url, sampling: { maxTokens: 0 } })).toThrow(/sampling.maxTokens/);
    expect(() => mcpServer({ url, sampling: { model: {} as never } })).toThrow(/sampling.model/);
    expect(() => mcpServer({ url, sampling: { needsApproval: 'no' as never } })).toThrow(/needsApproval/);
    expect(() => mcpServer({ url, sampling: { temperature: 1 } as never })).toThrow(ConfigError);
  });
});
