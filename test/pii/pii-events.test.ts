import {
  agentTool,
  createAgentSystem,
  createMemoryStore,
  defineAgent,
  type ModelRequest,
  type RunEvent,
  run,
  stream,
  tool,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import type { InspectionEvent } from 'xstate';
import { z } from 'zod';
import { lookAlikes, positives } from './pii-samples.ts';

const email = 'bob@example.com';
const card = '4111 1111 1111 1111';
const phone = '+1 415 555 2671';
const key = 'sk-proj-AbC123dEf456GhI789jKl012MnO345pQr678';
const secrets = [email, card, phone, key, '4111111111111111', '+14155552671'];

function leaks(text: string): string[] {
  return secrets.filter((value) => text.includes(value));
}

async function collect(events: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const all: RunEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

describe('PII masking in events', () => {
  it('masks values split across streamed deltas, and reports counts in redaction events', async () => {
    const model = scriptedModel([
      {
        deltas: [
          'Write to bob@exa',
          'mple.com or call +1 415',
          ' 555 2671; card 4111 1111 ',
          '1111 1111 ok. ',
          'Bye',
        ],
      },
    ]);
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const events = await collect(stream(agent, `My key is ${key}`, { pii: {} }));
    const text = events.flatMap((event) => (event.type === 'delta' ? [event.data.content] : [])).join('');
    expect(text).toBe('Write to <EMAIL_1> or call <PHONE_1>; card <CARD_1> ok. Bye');
    expect(leaks(JSON.stringify(events))).toEqual([]);
    const start = events.find((event) => event.type === 'run_start');
    expect(start?.data).toMatchObject({ input: 'My key is <SECRET_1>' });
    const redactions = events.flatMap((event) => (event.type === 'redaction' ? [event.data] : []));
    const total: Record<string, number> = {};
    for (const redaction of redactions) {
      expect(redaction.target).toBe('events');
      for (const [kind, count] of Object.entries(redaction.counts)) total[kind] = (total[kind] ?? 0) + count;
    }
    // The streamed text (one each) plus the model_response event (one each) plus the input's key.
    expect(total).toEqual({ email: 2, phone: 2, card: 2, secret: 1 });
    // Seq numbers stay gap-free.
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
  });

  it('streams text without PII with little holding back', async () => {
    const model = scriptedModel([
      { deltas: ['Hello ', 'there, ', 'version 1.2.3 ', 'order 12345 ', 'done'] },
    ]);
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const deltas: string[] = [];
    for await (const event of stream(agent, 'hi', { pii: {} }))
      if (event.type === 'delta') deltas.push(event.data.content);
    // Only what a value could still grow from waits: "12345 " (a card's first group) and the word being written
    // ("done" may meet an "@"); "1.2.3 " can start no value, and goes at once.
    expect(deltas).toEqual(['Hello ', 'there, ', 'version 1.2.3 ', 'order ', '12345 ', 'done']);
  });

  it('masks tool calls, streamed tool arguments and tool results; look-alikes pass unchanged', async () => {
    const lookup = tool({
      name: 'lookup',
      description: 'finds a customer',
      input: z.object({ email: z.string(), order: z.string() }),
      execute: ({ email: address, order }) => `customer ${address} paid order ${order} with ${card}`,
    });
    const model = scriptedModel(
      [
        { toolCalls: [{ id: 'c1', name: 'lookup', args: { email, order: 'INV-2024-000123' } }] },
        { text: 'Released v2.4.1 on 2024-05-17, uuid 123e4567-e89b-12d3-a456-426614174000' },
      ],
      { streamToolCalls: true },
    );
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [lookup] });
    const events = await collect(stream(agent, 'find bob', { pii: {} }));
    expect(leaks(JSON.stringify(events))).toEqual([]);
    const call = events.find((event) => event.type === 'tool_call');
    expect(call?.data).toMatchObject({ args: { email: '<EMAIL_1>', order: 'INV-2024-000123' } });
    const argsText = events.flatMap((event) =>
      event.type === 'tool_call_delta' ? [event.data.argsDelta] : [],
    );
    expect(argsText.join('')).toContain('<EMAIL_1>');
    const response = events.find((event) => event.type === 'tool_response');
    expect(response?.data).toMatchObject({
      content: 'customer <EMAIL_1> paid order INV-2024-000123 with <CARD_1>',
      contentPreview: 'customer <EMAIL_1> paid order INV-2024-000123 with <CARD_1>',
    });
    const final = events.find((event) => event.type === 'model_response' && event.data.step === 2);
    expect(final?.data).toMatchObject({
      text: 'Released v2.4.1 on 2024-05-17, uuid 123e4567-e89b-12d3-a456-426614174000',
    });
  });

  it('lets look-alikes through events and inspector frames unchanged, and masks every positive', async () => {
    const harmless = lookAlikes.join(' | ');
    const frames: string[] = [];
    const model = scriptedModel([{ text: harmless }]);
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const events: RunEvent[] = [];
    const s = stream(agent, harmless, {
      pii: { defaultCountry: 'US' },
      inspect: (event: InspectionEvent) => {
        const frame = event as InspectionEvent & { snapshot?: { context?: unknown } };
        if (frame.snapshot?.context) frames.push(JSON.stringify(frame.snapshot.context));
      },
    });
    for await (const event of s) events.push(event);
    expect(events.find((event) => event.type === 'run_start')?.data).toMatchObject({ input: harmless });
    expect(
      events
        .filter((event) => event.type === 'delta')
        .map((event) => event.data.content)
        .join(''),
    ).toBe(harmless);
    expect(events.find((event) => event.type === 'model_response')?.data).toMatchObject({ text: harmless });
    expect(events.some((event) => event.type === 'redaction')).toBe(false);
    expect(frames.at(-1)).toContain(JSON.stringify(harmless).slice(1, -1));

    const values = Object.values(positives).flat();
    const sensitive = values.join(' | ');
    const masked = await collect(
      stream(
        defineAgent({ name: 'b', instructions: '', model: scriptedModel([{ text: sensitive }]) }),
        sensitive,
        {
          pii: { defaultCountry: 'US' },
        },
      ),
    );
    const shown = JSON.stringify(masked);
    for (const value of values) expect(shown, value).not.toContain(value);

    // The harshest split: three characters per delta.
    const pieces = sensitive.match(/[\s\S]{1,3}/g) ?? [];
    const tiny = await collect(
      stream(defineAgent({ name: 'c', instructions: '', model: scriptedModel([{ deltas: pieces }]) }), 'go', {
        pii: { defaultCountry: 'US' },
      }),
    );
    const streamed = tiny.flatMap((event) => (event.type === 'delta' ? [event.data.content] : [])).join('');
    for (const value of values) expect(streamed, value).not.toContain(value);
    const modelText = tiny.find((event) => event.type === 'model_response');
    expect(modelText?.data).toMatchObject({ text: streamed });
  });

  it('masks inspector frames (snapshots and events)', async () => {
    const frames: string[] = [];
    const model = scriptedModel([{ text: `Your card ${card} is on file.` }]);
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const result = await run(agent, `I am ${email}`, {
      pii: {},
      inspect: (event: InspectionEvent) => {
        const frame = event as InspectionEvent & { snapshot?: { context?: unknown }; event?: unknown };
        frames.push(JSON.stringify({ context: frame.snapshot?.context ?? null, event: frame.event ?? null }));
      },
    });
    // The caller gets the real answer; only what leaves for observers is masked.
    expect(result.text).toBe(`Your card ${card} is on file.`);
    const all = frames.join('\n');
    expect(all).toContain('<EMAIL_1>');
    expect(all).toContain('<CARD_1>');
    expect(leaks(all)).toEqual([]);
  });

  it("masks a session's inspector frames", async () => {
    const frames: string[] = [];
    const system = createAgentSystem({
      pii: {},
      inspect: (event: InspectionEvent) => {
        const frame = event as InspectionEvent & { snapshot?: { context?: unknown }; event?: unknown };
        frames.push(JSON.stringify({ context: frame.snapshot?.context ?? null, event: frame.event ?? null }));
      },
    });
    const model = scriptedModel([{ text: `Card ${card} noted` }]);
    const session = system.spawn(defineAgent({ name: 'a', instructions: '', model }), `I am ${email}`);
    expect((await session.result).text).toBe(`Card ${card} noted`);
    const all = frames.join('\n');
    expect(all).toContain('<EMAIL_1>');
    expect(all).toContain('<CARD_1>');
    expect(leaks(all)).toEqual([]);
    await system.shutdown();
  });

  it("masks a session's stored event log; the stored conversation keeps what a resume needs", async () => {
    const store = createMemoryStore();
    const system = createAgentSystem({ store, pii: {} });
    const model = scriptedModel([{ text: `Noted: ${email}` }]);
    const session = system.spawn(defineAgent({ name: 'a', instructions: '', model }), `mail ${email}`);
    const seen = await collect(session.events());
    const result = await session.result;
    expect(result.text).toBe(`Noted: ${email}`);
    expect(leaks(JSON.stringify(seen))).toEqual([]);
    const stored = await store.readEvents(session.sessionId, -1);
    expect(stored.length).toBeGreaterThan(0);
    expect(leaks(JSON.stringify(stored))).toEqual([]);
    expect(JSON.stringify(stored)).toContain('<EMAIL_1>');
    await system.shutdown();
  });
});

