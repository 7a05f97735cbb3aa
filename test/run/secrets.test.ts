import {
  createAgentSystem,
  defineAgent,
  type Message,
  parallel,
  type RunEvent,
  redact,
  run,
  stream,
  tool,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { InspectionEvent } from 'xstate';
import { z } from 'zod';
import { redactText, secretKeySet } from '../../src/run/secrets.ts';

/**
 * Secrets (argument names a tool declares `secret`, and API-key-like names in any spelling) never reach the
 * inspector, the event stream or a tool result that echoes arguments. The tool itself gets the real value.
 */

const SECRET = 'sk-live-TOPSECRET';

const login = tool({
  name: 'login',
  description: 'Logs in',
  input: z.object({ user: z.string(), token: z.string() }),
  secret: ['token'],
  execute: ({ token }) => (token === SECRET ? 'welcome' : 'denied'),
});

/** Every string an inspection event exposes: its data, and the snapshots its actor refs (and their parents) hand out. */
function exposedText(event: InspectionEvent): string {
  const seen = new Set<unknown>();
  const parts: string[] = [];
  const visit = (value: unknown, depth: number): void => {
    if (depth > 400 || value === null || value === undefined) return;
    if (typeof value === 'string') {
      parts.push(value);
      return;
    }
    if (typeof value !== 'object' || seen.has(value)) return;
    seen.add(value);
    const ref = value as { getSnapshot?: () => unknown; _parent?: unknown };
    if (typeof ref.getSnapshot === 'function') {
      let snapshot: unknown;
      try {
        snapshot = ref.getSnapshot();
      } catch {
        // XState refuses while the actor initializes itself: nothing to read yet.
      }
      visit(snapshot, depth + 1);
      visit(ref._parent, depth + 1);
      return;
    }
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== Array.prototype && prototype !== null) return;
    for (const inner of Object.values(value)) visit(inner, depth + 1);
  };
  visit(event, 0);
  return parts.join('\n');
}

function leakDetector() {
  const leaks: string[] = [];
  let events = 0;
  const inspect = (event: InspectionEvent) => {
    events++;
    const text = exposedText(event);
    for (const secret of secrets) if (text.includes(secret)) leaks.push(`${event.type}: ${secret}`);
  };
  return { inspect, leaks, count: () => events };
}

let secrets: string[] = [SECRET];
afterEach(() => {
  secrets = [SECRET];
  vi.restoreAllMocks();
});

const loginTurns = () => [
  {
    toolCalls: [{ id: 'c1', name: 'login', args: { user: 'ann', token: SECRET } }],
    stopReason: 'tool_use' as const,
  },
  { text: 'done', stopReason: 'end_turn' as const },
];

describe('the inspector never sees a secret through an actor ref', () => {
  it('run(): actorRef, sourceRef, refs in snapshots and their parents read redacted snapshots', async () => {
    const detector = leakDetector();
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel(loginTurns()),
      tools: [login],
    });
    const result = await run(agent, 'log in', { inspect: detector.inspect });
    expect(result.text).toBe('done');
    expect(result.steps[0]?.toolCalls[0]?.result).toBe('welcome');
    expect(detector.count()).toBeGreaterThan(10);
    expect(detector.leaks).toEqual([]);
  });

  it('a system: no frame or ref leaks the secret', async () => {
    const detector = leakDetector();
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel(loginTurns()),
      tools: [login],
    });
    const system = createAgentSystem({ inspect: detector.inspect });
    const session = system.spawn(agent, 'log in');
    expect((await session.result).text).toBe('done');
    await system.shutdown();
    expect(detector.leaks).toEqual([]);
  });

  it('parallel(): no frame or ref leaks the secret', async () => {
    const detector = leakDetector();
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel(loginTurns()),
      tools: [login],
    });
    const result = await parallel([agent], { merge: 'concat' }).run('log in', { inspect: detector.inspect });
    expect(result.status).toBe('completed');
    expect(detector.leaks).toEqual([]);
  });
});

describe('secret names in any spelling', () => {
  const variants = ['Password', 'APIKEY', 'api-key', 'x-api-key', 'client_secret', 'refresh_token'];
  const configure = tool({
    name: 'configure',
    description: 'Configures',
    input: z.looseObject({}),
    execute: () => 'ok',
  });

  it.each(variants)('"%s" is redacted in inspection frames and tool_call events', async (key) => {
    const value = `value-of-${key}-9f8e7d`;
    secrets = [value];
    const detector = leakDetector();
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([
        {
          toolCalls: [{ id: 'c1', name: 'configure', args: { [key]: value, region: 'eu' } }],
          stopReason: 'tool_use',
        },
        { text: 'done', stopReason: 'end_turn' },
      ]),
      tools: [configure],
    });
    const events: RunEvent[] = [];
    const s = stream(agent, 'go', { inspect: detector.inspect });
    for await (const event of s) events.push(event);
    expect(detector.leaks).toEqual([]);
    const call = events.find((event) => event.type === 'tool_call');
    expect(JSON.stringify(call)).not.toContain(value);
    expect(JSON.stringify(call)).toContain('eu');
  });

  it('redact() matches names without regard to case, "-" or "_"', () => {
    const out = redact({ API_KEY: 1, nested: [{ 'Api-Key': 2, other: 3 }] }, new Set(['apiKey'])) as Record<
      string,
      unknown
    >;
    expect(out).toEqual({ API_KEY: '[redacted]', nested: [{ 'Api-Key': '[redacted]', other: 3 }] });
  });
});

