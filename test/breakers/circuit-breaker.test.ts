import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  breakerState,
  checkBreakerOptions,
  resetBreakers,
  sharedBreaker,
} from '../../src/breakers/circuit-breaker.ts';
import { ModelError } from '../../src/core/errors.ts';
import type { RunEvent } from '../../src/core/events.ts';
import { defineAgent, stream, tool } from '../../src/index.ts';
import { openai, openaiCompatible } from '../../src/providers/index.ts';
import { scriptedModel } from '../../src/testing/index.ts';
import { textStream } from '../fixtures/wire/openai-chat.ts';
import { startWireServer, type WireHandler, type WireServer } from '../support/wire-server.ts';

const servers: WireServer[] = [];
afterEach(async () => {
  vi.useRealTimers();
  resetBreakers();
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(handler: WireHandler): Promise<WireServer> {
  const server = await startWireServer(handler);
  servers.push(server);
  return server;
}

const down: WireHandler = () => ({ status: 500, body: { error: { message: 'down', type: 'server_error' } } });

async function runEvents(agent: Parameters<typeof stream>[0], input: string) {
  const events: RunEvent[] = [];
  const s = stream(agent, input);
  for await (const event of s) events.push(event);
  return { events, result: await s.result };
}

function breakerEvents(events: RunEvent[]) {
  return events.flatMap((event) => (event.type === 'breaker' ? [event.data] : []));
}

describe('model circuit breaker', () => {
  it('opens under a failing provider; the run then goes to its fallback without calling the provider', async () => {
    const primary = await serve(down);
    const backup = await serve(() => ({ sse: textStream(['from backup']) }));
    const fallback = openaiCompatible({ baseURL: `${backup.url}/v1`, name: 'backup' })('small');
    const model = openai('gpt-flaky', {
      apiKey: 'sk-test',
      baseURL: `${primary.url}/v1`,
      maxRetries: 0,
      fallback,
      breaker: { threshold: 2, halfOpenAfterMs: 60_000 },
    });
    const agent = defineAgent({ name: 'a', instructions: '', model });

    const first = await runEvents(agent, 'one');
    expect(first.result.text).toBe('from backup');
    expect(breakerEvents(first.events)).toEqual([]);

    const second = await runEvents(agent, 'two');
    expect(second.result.text).toBe('from backup');
    expect(breakerEvents(second.events)).toEqual([
      {
        breaker: 'openai-chat:gpt-flaky',
        scope: 'model',
        state: 'open',
        reason: expect.stringContaining('down'),
      },
    ]);
    expect(primary.requests).toHaveLength(2);

    // Open: the primary is not asked at all.
    const third = await runEvents(agent, 'three');
    expect(third.result.text).toBe('from backup');
    expect(primary.requests).toHaveLength(2);
    expect(backup.requests).toHaveLength(3);
    expect(breakerState('model', 'openai-chat:gpt-flaky')).toBe('open');
  });

  it('without a fallback an open breaker fails at once with circuit_open', async () => {
    const primary = await serve(down);
    const model = openai('gpt-down', {
      apiKey: 'sk-test',
      baseURL: `${primary.url}/v1`,
      maxRetries: 3,
      sleep: async () => {},
      breaker: { threshold: 2, halfOpenAfterMs: 60_000 },
    });
    const request = () => ({
      messages: [{ role: 'user' as const, content: 'hi' }],
      tools: [],
      settings: {},
      signal: new AbortController().signal,
    });
    // Each failed attempt counts: the second attempt of the first call opens it, and the retries stop.
    const error = await model.generate(request()).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ kind: 'circuit_open', retryable: false });
    expect(primary.requests).toHaveLength(2);

    const agent = defineAgent({ name: 'a', instructions: '', model });
    const { result } = await runEvents(agent, 'hi');
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'model_circuit_open' });
    expect(primary.requests).toHaveLength(2);
  });

  it('lets one probe through after the cool-down and closes when it succeeds', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    let healthy = false;
    const primary = await serve((_request) =>
      healthy ? { sse: textStream(['back again']) } : down(_request, 0),
    );
    const model = openai('gpt-recovering', {
      apiKey: 'sk-test',
      baseURL: `${primary.url}/v1`,
      maxRetries: 0,
      breaker: { threshold: 1, halfOpenAfterMs: 30_000 },
    });
    const agent = defineAgent({ name: 'a', instructions: '', model });
    const failed = await runEvents(agent, 'one');
    expect(failed.result.error).toMatchObject({ code: 'model_server' });
    expect(breakerEvents(failed.events).map((change) => change.state)).toEqual(['open']);

    const refused = await runEvents(agent, 'two');
    expect(refused.result.error).toMatchObject({ code: 'model_circuit_open' });
    expect(primary.requests).toHaveLength(1);

    healthy = true;
    vi.setSystemTime(Date.now() + 30_001);
    const probe = await runEvents(agent, 'three');
    expect(probe.result.text).toBe('back again');
    expect(breakerEvents(probe.events).map((change) => change.state)).toEqual(['half_open', 'closed']);
    expect(breakerState('model', 'openai-chat:gpt-recovering')).toBe('closed');
  });

  it('a failed probe opens it again', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const primary = await serve(down);
    const model = openai('gpt-still-down', {
      apiKey: 'sk-test',
      baseURL: `${primary.url}/v1`,
      maxRetries: 0,
      breaker: { threshold: 1, halfOpenAfterMs: 1_000 },
    });
    const agent = defineAgent({ name: 'a', instructions: '', model });
    await runEvents(agent, 'one');
    vi.setSystemTime(Date.now() + 1_001);
    const probe = await runEvents(agent, 'two');
    expect(breakerEvents(probe.events).map((change) => change.state)).toEqual(['half_open', 'open']);
    expect(primary.requests).toHaveLength(2);
  });

  it('rejects bad options with a clear error', () => {
    const make = (breaker: unknown) =>
      openai('gpt-x', { apiKey: 'sk-test', breaker: breaker as { threshold: number } });
    expect(() => make({ threshold: 0 })).toThrow(/threshold must be an integer >= 1/);
    expect(() => make({ treshold: 3 })).toThrow(/unknown breaker option "treshold"/);
    expect(() => make({ sampling: { ratio: 2, windowMs: 1000 } })).toThrow(/ratio/);
  });
});

