import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgent } from '../../src/agent/define-agent.ts';
import { createAuditLog } from '../../src/audit/audit-log.ts';
import { memoryAuditSink } from '../../src/audit/memory-audit-sink.ts';
import type { Message } from '../../src/core/messages.ts';
import type { ModelRequest } from '../../src/core/model.ts';
import { sessionsHoldingResources } from '../../src/core/session-resources.ts';
import { restateClient } from '../../src/restate/client.ts';
import { type ServedEndpoint, serveAgents } from '../../src/restate/serve.ts';
import { contextType } from '../../src/run/run-context.ts';
import { agentTool } from '../../src/sessions/agent-tool.ts';
import { ApprovalError } from '../../src/sessions/approval-error.ts';
import { run, stream } from '../../src/sessions/run.ts';
import { type ScriptedTurn, scriptedModel } from '../../src/testing/scripted-model.ts';
import { mcpServer } from '../../src/tools/mcp/index.ts';
import { tool } from '../../src/tools/tool.ts';
import type { ToolSource } from '../../src/tools/tool-source.ts';
import {
  quietLogger,
  type RestateServer,
  restateUnavailable,
  startRestateServer,
  waitFor,
} from './support/restate-server.ts';

const unavailable = restateUnavailable();
if (unavailable) console.warn(`Skipping the Restate tests: ${unavailable}.`);

const last = (messages: readonly Message[]) => messages.at(-1);
const toolTexts = (messages: readonly Message[]) =>
  messages.flatMap((message) => (message.role === 'tool' ? [message.content] : []));

/** Calls `toolName` once, then answers with what the tools returned. Decides from the request alone (replays). */
function oneCall(name: string, toolName: string, args = {}, usage?: ScriptedTurn['usage']) {
  return scriptedModel(
    (request: ModelRequest): ScriptedTurn =>
      last(request.messages)?.role === 'tool'
        ? { text: `${name}: ${toolTexts(request.messages).join(' | ')}`, usage }
        : { toolCalls: [{ id: `${name}-call`, name: toolName, args }], usage },
    { model: name },
  );
}

interface DeskContext {
  user: string;
}

const refunds: string[] = [];
const refund = tool({
  name: 'refund',
  description: 'Refunds the order.',
  input: z.object({}),
  needsApproval: true,
  execute: (_args, ctx) => {
    refunds.push(ctx.sessionId);
    return 'refunded; receipt sent to jane.doe@example.com';
  },
});
const refunder = defineAgent({
  name: 'refunder',
  instructions: 'You refund orders.',
  tools: [refund],
  model: oneCall('refunder', 'refund'),
});

const whoami = tool({
  name: 'whoami',
  description: 'Who is asking.',
  input: z.object({}),
  contextType: contextType<DeskContext>(),
  execute: (_args, ctx) => `session ${ctx.sessionId}, user ${ctx.context.user}`,
});
const inner = defineAgent({
  name: 'inner',
  description: 'Finds out who is asking.',
  instructions: 'You find out who is asking.',
  contextType: contextType<DeskContext>(),
  tools: [whoami],
  model: oneCall('inner', 'whoami'),
});
const outer = defineAgent({
  name: 'outer',
  instructions: 'You ask inner.',
  contextType: contextType<DeskContext>(),
  tools: [agentTool(inner)],
  model: oneCall('outer', 'inner', { input: 'who?' }),
});

const decoder = defineAgent({
  name: 'decoder',
  instructions: 'You answer in JSON.',
  output: z.object({ n: z.number() }),
  model: scriptedModel(
    (request: ModelRequest): ScriptedTurn =>
      request.messages.some((message) => message.role === 'assistant')
        ? { text: '{"n":1}' }
        : { text: 'one' },
  ),
});

/** A tool source (as an MCP server is) listing one tool. */
function stampSource(): ToolSource & { lists: number } {
  const stamp = tool({
    name: 'stamp',
    description: 'Stamps.',
    input: z.object({}),
    execute: () => 'stamped',
  });
  let listed = false;
  return {
    kind: 'tool-source',
    name: 'stamps',
    lists: 0,
    get version() {
      return listed ? 1 : 0;
    },
    current: () => (listed ? [stamp] : []),
    isReady: () => listed,
    async prepare() {
      this.lists += 1;
      listed = true;
    },
  };
}
const stamps = stampSource();
const stamper = defineAgent({
  name: 'stamper',
  instructions: 'You stamp.',
  tools: [stamps],
  limits: { toolTimeoutMs: 5_000 },
  model: oneCall('stamper', 'stamp'),
});