describe('tool_call events', () => {
  it('carry declared secrets redacted, in args and in the raw arguments text; the tool gets the real value', async () => {
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel(loginTurns()),
      tools: [login],
    });
    const events: RunEvent[] = [];
    const s = stream(agent, 'log in');
    for await (const event of s) events.push(event);
    const result = await s.result;
    expect(result.steps[0]?.toolCalls[0]?.result).toBe('welcome');
    const call = events.find((event) => event.type === 'tool_call');
    expect(call?.data).toEqual({
      callId: 'c1',
      name: 'login',
      args: { user: 'ann', token: '[redacted]' },
    });
    expect(JSON.stringify(events)).not.toContain(SECRET);
  });
});

describe('arguments echoed back in a tool result', () => {
  it('invalid arguments: the secret is redacted in "Arguments received", the history and the events', async () => {
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([
        // `user` is missing: the arguments are refused and echoed back to the model.
        {
          toolCalls: [{ id: 'c1', name: 'login', args: { token: SECRET, password: 'hunter2' } }],
          stopReason: 'tool_use',
        },
        { text: 'done', stopReason: 'end_turn' },
      ]),
      tools: [login],
    });
    const events: RunEvent[] = [];
    const s = stream(agent, 'log in');
    for await (const event of s) events.push(event);
    const result = await s.result;
    const answer = result.history.find((message) => message.role === 'tool') as Message;
    expect(answer.content).toContain('Arguments received');
    expect(answer.content).toContain('"token":"[redacted]"');
    expect(answer.content).not.toContain(SECRET);
    expect(answer.content).not.toContain('hunter2');
    expect(JSON.stringify(events)).not.toContain(SECRET);
  });

  it('unparsable raw arguments: the declared secret in the raw text is redacted everywhere', async () => {
    const raw = `{"user":"ann","token":"${SECRET}`; // cut off: not valid JSON
    const detector = leakDetector();
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([
        { toolCalls: [{ id: 'c1', name: 'login', args: raw }], stopReason: 'tool_use' },
        { text: 'done', stopReason: 'end_turn' },
      ]),
      tools: [login],
    });
    const events: RunEvent[] = [];
    const s = stream(agent, 'log in', { inspect: detector.inspect });
    for await (const event of s) events.push(event);
    const result = await s.result;
    const answer = result.history.find((message) => message.role === 'tool') as Message;
    expect(answer.content).toContain('ann');
    expect(answer.content).not.toContain(SECRET);
    expect(JSON.stringify(events)).not.toContain(SECRET);
    expect(detector.leaks).toEqual([]);
  });
});

describe('an inspect observer that throws', () => {
  it('does not reject run() or fail the run; the error is reported once with console.error', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel(loginTurns()),
      tools: [login],
    });
    const result = await run(agent, 'log in', {
      inspect: () => {
        throw new Error('observer bug');
      },
    });
    expect(result).toMatchObject({ status: 'completed', text: 'done' });
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(errors).toHaveBeenCalledTimes(1);
    expect(String(errors.mock.calls[0]?.[1])).toContain('observer bug');
  });

  it('an observer object whose next() throws does not fail a session', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel(loginTurns()),
      tools: [login],
    });
    const system = createAgentSystem({
      inspect: {
        next: () => {
          throw new Error('observer bug');
        },
      },
    });
    const session = system.spawn(agent, 'log in');
    expect(await session.result).toMatchObject({ status: 'completed', text: 'done' });
    await system.shutdown();
  });
});

describe('redactText (raw arguments that are not JSON)', () => {
  const keys = secretKeySet(['token']);

  it('redacts quoted, cut-off, single-quoted and key=value secrets in any spelling', () => {
    expect(redactText('{"user":"ann","token":"sk-1', keys)).toBe('{"user":"ann","token":"[redacted]"');
    expect(redactText('token=abc&x=1', keys)).toBe('token=[redacted]&x=1');
    expect(redactText(`{'Token': 'x', TOKEN: y, "api-key" : "z", other: 1}`, keys)).toBe(
      `{'Token': [redacted], TOKEN: [redacted], "api-key" : "[redacted]", other: 1}`,
    );
  });

  it('stays linear on text the model shaped against it (a long run of key characters without a colon)', () => {
    // A pattern that retried the key at every letter took minutes here; the test would time out.
    const text = `${'a'.repeat(300_000)}!:"token":"s3cr3t"`;
    expect(redactText(text, keys).endsWith('"token":"[redacted]"')).toBe(true);
  });
});
