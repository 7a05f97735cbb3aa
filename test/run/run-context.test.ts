import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  agentTool,
  contextType,
  createAgentSystem,
  createSqliteStore,
  defineAgent,
  type RunEvent,
  run,
  stream,
  type ToolContext,
  tool,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * The run context reaches tools, instruction functions, nested agents and each session turn, and never the model,
 * the events, the store or the inspector.
 */

interface AppContext {
  user: string;
  apiKey: string;
}

const secret = 'sk-context-secret-4f1d9c';
const contextOf = (user: string): AppContext => ({ user, apiKey: secret });

/** A tool that records the context it got and answers with the user's name only. */
function whoamiTool(seen: AppContext[]) {
  return tool({
    name: 'whoami',
    description: 'Says who the user is.',
    input: z.object({}),
    contextType: contextType<AppContext>(),
    execute: (_args, ctx: ToolContext<AppContext>) => {
      seen.push(ctx.context);
      return `user ${ctx.context.user}`;
    },
  });
}

const callWhoami = (id = 'c1') => ({
  toolCalls: [{ id, name: 'whoami', args: {} }],
  stopReason: 'tool_use' as const,
});

function safeStringify(value: unknown): string {
  const seen = new WeakSet<object>();
  return JSON.stringify(value, (_key, item: unknown) => {
    if (typeof item === 'function') return undefined;
    if (typeof item === 'object' && item !== null) {
      if (seen.has(item)) return '[cycle]';
      seen.add(item);
    }
    return item;
  });
}