/** A real MCP server (stdio), one process per session, set up from the session id and the run context. */
const bareServer = fileURLToPath(new URL('../tools/mcp/fixtures/bare-server.ts', import.meta.url));
const echoes = mcpServer({
  command: process.execPath,
  args: [bareServer],
  scope: 'session',
  env: ({ sessionId, context }) => ({ SESSION_TAG: `${sessionId}/${(context as DeskContext).user}` }),
});
const echoer = defineAgent({
  name: 'echoer',
  instructions: 'You echo.',
  tools: [echoes],
  limits: { toolTimeoutMs: 10_000 },
  model: oneCall('echoer', 'echo', { text: 'x' }),
});

const spender = defineAgent({
  name: 'spender',
  instructions: 'You spend.',
  tools: [tool({ name: 'spend', description: 'Spends.', input: z.object({}), execute: () => 'spent' })],
  model: oneCall('spender', 'spend', {}, { input: 10_000, output: 10_000 }),
});

/** Asks for approval (20,000 tokens), then spends (20,000 tokens), then answers: 40,000 tokens before the third call. */
const approvedSpend = tool({
  name: 'spend',
  description: 'Spends.',
  input: z.object({}),
  execute: () => 'spent',
});
const cautious = defineAgent({
  name: 'cautious',
  instructions: 'You ask first.',
  tools: [refund, approvedSpend],
  model: scriptedModel(
    (request: ModelRequest): ScriptedTurn => {
      const answered = toolTexts(request.messages).length;
      // Mostly prompt: a budget caps what a call may write, never what it was sent.
      const usage = { input: 19_000, output: 1_000 };
      if (answered === 0) return { toolCalls: [{ id: 'ask', name: 'refund', args: {} }], usage };
      if (answered === 1) return { toolCalls: [{ id: 'go', name: 'spend', args: {} }], usage };
      return { text: 'done', usage };
    },
    { model: 'cautious' },
  ),
});

/** Repeats what it was told: with model masking it sees placeholders, and its answer is revealed. */
const privyModel = scriptedModel(
  (request: ModelRequest): ScriptedTurn => {
    const said = request.messages.at(-1)?.content;
    return { text: `noted: ${typeof said === 'string' ? said : ''}` };
  },
  { model: 'privy' },
);
const privy = defineAgent({ name: 'privy', instructions: 'You take notes.', model: privyModel });

/** An agent used as a tool that spends 30,000 tokens on its one answer. */
const hungry = defineAgent({
  name: 'hungry',
  description: 'Thinks hard.',
  instructions: 'You think hard.',
  model: scriptedModel(() => ({ text: 'thought', usage: { input: 29_000, output: 1_000 } }), {
    model: 'hungry',
  }),
});
const patron = defineAgent({
  name: 'patron',
  instructions: 'You delegate.',
  tools: [agentTool(hungry)],
  model: oneCall('patron', 'hungry', { input: 'think' }, { input: 500, output: 500 }),
});

