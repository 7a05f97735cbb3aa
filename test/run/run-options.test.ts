import {
  ConfigError,
  createAgentSystem,
  defineAgent,
  parallel,
  type RunOptions,
  run,
  type SessionOptions,
  stream,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * Options of run(), stream(), spawn(), restore(), parallel() and createAgentSystem() are checked at the call: a
 * misspelled key is refused (naming the key it was probably meant to be) instead of silently doing nothing, and a
 * value of the wrong type is a ConfigError, not a TypeError inside the run.
 */

function agentWith() {
  const model = scriptedModel([{ text: 'ok', stopReason: 'end_turn' }]);
  return { model, agent: defineAgent({ name: 'a', instructions: '', model }) };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const badRunOptions: [string, unknown, RegExp][] = [
  ['a misspelled key', { sesionId: 'x' }, /no option "sesionId" \(did you mean "sessionId"\?\)/],
  ['a misspelled signal', { signall: AbortSignal.timeout(1000) }, /did you mean "signal"/],
  ['a numeric sessionId', { sessionId: 5 }, /sessionId must be a non-empty string, got 5/],
  ['an empty sessionId', { sessionId: '' }, /sessionId must be a non-empty string/],
  ['a signal that is not an AbortSignal', { signal: {} }, /signal must be an AbortSignal/],
  ['a signal that is a controller', { signal: new AbortController() }, /signal must be an AbortSignal/],
  ['an inspector that is a string', { inspect: 'yes' }, /inspect must be an inspection observer/],
  ['a misspelled budget key', { budget: { token: 100 } }, /did you mean "tokens"/],
  ['options that are null', null, /options must be an object/],
];

describe('run() and stream() options', () => {
  it.each(badRunOptions)(
    'run() rejects %s with a ConfigError, before calling the model',
    async (_l, options, message) => {
      const { model, agent } = agentWith();
      const error = await run(agent, 'hi', options as RunOptions).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(message);
      expect(model.calls).toBe(0);
    },
  );

  it.each(badRunOptions)('stream() throws for %s', (_l, options) => {
    const { agent } = agentWith();
    expect(() => stream(agent, 'hi', options as RunOptions)).toThrowError(ConfigError);
  });

  it('run() of an agent with handoffs (a private session) checks its options the same way', async () => {
    const { agent: target } = agentWith();
    const model = scriptedModel([{ text: 'ok' }]);
    const triage = defineAgent({ name: 'triage', instructions: '', model, handoffs: [target] });
    await expect(run(triage, 'hi', { signal: {} as AbortSignal })).rejects.toThrowError(ConfigError);
    await expect(run(triage, 'hi', { sesionId: 'x' } as RunOptions)).rejects.toThrowError(/sessionId/);
    expect(model.calls).toBe(0);
  });

  it('accepts every documented option', async () => {
    const { agent } = agentWith();
    const result = await run(agent, 'hi', {
      history: [],
      signal: new AbortController().signal,
      sessionId: 'run-options-ok',
      inspect: () => undefined,
      budget: { tokens: 1e5 },
      tenant: 't',
    });
    expect(result.status).toBe('completed');
  });
});

describe('a system: spawn(), restore() and createAgentSystem() options', () => {
  const badSessionOptions: [string, unknown, RegExp][] = [
    ['a misspelled key', { sesionId: 'x' }, /no option "sesionId" \(did you mean "sessionId"\?\)/],
    ['a misspelled handoff limit', { maxHandoffDept: 2 }, /did you mean "maxHandoffDepth"/],
    ['a numeric id', { sessionId: 7 }, /sessionId must be a non-empty string, got 7/],
    ['a signal that is not an AbortSignal', { signal: 'stop' }, /signal must be an AbortSignal/],
    ['a misspelled supervision key', { supervision: { stratgy: 'stop' } }, /did you mean "strategy"/],
  ];

  it.each(badSessionOptions)('spawn() throws a ConfigError for %s', (_l, options, message) => {
    const { model, agent } = agentWith();
    const system = createAgentSystem();
    cleanups.push(() => system.shutdown());
    expect(() => system.spawn(agent, 'hi', options as SessionOptions)).toThrowError(message);
    expect(() => system.spawn(agent, 'hi', options as SessionOptions)).toThrowError(ConfigError);
    expect(system.list()).toHaveLength(0);
    expect(model.calls).toBe(0);
  });

  it('restore() rejects a misspelled option before reading the store', async () => {
    const { agent } = agentWith();
    const system = createAgentSystem();
    cleanups.push(() => system.shutdown());
    await expect(system.restore('nothing', agent, { inputs: 'hi' } as never)).rejects.toThrowError(
      /did you mean "input"/,
    );
  });

  it('createAgentSystem() refuses a misspelled option', () => {
    expect(() => createAgentSystem({ inspector: () => undefined } as never)).toThrowError(
      /did you mean "inspect"/,
    );
    expect(() => createAgentSystem({ clock: Date } as never)).toThrowError(ConfigError);
  });
});

describe('parallel() options', () => {
  it('parallel(agents, options) refuses a misspelled key', () => {
    const { agent } = agentWith();
    expect(() => parallel([agent], { merge: 'vote', merg: 'concat' } as never)).toThrowError(
      /no option "merg"/,
    );
  });

  it('parallel().run() refuses a misspelled key and a wrong signal before running anything', async () => {
    const { model, agent } = agentWith();
    const group = parallel([agent], { merge: 'concat' });
    await expect(group.run('hi', { onEvents: () => undefined } as never)).rejects.toThrowError(
      /did you mean "onEvent"/,
    );
    await expect(group.run('hi', { signal: {} } as never)).rejects.toThrowError(ConfigError);
    expect(model.calls).toBe(0);
  });
});
