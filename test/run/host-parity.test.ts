import {
  agentTool,
  blockedPatterns,
  createAgentSystem,
  createAuditLog,
  defineAgent,
  memoryAuditSink,
  parallel,
  type RunEvent,
  run,
  stream,
  tool,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * Host parity: the same agent through every in-process entry point (run, stream, a session, parallel, an agent
 * used as a tool) gives the same events in the same order, masked the same way, and the same audit records. The
 * agent uses a tool that waits for approval, a decode retry, input and output guardrails and personal data in its
 * input. What differs by host is where the events sit (their depth and route), which the comparison leaves out.
 */

const email = 'ana.silva@example.com';

function makeAgent() {
  const lookup = tool({
    name: 'lookup',
    description: 'Looks an order up',
    input: z.object({ order: z.string() }),
    needsApproval: true,
    execute: ({ order }) => `order ${order}: shipped to ${email}`,
  });
  return defineAgent({
    name: 'clerk',
    description: 'Answers questions about orders',
    instructions: 'Answer with JSON.',
    model: scriptedModel([
      { toolCalls: [{ name: 'lookup', args: { order: '42' } }], usage: { input: 10, output: 5 } },
      { text: 'not json', usage: { input: 12, output: 3 } },
      { text: 'still not json', usage: { input: 13, output: 3 } },
      { text: '{"status":"shipped"}', usage: { input: 14, output: 4 } },
    ]),
    tools: [lookup],
    output: z.object({ status: z.string() }),
    guardrails: {
      input: [blockedPatterns([/DROP TABLE/])],
      output: [blockedPatterns([/password/])],
    },
  });
}

const input = `Where is order 42? Mail ${email}.`;
const approve = () => ({ type: 'approve' as const });
const pii = { events: true };

/** What must be the same on every host: types, in order, with their data minus times, ids and placement. */
function shape(events: readonly RunEvent[], depth = 0): string[] {
  return events
    .filter((event) => event.depth === depth)
    .map((event) => `${event.type} ${JSON.stringify(stable(event.data))}`);
}

function stable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stable);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value))
    if (!['durationMs', 'requestedAt', 'decidedAt', 'sessionId', 'route', 'time'].includes(key))
      out[key] = stable(field);
  return out;
}

function auditShape(records: readonly { type: string; data?: unknown }[]): string[] {
  return records.map((record) => `${record.type} ${JSON.stringify(stable(record.data ?? null))}`);
}

async function viaStream() {
  const sink = memoryAuditSink();
  const audit = createAuditLog({ sink });
  const events: RunEvent[] = [];
  const s = stream(makeAgent(), input, { onApproval: approve, pii, audit });
  for await (const event of s) events.push(event);
  const result = await s.result;
  await audit.flush();
  return { events, result, audit: sink.records };
}

describe('every host runs an agent the same way', () => {
  it('stream(), run(), a session, parallel() and agentTool give the same events, masking and audit', async () => {
    const reference = await viaStream();
    expect(reference.result.status).toBe('completed');
    expect(reference.result.output).toEqual({ status: 'shipped' });
    const types = reference.events.map((event) => event.type);
    for (const expected of ['run_start', 'approval_requested', 'decode_retry', 'guardrail', 'run_end'])
      expect(types).toContain(expected);
    expect(JSON.stringify(reference.events)).not.toContain(email);

    // run(): the same run, observed through the audit log.
    {
      const sink = memoryAuditSink();
      const audit = createAuditLog({ sink });
      const result = await run(makeAgent(), input, { onApproval: approve, pii, audit });
      await audit.flush();
      expect(result.output).toEqual(reference.result.output);
      expect(auditShape(sink.records)).toEqual(auditShape(reference.audit));
    }

    // A session, approving through the session.
    {
      const sink = memoryAuditSink();
      const audit = createAuditLog({ sink });
      const system = createAgentSystem({ audit, pii });
      const session = system.spawn(makeAgent(), input);
      const events: RunEvent[] = [];
      const reading = (async () => {
        for await (const event of session.events()) {
          events.push(event);
          if (event.type === 'approval_requested') await session.approve(event.data.callId);
        }
      })();
      const result = await session.result;
      await reading;
      await system.shutdown();
      expect(result.output).toEqual(reference.result.output);
      expect(shape(events)).toEqual(shape(reference.events));
      expect(auditShape(sink.records)).toEqual(auditShape(reference.audit));
    }

    // parallel() with one member.
    {
      const sink = memoryAuditSink();
      const audit = createAuditLog({ sink });
      const events: RunEvent[] = [];
      const merged = await parallel([makeAgent()], { merge: 'concat' }).run(input, {
        onApproval: approve,
        pii,
        audit,
        onEvent: (event) => events.push(event),
      });
      await audit.flush();
      expect(merged.results[0]?.output).toEqual(reference.result.output);
      expect(shape(events)).toEqual(shape(reference.events));
      expect(auditShape(sink.records)).toEqual(auditShape(reference.audit));
    }

    // The same agent used as a tool: its events one level down are the same.
    {
      const boss = defineAgent({
        name: 'boss',
        instructions: '',
        model: scriptedModel([{ toolCalls: [{ name: 'clerk', args: { input } }] }, { text: 'done' }]),
        tools: [agentTool(makeAgent())],
      });
      const events: RunEvent[] = [];
      const s = stream(boss, 'go', { onApproval: approve, pii });
      for await (const event of s) events.push(event);
      expect((await s.result).status).toBe('completed');
      expect(shape(events, 1)).toEqual(shape(reference.events));
    }
  });
});