describe.skipIf(unavailable !== undefined)('troupe/restate: the in-process features hold on Restate', () => {
  let server: RestateServer;
  const endpoints: ServedEndpoint[] = [];
  const sink = memoryAuditSink();
  const audit = createAuditLog({ sink });
  const contexts: { sessionId: string; agent: string }[] = [];
  const session = (agent: string, id: string) =>
    restateClient({ ingress: server.ingress }).session(agent, id);

  /** Waits until the session's turn has suspended: deciding then makes it resume by replaying its journal. */
  const suspended = (object: string, key: string) =>
    waitFor(async () => {
      const rows = await server.query<{ status: string }>(
        `SELECT status FROM sys_invocation WHERE target_service_name = '${object}' AND target_service_key = '${key}'`,
      );
      return rows.some((row) => row.status === 'suspended');
    }, 20_000);

  beforeAll(async () => {
    server = await startRestateServer();
    endpoints.push(
      await serveAgents([refunder, outer, decoder, stamper, echoer], {
        port: 0,
        logger: quietLogger,
        register: server.admin,
        pii: { kinds: ['email'] },
        audit,
        // Turns suspend while they wait for people, and resume by replaying their journal.
        inactivityTimeout: 100,
        context: (request) => {
          contexts.push(request);
          return { user: `user-of-${request.sessionId}` };
        },
      }),
      await serveAgents([spender], {
        port: 0,
        logger: quietLogger,
        register: server.admin,
        budget: { tokens: 10 },
      }),
      await serveAgents([privy], {
        port: 0,
        logger: quietLogger,
        register: server.admin,
        pii: { kinds: ['email'], model: true },
      }),
      await serveAgents([cautious, patron], {
        port: 0,
        logger: quietLogger,
        register: server.admin,
        budget: { tokens: 25_000 },
        // Suspends while it waits for the approval: the turn resumes by replaying its journal.
        inactivityTimeout: 100,
      }),
    );
  }, 60_000);

  afterAll(async () => {
    await echoes.close();
    for (const endpoint of endpoints) await endpoint.close();
    await server?.stop();
  });

  it('applies exactly one decision to a call: a second is an ApprovalError that says which one applied', async () => {
    const refunderSession = session('refunder', 'r1');
    const started = await refunderSession.start('refund my order');
    let waiting: { callId: string }[] = [];
    await waitFor(async () => {
      waiting = await refunderSession.pendingApprovals();
      return waiting.length === 1;
    }, 20_000);
    const callId = waiting[0]?.callId as string;
    // Both decisions race; exactly one applies.
    const [approved, rejected] = await Promise.allSettled([
      session('refunder', 'r1').approve(callId),
      session('refunder', 'r1').reject(callId, 'no refunds today'),
    ]);
    const outcomes = [approved, rejected];
    const won = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    const lost = outcomes.filter((outcome) => outcome.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    const error = (lost[0] as PromiseRejectedResult).reason;
    expect(error).toBeInstanceOf(ApprovalError);
    const winner = (won[0] as PromiseFulfilledResult<{ status: string }>).value.status;
    expect(error.message).toBe(`Session "r1": cannot decide on call "${callId}": it was already ${winner}.`);
    const result = await restateClient({ ingress: server.ingress }).result(started.invocationId);
    expect(result.status).toBe('completed');
    expect(refunds.filter((id) => id === 'r1')).toHaveLength(winner === 'approved' ? 1 : 0);
    // Deciding again once the turn has the decision is refused the same way.
    await expect(refunderSession.approve(callId)).rejects.toThrow(
      `Session "r1": cannot decide on call "${callId}": it was already ${winner}.`,
    );
    await expect(refunderSession.approve('nope')).rejects.toBeInstanceOf(ApprovalError);
  });

  it('applies the decision a handler’s receipt names, also when the awakeable is resolved directly at once', async () => {
    const refunderSession = session('refunder', 'r3');
    const started = await refunderSession.start('refund my order');
    let waiting: { callId: string; awakeableId: string }[] = [];
    await waitFor(async () => {
      waiting = await refunderSession.pendingApprovals();
      return waiting.length === 1;
    }, 20_000);
    const [{ callId, awakeableId } = { callId: '', awakeableId: '' }] = waiting;
    const [direct, approved] = await Promise.allSettled([
      fetch(`${server.ingress}/restate/awakeables/${awakeableId}/resolve`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'reject', reason: 'resolved directly' }),
      }),
      refunderSession.approve(callId),
    ]);
    expect(direct.status).toBe('fulfilled');
    const result = await restateClient({ ingress: server.ingress }).result(started.invocationId);
    expect(result.status).toBe('completed');
    const [record] = await refunderSession.approvals();
    if (approved.status === 'fulfilled') {
      expect(record?.status).toBe('approved');
      expect(refunds.filter((id) => id === 'r3')).toHaveLength(1);
    } else {
      expect(approved.reason).toBeInstanceOf(ApprovalError);
      expect(record?.status).toBe('rejected');
      expect(refunds.filter((id) => id === 'r3')).toHaveLength(0);
    }
    await expect(refunderSession.approve(callId)).rejects.toThrow(`it was already ${record?.status}.`);
  });

  it('masks the events and records the audit trail through the same machinery as in-process', async () => {
    const refunderSession = session('refunder', 'r2');
    const turn = refunderSession.send('refund my order, I am jane.doe@example.com');
    let waiting: { callId: string }[] = [];
    await waitFor(async () => {
      waiting = await refunderSession.pendingApprovals();
      return waiting.length === 1;
    }, 20_000);
    await suspended('refunder', 'r2');
    await refunderSession.approve(waiting[0]?.callId as string);
    const result = await turn;
    expect(result.text).toContain('jane.doe@example.com');
    const events = JSON.stringify(await refunderSession.events());
    expect(events).not.toContain('jane.doe@example.com');
    expect(events).toContain('<EMAIL_1>');
    const records = sink.records.filter((record) => record.sessionId === 'r2');
    expect(JSON.stringify(records)).not.toContain('jane.doe@example.com');
    // The same records as the same turn in-process, each once (the turn suspended and replayed meanwhile).
    const local = memoryAuditSink();
    const localAudit = createAuditLog({ sink: local });
    await run(refunder, 'refund my order, I am jane.doe@example.com', {
      sessionId: 'r2',
      pii: { kinds: ['email'] },
      audit: localAudit,
      onApproval: () => ({ type: 'approve' }),
    });
    await localAudit.flush();
    const kinds = (list: readonly { type: string }[]) => list.map((record) => record.type).sort();
    // Redactions aside: in-process the streamed deltas are masked too, and Restate keeps no deltas.
    const notRedactions = (list: readonly { type: string }[]) =>
      kinds(list).filter((type) => type !== 'redaction');
    expect(notRedactions(records)).toEqual(notRedactions(local.records));
    expect(notRedactions(records)).toEqual(['approval_decided', 'approval_requested']);
    expect(kinds(records)).toContain('redaction');
  });

  it('masks what the model sees with pii.model, inside the journaled call, and reveals its answer', async () => {
    const result = await session('privy', 'p1').send('write to jane.doe@example.com');
    expect(result.text).toBe('noted: write to jane.doe@example.com');
    expect(JSON.stringify(privyModel.requests)).not.toContain('jane.doe@example.com');
    expect(JSON.stringify(privyModel.requests.at(-1)?.messages)).toContain('<EMAIL_1>');
    expect(JSON.stringify(await session('privy', 'p1').events())).not.toContain('jane.doe@example.com');
  });

  it('gives tools of an agent used as a tool the user’s session id and a run context computed per turn', async () => {
    const result = await session('outer', 'o1').send('who am I?');
    expect(result.text).toBe('outer: inner: session o1, user user-of-o1');
    // The turn's result counts the model calls of the agent it used as a tool (on its own object) too.
    expect(result.modelCalls).toBe(4);
    expect(contexts).toContainEqual({ sessionId: 'o1', agent: 'outer' });
    expect(contexts).toContainEqual({ sessionId: 'o1', agent: 'inner' });
  });

  it('gives the same events in the same order as in-process, deltas aside (Restate journals whole responses)', async () => {
    await session('decoder', 'd0').send('a number');
    const served = (await session('decoder', 'd0').events()).map((event) => event.type);
    const local: string[] = [];
    const s = stream(decoder, 'a number', { pii: { kinds: ['email'] } });
    for await (const event of s) local.push(event.type);
    const whole = (types: string[]) => types.filter((type) => type !== 'delta' && type !== 'reasoning_delta');
    expect(whole(served)).toEqual(whole(local));
    expect(served).toContain('decode_retry');
  });

  it('emits decode_retry events', async () => {
    const result = await session('decoder', 'd1').send('a number');
    expect(result.output).toEqual({ n: 1 });
    const events = await session('decoder', 'd1').events();
    expect(events.filter((event) => event.type === 'decode_retry')).toHaveLength(1);
  });

  it('keeps an agent’s tool sources (MCP servers): their tools are listed and called', async () => {
    const result = await session('stamper', 's1').send('stamp it');
    expect(result.text).toBe('stamper: stamped');
    expect(stamps.lists).toBeGreaterThan(0);
  });

  it('keeps an MCP server per session, set up from the run context, and closes it when the turn ends', async () => {
    const result = await session('echoer', 'm1').send('echo');
    expect(result.text).toBe('echoer: m1/user-of-m1:x');
    await waitFor(() => echoes.openConnections === 0 && sessionsHoldingResources() === 0, 10_000);
  });

  it('holds a turn to its budget, as in-process', async () => {
    const result = await session('spender', 'b1').send('spend');
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'budget_exhausted' });
    const local = await run(spender, 'spend', { budget: { tokens: 10 } });
    expect(local.stopReason).toBe('budget_exhausted');
    expect(result.usage).toEqual(local.usage);
  });

  it('counts the calls a resumed turn replays from the journal against its budget', async () => {
    const cautiousSession = session('cautious', 'b2');
    const turn = cautiousSession.send('go carefully');
    let waiting: { callId: string }[] = [];
    await waitFor(async () => {
      waiting = await cautiousSession.pendingApprovals();
      return waiting.length === 1;
    }, 20_000);
    await suspended('cautious', 'b2');
    await cautiousSession.approve(waiting[0]?.callId as string);
    const result = await turn;
    const local = await run(cautious, 'go carefully', {
      budget: { tokens: 25_000 },
      onApproval: () => ({ type: 'approve' }),
    });
    expect(local).toMatchObject({ stopReason: 'budget_exhausted' });
    expect(result).toMatchObject({ stopReason: 'budget_exhausted', toolCallCount: local.toolCallCount });
  });

  it('counts what an agent used as a tool spends on its caller’s turn budget', async () => {
    const result = await session('patron', 'b3').send('delegate');
    const local = await run(patron, 'delegate', { budget: { tokens: 25_000 } });
    expect(local).toMatchObject({ stopReason: 'budget_exhausted' });
    expect(result).toMatchObject({ stopReason: 'budget_exhausted', toolCallCount: 1 });
  });
});