describe('sampling breaker', () => {
  it('opens once failures pass the ratio over the window, not before', async () => {
    const breaker = sharedBreaker(
      'tool',
      'sampled',
      checkBreakerOptions({ sampling: { ratio: 0.5, windowMs: 10_000 } }, 'test'),
    );
    const changes: string[] = [];
    const call = (ok: boolean) =>
      breaker.run(
        async () => ok,
        (result) => (result ? 'success' : { failure: 'failed' }),
        (change) => changes.push(change.state),
      );
    for (let i = 0; i < 3; i++) await call(true);
    for (let i = 0; i < 3; i++) await call(false);
    expect(breaker.state).toBe('closed'); // 3 of 6 failed: not more than half
    await call(false); // 4 of 7
    expect(breaker.state).toBe('open');
    expect(changes).toEqual(['open']);
    expect(await call(true)).toEqual({ open: true });
  });
});

describe('what counts', () => {
  it('an uncounted outcome (an aborted call) neither opens nor resets a breaker; a thrown error counts', async () => {
    const breaker = sharedBreaker('tool', 'counted', checkBreakerOptions({ threshold: 2 }, 'test'));
    const judged = (verdict: 'success' | 'uncounted' | { failure: string }) =>
      breaker.run(
        async () => verdict,
        (result) => result,
        undefined,
      );
    await judged({ failure: 'one' });
    await judged('uncounted');
    await judged('uncounted');
    expect(breaker.state).toBe('closed');
    await expect(
      breaker.run(
        async () => {
          throw new Error('two');
        },
        () => 'success',
        undefined,
      ),
    ).rejects.toThrow('two');
    expect(breaker.state).toBe('open');
  });
});

describe('tool circuit breaker', () => {
  it('opens after failures; an open breaker answers the model at once without running the tool', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    let runs = 0;
    let healthy = false;
    const inventory = tool({
      name: 'inventory',
      description: 'stock levels',
      input: z.object({}),
      maxRetries: 0,
      breaker: { threshold: 2, halfOpenAfterMs: 10_000 },
      execute: () => {
        runs++;
        if (!healthy) throw new Error('inventory service unreachable');
        return 'in stock';
      },
    });
    // Each run calls the tool once (a run stops using a tool that failed for good: separate runs show the breaker).
    const model = scriptedModel(
      [{ toolCalls: [{ id: 'c1', name: 'inventory', args: {} }] }, { text: 'done' }],
      {
        loop: true,
      },
    );
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [inventory] });

    const outcomes: { content: string; isError: boolean }[] = [];
    const changes: ReturnType<typeof breakerEvents> = [];
    for (const input of ['one', 'two', 'three']) {
      const { events } = await runEvents(agent, input);
      for (const event of events) if (event.type === 'tool_response') outcomes.push(event.data);
      changes.push(...breakerEvents(events));
    }
    expect(runs).toBe(2);
    expect(outcomes.map((outcome) => outcome.isError)).toEqual([true, true, true]);
    expect(outcomes[2]?.content).toMatch(/unavailable right now: .*circuit breaker is open/);
    expect(changes).toEqual([
      {
        breaker: 'inventory',
        scope: 'tool',
        state: 'open',
        reason: 'inventory service unreachable',
      },
    ]);

    // After the cool-down one probe runs the tool; it succeeds and the breaker closes.
    healthy = true;
    vi.setSystemTime(Date.now() + 10_001);
    const recovered = await runEvents(agent, 'again');
    expect(runs).toBe(3);
    expect(recovered.result.text).toBe('done');
    expect(breakerEvents(recovered.events).map((change) => change.state)).toEqual(['half_open', 'closed']);
  });

  it('is shared across runs and agents by tool name', async () => {
    let runs = 0;
    const flaky = () =>
      tool({
        name: 'flaky',
        description: 'fails',
        input: z.object({}),
        maxRetries: 0,
        breaker: { threshold: 1 },
        execute: () => {
          runs++;
          throw new Error('nope');
        },
      });
    const agentFor = (name: string) =>
      defineAgent({
        name,
        instructions: '',
        model: scriptedModel([{ toolCalls: [{ id: 'c1', name: 'flaky', args: {} }] }, { text: 'done' }]),
        tools: [flaky()],
      });
    await runEvents(agentFor('a'), 'go');
    const { events } = await runEvents(agentFor('b'), 'go');
    expect(runs).toBe(1);
    const response = events.find((event) => event.type === 'tool_response');
    expect(response?.data).toMatchObject({
      isError: true,
      content: expect.stringMatching(/circuit breaker is open/),
    });
  });
});