describe('the single-actor path and a session run an agent the same way', () => {
  /** Tools, a decode retry, guardrails and personal data, but nothing that needs a session. */
  function plainAgent() {
    const lookup = tool({
      name: 'lookup',
      description: 'Looks an order up',
      input: z.object({ order: z.string() }),
      execute: ({ order }) => `order ${order}: shipped to ${email}`,
    });
    return defineAgent({
      name: 'clerk',
      instructions: 'Answer with JSON.',
      model: scriptedModel([
        { toolCalls: [{ name: 'lookup', args: { order: '42' } }], usage: { input: 10, output: 5 } },
        { text: 'not json', usage: { input: 12, output: 3 } },
        { text: 'still not json', usage: { input: 13, output: 3 } },
        { text: '{"status":"shipped"}', usage: { input: 14, output: 4 } },
      ]),
      tools: [lookup],
      output: z.object({ status: z.string() }),
      guardrails: { input: [blockedPatterns([/DROP TABLE/])], output: [blockedPatterns([/password/])] },
    });
  }

  it('stream() on one actor and system.spawn() give the same events, result and audit records', async () => {
    const plainSink = memoryAuditSink();
    const plainAudit = createAuditLog({ sink: plainSink });
    const plain: RunEvent[] = [];
    const s = stream(plainAgent(), input, { pii, audit: plainAudit });
    for await (const event of s) plain.push(event);
    const plainResult = await s.result;
    await plainAudit.flush();

    const sink = memoryAuditSink();
    const audit = createAuditLog({ sink });
    const system = createAgentSystem({ audit, pii });
    const session = system.spawn(plainAgent(), input);
    const events: RunEvent[] = [];
    const reading = (async () => {
      for await (const event of session.events()) events.push(event);
    })();
    const result = await session.result;
    await reading;
    await system.shutdown();

    expect(plainResult.output).toEqual({ status: 'shipped' });
    expect(result.output).toEqual(plainResult.output);
    expect(result.history).toEqual(plainResult.history);
    expect(result.usage).toEqual(plainResult.usage);
    expect(shape(events)).toEqual(shape(plain));
    expect(auditShape(sink.records)).toEqual(auditShape(plainSink.records));

    // parallel() runs members that need no session as children of one group actor: each member's events are
    // those of a run of its own, told apart by their route.
    const groupSink = memoryAuditSink();
    const groupAudit = createAuditLog({ sink: groupSink });
    const grouped: RunEvent[] = [];
    const merged = await parallel([plainAgent(), plainAgent()], { merge: 'concat' }).run(input, {
      pii,
      audit: groupAudit,
      onEvent: (event) => grouped.push(event),
    });
    await groupAudit.flush();
    expect(merged.results.map((member) => member.output)).toEqual([plainResult.output, plainResult.output]);
    const routes = [...new Set(grouped.map((event) => event.route))];
    expect(routes).toHaveLength(2);
    for (const route of routes)
      expect(shape(grouped.filter((event) => event.route === route))).toEqual(shape(plain));
    expect(groupSink.records).toHaveLength(2 * plainSink.records.length);
  });
});