describe('PII masking towards the model', () => {
  it('sends placeholders, reveals them for the tool, and answers the caller with real values', async () => {
    const requests: ModelRequest[] = [];
    let sentTo = '';
    const sendMail = tool({
      name: 'send_mail',
      description: 'sends an email',
      input: z.object({ to: z.string(), body: z.string() }),
      execute: ({ to }) => {
        sentTo = to;
        return `sent to ${to}`;
      },
    });
    const model = scriptedModel((request, index) => {
      requests.push(request);
      return index === 0
        ? { toolCalls: [{ id: 'c1', name: 'send_mail', args: { to: '<EMAIL_1>', body: 'Hi <PHONE_1>' } }] }
        : { text: 'Mailed <EMAIL_1> as asked.' };
    });
    const agent = defineAgent({ name: 'a', instructions: 'Be brief.', model, tools: [sendMail] });
    const events: RunEvent[] = [];
    const s = stream(agent, `Mail ${email}, my phone is ${phone}`, { pii: { model: true } });
    for await (const event of s) events.push(event);
    const result = await s.result;
    expect(sentTo).toBe(email);
    expect(result.text).toBe(`Mailed ${email} as asked.`);
    for (const request of requests) expect(leaks(JSON.stringify(request.messages))).toEqual([]);
    expect(JSON.stringify(requests[1]?.messages)).toContain('sent to <EMAIL_1>');
    expect(JSON.stringify(requests[0]?.messages)).toContain('Mail <EMAIL_1>, my phone is <PHONE_1>');
    const modelRedactions = events.flatMap((event) =>
      event.type === 'redaction' && event.data.target === 'model' ? [event.data.counts] : [],
    );
    expect(modelRedactions[0]).toEqual({ email: 1, phone: 1 });
    expect(leaks(JSON.stringify(events))).toEqual([]);
    // The conversation holds real values: a resumed run masks it again the same way.
    expect(JSON.stringify(result.history)).toContain(email);
  });

  it("an agent used as a tool shares its caller's placeholders", async () => {
    const innerRequests: ModelRequest[] = [];
    const inner = defineAgent({
      name: 'helper',
      description: 'checks an address',
      instructions: '',
      model: scriptedModel((request) => {
        innerRequests.push(request);
        return { text: 'checked <EMAIL_1>' };
      }),
    });
    const outer = defineAgent({
      name: 'outer',
      instructions: '',
      tools: [agentTool(inner)],
      model: scriptedModel((_request, index) =>
        index === 0
          ? { toolCalls: [{ id: 'c1', name: 'helper', args: { input: 'check <EMAIL_1>' } }] }
          : { text: 'all good' },
      ),
    });
    const events = await collect(stream(outer, `is ${email} ok?`, { pii: { model: true } }));
    expect(JSON.stringify(innerRequests[0]?.messages)).toContain('check <EMAIL_1>');
    expect(leaks(JSON.stringify(innerRequests))).toEqual([]);
    expect(leaks(JSON.stringify(events))).toEqual([]);
    const helperResult = events.find((event) => event.type === 'tool_response');
    expect(helperResult?.data).toMatchObject({ content: 'checked <EMAIL_1>' });
  });

  it('rejects unknown options with a clear error', async () => {
    const agent = defineAgent({ name: 'a', instructions: '', model: scriptedModel([{ text: 'x' }]) });
    await expect(run(agent, 'x', { pii: { kinds: ['email', 'dna' as 'email'] } })).rejects.toThrow(
      /unknown pii kind "dna"/,
    );
    await expect(run(agent, 'x', { pii: { defaultCountry: 'usa' } })).rejects.toThrow(/two-letter/);
    await expect(run(agent, 'x', { pii: { mask: true } as never })).rejects.toThrow(/mask/);
    expect(() => createAgentSystem({ pii: { kinds: ['dna' as 'email'] } })).toThrow(/unknown pii kind/);
  });
});
