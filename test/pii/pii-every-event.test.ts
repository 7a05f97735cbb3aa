import { defineAgent, PiiMasker, piiKinds, type RunEvent, stream, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { EventDelivery } from '../../src/core/event-bus.ts';
import type { RunEventType } from '../../src/core/events.ts';
import { maskingEventFilter } from '../../src/pii/event-masking.ts';

const values = [
  'bob@example.com',
  '+1 415 555 2671',
  '4111111111111111',
  'sk-proj-AbC123dEf456GhI789jKl012MnO345pQr678',
  'DE89370400440532013000',
];

/** A string holding a personal value (a different one each time), as any field of any event might. */
let next = 0;
function pii(): string {
  return `see ${values[next++ % values.length]} here`;
}

const usage = { input: 1, output: 2, cached: 0, reasoning: 0, total: 3 };

/**
 * Data of every event type with personal data in every string and in object keys, typed fields included (masking
 * must not depend on which fields an event type is known to carry). The mapped type makes a new event type a
 * compile error here until it has a sample.
 */
function samples(): { [T in RunEventType]: Record<string, unknown> } {
  return {
    run_start: { input: { [pii()]: pii() }, historyLength: 1, model: pii(), provider: pii() },
    run_end: { status: pii(), stopReason: pii(), modelCalls: 1, toolCallCount: 0, usage },
    phase: { phase: pii(), state: pii(), step: 1, retryCount: 0 },
    delta: { content: pii() },
    reasoning_delta: { content: pii() },
    tool_call_delta: { index: 0, id: pii(), name: pii(), argsDelta: pii() },
    model_response: { step: 1, text: pii(), toolCallCount: 0, stopReason: pii(), usage },
    tool_call: {
      id: pii(),
      function: { name: pii(), arguments: JSON.stringify({ [pii()]: pii() }) },
      args: { [pii()]: pii(), nested: [{ [pii()]: [pii()] }] },
    },
    tool_response: {
      callId: pii(),
      name: pii(),
      contentPreview: pii(),
      content: pii(),
      isError: true,
      attempts: 1,
      durationMs: 1,
    },
    approval_requested: {
      sessionId: 's',
      callId: pii(),
      agent: pii(),
      route: pii(),
      tool: pii(),
      args: { [pii()]: pii() },
      kind: 'approval',
      question: pii(),
      requestedAt: 1,
    },
    approval_decided: { callId: pii(), tool: pii(), decision: { type: 'reject', reason: pii() } },
    resumed: { turn: 1, from: 'running', agent: pii() },
    tool_retry: { callId: pii(), name: pii(), attempt: 1, error: pii() },
    usage: {
      usage,
      cumulative: { ...usage, [pii()]: 0 },
    },
    decode_retry: { retryCount: 1, error: pii() },
    error: { message: pii(), type: pii(), code: pii() },
    budget_warning: { scope: pii(), dimension: 'usd', spent: 1, limit: 2, threshold: 0.5 },
    budget_wait: { scope: pii(), dimension: 'tokens' },
    quota_wait: { quota: pii(), position: 1 },
    spend: { model: pii(), tokens: 1, usd: null, usage, returnedTokens: 0, returnedUsd: null },
    handoff: { from: pii(), to: pii(), outcome: 'refused', depth: 1, path: [pii(), pii()], reason: pii() },
    supervisor: {
      decision: 'restart',
      agent: pii(),
      error: { name: 'ToolError', code: pii(), message: pii() },
      restarts: 1,
    },
    guardrail: {
      guardrail: pii(),
      stage: 'tool_input',
      decision: 'warn',
      message: pii(),
      toolCallId: pii(),
      tool: pii(),
    },
    permission: { tool: pii(), callId: pii(), decision: 'deny', reason: pii() },
    redaction: { target: 'events', counts: { [pii()]: 1 } },
    breaker: { breaker: pii(), scope: 'tool', state: 'open', reason: pii() },
    mcp_sampling: {
      server: pii(),
      callId: pii(),
      model: pii(),
      outcome: 'refused',
      usage: null,
      reason: pii(),
    },
    mcp_server_unavailable: {
      server: pii(),
      error: { name: 'McpConnectionError', code: pii(), message: pii() },
      retryInMs: 1,
    },
  };
}

function leaks(text: string): string[] {
  return values.filter((value) => text.includes(value) || text.includes(JSON.stringify(value).slice(1, -1)));
}

describe('PII masking of every event', () => {
  for (const [type, data] of Object.entries(samples()) as [RunEventType, Record<string, unknown>][]) {
    it(`masks every string and every key of a ${type} event`, () => {
      const filter = maskingEventFilter(new PiiMasker({ kinds: new Set(piiKinds) }));
      const delivered: unknown[] = [];
      const deliver: EventDelivery = (_agent, deliveredType, deliveredData) =>
        delivered.push({ type: deliveredType, data: deliveredData });
      filter('agent', type, data as never, undefined, deliver);
      // Streamed text still held goes out before the next other event.
      filter(
        'agent',
        'phase',
        { phase: 'completed', state: 'done', step: 1, retryCount: 0 },
        undefined,
        deliver,
      );
      const shown = JSON.stringify(delivered);
      expect(leaks(shown)).toEqual([]);
      expect(shown).toMatch(/<(EMAIL|PHONE|CARD|SECRET|IBAN)_1>/);
    });
  }

  it("masks a tool response's preview from its masked content (a value cut by the preview is not let through)", () => {
    const filter = maskingEventFilter(new PiiMasker({ kinds: new Set(piiKinds) }));
    const content = `${'x'.repeat(190)} 4111 1111 1111 1111 and more`;
    const delivered: { data: unknown }[] = [];
    filter(
      'agent',
      'tool_response',
      {
        callId: 'c1',
        name: 'lookup',
        content,
        contentPreview: `${content.slice(0, 200)}…`,
        isError: false,
        attempts: 1,
        durationMs: 1,
      },
      undefined,
      (_agent, _type, data) => delivered.push({ data }),
    );
    expect(delivered[0]?.data).toMatchObject({
      content: `${'x'.repeat(190)} <CARD_1> and more`,
      contentPreview: `${'x'.repeat(190)} <CARD_1> …`,
    });
  });

  it('masks the name an unknown tool was called by and the keys of its arguments, end to end', async () => {
    const model = scriptedModel([
      {
        toolCalls: [
          { id: 'c1', name: 'mail_bob@example.com', args: { 'ann@example.org': '4111111111111111' } },
        ],
      },
      { text: 'done' },
    ]);
    const known = tool({ name: 'known', description: 'a tool', input: z.object({}), execute: () => 'ok' });
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [known] });
    const events: RunEvent[] = [];
    for await (const event of stream(agent, 'go', { pii: {} })) events.push(event);
    const shown = JSON.stringify(events);
    for (const value of ['bob@example.com', 'ann@example.org', '4111111111111111'])
      expect(shown, value).not.toContain(value);
    const response = events.find((event) => event.type === 'tool_response');
    expect(response?.data).toMatchObject({ name: '<EMAIL_1>', isError: true });
    const call = events.find((event) => event.type === 'tool_call');
    expect(call?.data).toMatchObject({ args: { '<EMAIL_2>': '<CARD_1>' } });
  });
});
