import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateHistory } from '../../src/core/history.ts';
import type { Message } from '../../src/core/messages.ts';
import { RestateRequestError, restateClient } from '../../src/restate/client.ts';
import { type ServedEndpoint, serveAgents } from '../../src/restate/serve.ts';
import { ApprovalError } from '../../src/sessions/approval-error.ts';
import { deskAgents, type EffectLine, memoryProbe } from './support/desk-agents.ts';
import {
  quietLogger,
  type RestateServer,
  restateUnavailable,
  startRestateServer,
} from './support/restate-server.ts';

const unavailable = restateUnavailable();
if (unavailable) console.warn(`Skipping the Restate tests: ${unavailable}.`);

/** Ids of the calls to `tool` in a history, in order. */
function callIds(history: readonly Message[], tool: string): string[] {
  return history.flatMap((message) =>
    message.role === 'assistant'
      ? (message.toolCalls ?? []).filter((c) => c.name === tool).map((c) => c.id)
      : [],
  );
}

function starts(lines: readonly EffectLine[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of lines) if (line.phase === 'start') counts.set(line.key, (counts.get(line.key) ?? 0) + 1);
  return counts;
}

describe.skipIf(unavailable !== undefined)('troupe/restate: turns through the ingress', () => {
  let server: RestateServer;
  let endpoint: ServedEndpoint;
  const probe = memoryProbe();
  const client = () => restateClient({ ingress: server.ingress });

  beforeAll(async () => {
    server = await startRestateServer();
    const agents = deskAgents(probe);
    // The endpoint registers itself with the server.
    endpoint = await serveAgents([agents.triage, agents.clerk], {
      port: 0,
      logger: quietLogger,
      register: server.admin,
    });
  }, 60_000);

  afterAll(async () => {
    await endpoint?.close();
    await server?.stop();
  });

  it('runs turns in the session object: parallel tools, a handoff inside it, an agent tool as another object', async () => {
    const session = client().session('triage', 'user-1');
    const first = await session.send('[u1/t1] where is my order?');
    expect(first).toMatchObject({
      sessionId: 'user-1',
      status: 'completed',
      stopReason: 'completed',
      agent: 'support',
      path: ['triage', 'support'],
      text: 'support u1/t1: research u1/t1/r: facts about topic of u1/t1/r',
    });
    validateHistory(first.history);
    expect(first.history.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([
      'facts about orders',
      '4',
      'Transferred to support.',
      'research u1/t1/r: facts about topic of u1/t1/r',
    ]);

    // The next turn starts with the agent that answered; the conversation continues.
    const second = await session.send('[u1/t2] and my refund?');
    expect(second).toMatchObject({ status: 'completed', agent: 'support', path: ['support'] });
    expect(second.history.slice(0, first.history.length)).toEqual(first.history);
    validateHistory(second.history);
    expect(await session.history()).toEqual(second.history);
    expect(await session.status()).toMatchObject({
      sessionId: 'user-1',
      agent: 'support',
      turns: 2,
      turn: { number: 2, status: 'done', outcome: { status: 'completed', agent: 'support' } },
      pendingApprovals: 0,
    });

    // The agent used as a tool ran in its own object, keyed by the session, turn and call.
    const [researchCall] = callIds(first.history, 'research');
    const sub = client().session('researcher', `user-1>1.${researchCall}`);
    const subHistory = await sub.history();
    expect(subHistory[0]).toEqual({ role: 'user', content: '[u1/t1/r] research for u1/t1' });
    expect(subHistory.at(-1)).toMatchObject({ role: 'assistant', agent: 'researcher' });

    // Every model and tool call ran exactly once: 9 in the first turn (3 of them in the researcher's object), 5 in
    // the second.
    const counts = starts(probe.lines);
    expect(counts.size).toBe(14);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
  });

  it('keeps the last turn’s events, numbered across turns', async () => {
    const session = client().session('triage', 'user-2');
    await session.send('[u2/t1] hello');
    const firstEvents = await session.events();
    expect(firstEvents[0]).toMatchObject({ type: 'run_start', agent: 'triage', seq: 0, sessionId: 'user-2' });
    expect(firstEvents.at(-1)).toMatchObject({
      type: 'run_end',
      agent: 'support',
      data: { status: 'completed' },
    });
    const types = firstEvents.map((event) => event.type);
    expect(types).toContain('handoff');
    // triage twice, support twice (the researcher's are in its own object's events).
    expect(types.filter((type) => type === 'model_response')).toHaveLength(4);
    expect(types.filter((type) => type === 'tool_response')).toHaveLength(3);
    expect(firstEvents.map((event) => event.seq)).toEqual(firstEvents.map((_, i) => i));

    await session.send('[u2/t2] again');
    const secondEvents = await session.events();
    expect(secondEvents[0]?.seq).toBe(firstEvents.length);
    expect(secondEvents[0]).toMatchObject({ type: 'run_start', agent: 'support' });
  });

  it('refuses bad input and unknown calls with typed errors', async () => {
    const session = client().session('triage', 'user-3');
    await expect(session.send(42 as never)).rejects.toMatchObject({ status: 400 });
    await expect(session.send(42 as never)).rejects.toBeInstanceOf(RestateRequestError);
    const rejected = session.approve('nope');
    await expect(rejected).rejects.toBeInstanceOf(ApprovalError);
    await expect(rejected).rejects.toThrow(
      'Session "user-3": cannot decide on call "nope": no call waits under this id.',
    );
  });

  it('imports a conversation kept elsewhere, then continues it', async () => {
    const session = client().session('triage', 'user-4');
    const transcript: Message[] = [
      { role: 'user', content: '[u4/t0] earlier question' },
      { role: 'assistant', content: 'earlier answer', agent: 'support' },
    ];
    expect(await session.importConversation(transcript, 'support')).toMatchObject({
      agent: 'support',
      turns: 0,
    });
    await expect(session.importConversation(transcript)).rejects.toMatchObject({ status: 409 });
    const next = await session.send('[u4/t1] follow-up');
    expect(next).toMatchObject({ status: 'completed', agent: 'support', path: ['support'] });
    expect(next.history.slice(0, 2)).toEqual(transcript);
  });
});