let directory = '';
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'troupe-context-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('the run context', () => {
  it('reaches tools and the instruction function of a run, and not the model', async () => {
    const seen: AppContext[] = [];
    const model = scriptedModel([callWhoami(), { text: 'done' }]);
    const agent = defineAgent({
      name: 'support',
      contextType: contextType<AppContext>(),
      instructions: async ({ context, agent: name, turn }) => `${name} helps ${context.user} (turn ${turn}).`,
      model,
      tools: [whoamiTool(seen)],
    });
    const context = contextOf('ada');
    const result = await run(agent, 'who am I?', { context });
    expect(result.status).toBe('completed');
    expect(seen).toEqual([context]);
    expect(seen[0]).toBe(context);
    expect(model.requests[0]?.messages[0]).toEqual({
      role: 'system',
      content: 'support helps ada (turn 1).',
    });
    expect(safeStringify(model.requests)).not.toContain(secret);
  });

  it('fails the run with a clear error when the instruction function throws', async () => {
    const agent = defineAgent({
      name: 'support',
      instructions: () => {
        throw new Error('no profile');
      },
      model: scriptedModel([{ text: 'never' }]),
    });
    const result = await run(agent, 'hi');
    expect(result).toMatchObject({ status: 'failed', stopReason: 'error' });
    expect(result.error?.message).toContain('instructions: no profile');
  });

  it('reaches agents used as tools, in a plain run and in a session', async () => {
    const seen: AppContext[] = [];
    const researcher = () =>
      defineAgent({
        name: 'researcher',
        description: 'Looks the user up.',
        contextType: contextType<AppContext>(),
        instructions: ({ context }) => `Research for ${context.user}.`,
        model: scriptedModel([callWhoami('n1'), { text: 'found' }]),
        tools: [whoamiTool(seen)],
      });
    const lead = () =>
      defineAgent({
        name: 'lead',
        contextType: contextType<AppContext>(),
        instructions: '',
        model: scriptedModel([
          { toolCalls: [{ id: 'r1', name: 'researcher', args: { input: 'who?' } }], stopReason: 'tool_use' },
          { text: 'ok' },
        ]),
        tools: [agentTool(researcher())],
      });
    const plain = await run(lead(), 'go', { context: contextOf('plain') });
    expect(plain.status).toBe('completed');
    const system = createAgentSystem();
    const session = system.spawn(lead(), 'go', { context: contextOf('session') });
    expect((await session.result).status).toBe('completed');
    await system.shutdown();
    expect(seen.map((context) => context.user)).toEqual(['plain', 'session']);
  });

  it('reaches handoff targets, and each session turn gets the context it was sent with', async () => {
    const seen: AppContext[] = [];
    const prompts: string[] = [];
    const whoami = whoamiTool(seen);
    const billing = defineAgent({
      name: 'billing',
      contextType: contextType<AppContext>(),
      instructions: ({ context }) => {
        prompts.push(context.user);
        return `Billing for ${context.user}.`;
      },
      model: scriptedModel([callWhoami('b1'), { text: 'billed' }, callWhoami('b2'), { text: 'again' }]),
      tools: [whoami],
    });
    const triage = defineAgent({
      name: 'triage',
      contextType: contextType<AppContext>(),
      instructions: '',
      model: scriptedModel([
        { toolCalls: [{ name: 'transfer_to_billing', args: {} }], stopReason: 'tool_use' },
      ]),
      handoffs: [billing],
    });
    const system = createAgentSystem();
    const session = system.spawn(triage, 'bill me', { context: contextOf('first') });
    expect((await session.result).text).toBe('billed');
    const second = await session.send('again', { context: contextOf('second') });
    expect(second.text).toBe('again');
    await system.shutdown();
    expect(seen.map((context) => context.user)).toEqual(['first', 'second']);
    expect(prompts).toEqual(['first', 'first', 'second', 'second']);
  });

  it('never reaches events, the SQLite store or inspector frames; a recovered session gets it again', async () => {
    const path = join(directory, 'sessions.db');
    const seen: AppContext[] = [];
    const frames: string[] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = tool({
      name: 'slow',
      description: 'Waits.',
      input: z.object({}),
      contextType: contextType<AppContext>(),
      execute: async (_args, ctx) => {
        seen.push(ctx.context);
        await Promise.race([gate, new Promise((resolve) => ctx.signal.addEventListener('abort', resolve))]);
        return 'slow done';
      },
    });
    const agent = (model: ReturnType<typeof scriptedModel>) =>
      defineAgent({
        name: 'worker',
        contextType: contextType<AppContext>(),
        instructions: ({ context }) => `Work for ${context.user}.`,
        model,
        tools: [slow],
      });
    const first = createAgentSystem({
      store: createSqliteStore(path),
      inspect: (event) => frames.push(safeStringify(event)),
    });
    const events: RunEvent[] = [];
    const all = (async () => {
      for await (const event of first.events()) events.push(event);
    })();
    const session = first.spawn(
      agent(scriptedModel([{ toolCalls: [{ id: 's1', name: 'slow', args: {} }], stopReason: 'tool_use' }])),
      'work',
      { sessionId: 'w-1', context: contextOf('before') },
    );
    while (seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    await first.shutdown();
    await all;
    await session.result;

    release();
    const second = createAgentSystem({
      store: createSqliteStore(path),
      agents: [agent(scriptedModel([{ text: 'finished' }]))],
    });
    const { sessions } = await second.recover({
      contextFor: ({ sessionId: id }) => contextOf(`recovered ${id}`),
    });
    const result = await (sessions[0] as (typeof sessions)[number]).result;
    expect(result).toMatchObject({ status: 'completed', text: 'finished' });
    expect(seen.map((context) => context.user)).toEqual(['before', 'recovered w-1']);
    await second.shutdown();

    expect(events.length).toBeGreaterThan(0);
    expect(frames.length).toBeGreaterThan(0);
    expect(safeStringify(events)).not.toContain(secret);
    expect(frames.join('\n')).not.toContain(secret);
    const bytes = await readFile(path);
    expect(bytes.includes(Buffer.from(secret))).toBe(false);
    for (const suffix of ['-wal', '-journal']) {
      const side = await readFile(`${path}${suffix}`).catch(() => undefined);
      if (side) expect(side.includes(Buffer.from(secret))).toBe(false);
    }
  });

  it('reaches approval predicates', async () => {
    const asked: string[] = [];
    const pay = tool({
      name: 'pay',
      description: 'Pays.',
      input: z.object({}),
      needsApproval: (_args, ctx) => {
        asked.push((ctx.context as AppContext).user);
        return false;
      },
      execute: () => 'paid',
    });
    const agent = defineAgent({
      name: 'payer',
      contextType: contextType<AppContext>(),
      instructions: '',
      model: scriptedModel([
        { toolCalls: [{ name: 'pay', args: {} }], stopReason: 'tool_use' },
        { text: 'ok' },
      ]),
      tools: [pay],
    });
    const result = await run(agent, 'pay', {
      context: contextOf('payer'),
      onApproval: () => ({ type: 'approve' }),
    });
    expect(result.status).toBe('completed');
    expect(asked).toEqual(['payer']);
  });

  it('reaches the tools of a stream()', async () => {
    const seen: AppContext[] = [];
    const agent = defineAgent({
      name: 'support',
      contextType: contextType<AppContext>(),
      instructions: '',
      model: scriptedModel([callWhoami(), { text: 'done' }]),
      tools: [whoamiTool(seen)],
    });
    const running = stream(agent, 'who?', { context: contextOf('streamed') });
    const types: string[] = [];
    for await (const event of running) types.push(event.type);
    expect(types).toContain('tool_response');
    expect(seen.map((context) => context.user)).toEqual(['streamed']);
  });
});
