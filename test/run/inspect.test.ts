import { createAgentSystem, defineAgent, run, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it, vi } from 'vitest';
import type { InspectionEvent } from 'xstate';
import { z } from 'zod';

const email = 'bob@example.com';
const card = '4111 1111 1111 1111';
const phone = '+1 415 555 2671';
const password = 'hunter2-TOPSECRET';
const token = 'tok-live-TOPSECRET';
const raw = [email, card, '4111111111111111', phone, password, token];

/** Methods whose result is data an observer can read: they are called, and their results walked too. */
const readers: ReadonlySet<PropertyKey> = new Set(['getSnapshot', 'getPersistedSnapshot', 'toJSON']);

/**
 * Every string reachable from `root` through any property: own and inherited, enumerable or not, symbol-keyed,
 * getters read, Map and Set entries, and the snapshots that `getSnapshot()` and `toJSON()` hand out; property
 * names count as strings too.
 */
function reachableStrings(root: unknown): { strings: Set<string>; objects: number } {
  const strings = new Set<string>();
  const seen = new Set<unknown>();
  // Breadth first: what is near the frames is read before the walk could reach its bound far away.
  const stack: unknown[] = [root];
  for (let next = 0; next < stack.length && seen.size < 300_000; next++) {
    const value = stack[next];
    if (typeof value === 'string') {
      strings.add(value);
      continue;
    }
    if ((typeof value !== 'object' && typeof value !== 'function') || value === null || seen.has(value))
      continue;
    seen.add(value);
    try {
      if (value instanceof Map || value instanceof Set)
        for (const entry of value.entries()) stack.push(...entry);
    } catch {
      // A prototype object (Set.prototype) is no set of its own.
    }
    for (let holder: object | null = value; holder !== null; holder = Object.getPrototypeOf(holder)) {
      for (const key of Reflect.ownKeys(holder)) {
        if (typeof key === 'string') strings.add(key);
        const descriptor = Reflect.getOwnPropertyDescriptor(holder, key);
        let inner: unknown;
        try {
          inner = descriptor && 'value' in descriptor ? descriptor.value : descriptor?.get?.call(value);
        } catch {
          continue;
        }
        stack.push(inner);
        if (readers.has(key) && typeof inner === 'function') {
          try {
            stack.push(inner.call(value));
          } catch {
            // A reader that needs arguments or another receiver hands out nothing here.
          }
        }
      }
    }
  }
  return { strings, objects: seen.size };
}

function leaks(strings: Set<string>): string[] {
  const found = new Set<string>();
  for (const text of strings) for (const value of raw) if (text.includes(value)) found.add(value);
  return [...found];
}

function agentWithSecrets() {
  const login = tool({
    name: 'login',
    description: 'Logs in',
    input: z.object({ user: z.string(), password: z.string(), token: z.string() }),
    secret: ['token'],
    execute: ({ user }) => `logged in ${user}, call ${phone}`,
  });
  const model = scriptedModel([
    {
      toolCalls: [{ id: 'c1', name: 'login', args: { user: email, password, token } }],
      stopReason: 'tool_use',
    },
    { text: `Done for ${email}, card ${card} on file.` },
  ]);
  return defineAgent({ name: 'clerk', instructions: 'Log people in.', model, tools: [login] });
}

describe('the redacting inspector', () => {
  it('hands the observer nothing raw through any property of any frame of a run', async () => {
    const frames: InspectionEvent[] = [];
    const result = await run(agentWithSecrets(), `I am ${email}, card ${card}`, {
      pii: {},
      inspect: (event) => frames.push(event),
    });
    expect(result.text).toBe(`Done for ${email}, card ${card} on file.`);
    expect(frames.filter((frame) => frame.type === '@xstate.snapshot').length).toBeGreaterThan(3);
    const { strings, objects } = reachableStrings(frames);
    // The walk saw everything (it stops at 300,000 objects).
    expect(objects).toBeLessThan(300_000);
    expect(leaks(strings)).toEqual([]);
    // What was masked is there, masked: the observer still sees the conversation.
    const all = [...strings].join('\n');
    expect(all).toContain('<EMAIL_1>');
    expect(all).toContain('<CARD_1>');
  });

  it("hands a session's observer nothing raw through any property of any frame", async () => {
    const frames: InspectionEvent[] = [];
    const system = createAgentSystem({ pii: {}, inspect: (event) => frames.push(event) });
    const session = system.spawn(agentWithSecrets(), `I am ${email}, card ${card}`);
    expect((await session.result).status).toBe('completed');
    await system.shutdown();
    const { strings, objects } = reachableStrings(frames);
    expect(objects).toBeLessThan(300_000);
    expect(leaks(strings)).toEqual([]);
    expect([...strings].join('\n')).toContain('<EMAIL_1>');
  });

  it('shows each actor as a snapshot-only view: ids, parent, definition and a masked getSnapshot()', async () => {
    const frames: InspectionEvent[] = [];
    await run(agentWithSecrets(), `I am ${email}`, { pii: {}, inspect: (event) => frames.push(event) });
    const actors = frames.filter((frame) => frame.type === '@xstate.actor');
    expect(actors.length).toBeGreaterThan(0);
    for (const frame of frames) {
      const ref = frame.actorRef as unknown as Record<string, unknown>;
      expect(Object.keys(ref).sort()).toEqual(['_parent', 'getSnapshot', 'id', 'logic', 'sessionId']);
      expect(Object.getPrototypeOf(ref)).toBe(Object.prototype);
      expect(Object.isFrozen(ref)).toBe(true);
      expect(typeof ref.sessionId).toBe('string');
      expect('send' in ref || 'system' in ref || '_snapshot' in ref || 'children' in ref).toBe(false);
    }
    const agent = actors.find((frame) => frame.actorRef.getSnapshot()?.context?.history !== undefined);
    const snapshot = agent?.actorRef.getSnapshot() as {
      context: unknown;
      machine?: unknown;
      matches?: unknown;
    };
    expect(JSON.stringify(snapshot.context)).toContain('<EMAIL_1>');
    expect(JSON.stringify(snapshot.context)).not.toContain(email);
    expect(snapshot.machine).toBeUndefined();
    // A machine's snapshot still answers matches(), from the real snapshot.
    expect(typeof snapshot.matches).toBe('function');
  });

  it('keeps secrets out with masking off, and lets personal data through then', async () => {
    const frames: InspectionEvent[] = [];
    await run(agentWithSecrets(), `I am ${email}`, { inspect: (event) => frames.push(event) });
    const { strings } = reachableStrings(frames);
    const found = leaks(strings);
    expect(found).not.toContain(password);
    expect(found).not.toContain(token);
    expect(found).toContain(email);
  });

  it('goes on when the observer throws, and reports it once', async () => {
    const reported = vi.spyOn(console, 'error').mockImplementation(() => {});
    const result = await run(agentWithSecrets(), 'hi', {
      pii: {},
      inspect: () => {
        throw new Error('observer bug');
      },
    });
    expect(result.status).toBe('completed');
    await new Promise<void>((resolve) => queueMicrotask(resolve));
    expect(reported).toHaveBeenCalledTimes(1);
    reported.mockRestore();
  });
});
