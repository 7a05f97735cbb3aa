import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { ModelError } from '../../src/core/errors.ts';
import type { ModelDelta, ModelProvider, ModelRequest, ModelResponse } from '../../src/core/model.ts';
import { withRetries } from '../../src/providers/retry.ts';

const ok: ModelResponse = {
  text: 'done',
  toolCalls: [],
  stopReason: 'end_turn',
  usage: { input: 1, output: 1, cached: 0, reasoning: 0 },
};

type Step = (request: ModelRequest) => Promise<ModelResponse>;

/** A provider that plays one step per call and records the requests. */
function scripted(steps: Step[], name = 'fake'): ModelProvider & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    provider: name,
    model: 'm',
    requests,
    generate(request) {
      requests.push(request);
      const step = steps[requests.length - 1];
      if (!step) return Promise.reject(new Error('no more steps'));
      return step(request);
    },
  };
}

const fail =
  (error: unknown): Step =>
  () =>
    Promise.reject(error);
const succeed: Step = () => Promise.resolve(ok);
const rateLimited = (retryAfterMs?: number) =>
  new ModelError('rate_limited', '429', {
    status: 429,
    retryable: true,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
const serverError = () => new ModelError('server', '500', { status: 500, retryable: true });

/** Waits until the provider has been called `n` times (the calls happen after awaited microtasks). */
async function untilCalls(provider: { requests: unknown[] }, n: number): Promise<void> {
  for (let i = 0; i < 1000 && provider.requests.length < n; i++) await Promise.resolve();
  expect(provider.requests.length).toBe(n);
}

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return { messages: [], tools: [], settings: {}, signal: new AbortController().signal, ...overrides };
}

function recordingSleep() {
  const waits: number[] = [];
  return { waits, sleep: async (ms: number) => void waits.push(ms) };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('withRetries', () => {
  it('waits exactly the retry-after the server asked for, without waiting for real, then succeeds', async () => {
    const inner = scripted([fail(rateLimited(3000)), succeed]);
    const { waits, sleep } = recordingSleep();
    const response = await withRetries(inner, { sleep }).generate(request());
    expect(response).toEqual(ok);
    expect(waits).toEqual([3000]);
    expect(inner.requests).toHaveLength(2);
  });

  it('backs off exponentially with jitter when no retry-after is given, then gives up with a typed error', async () => {
    const inner = scripted([fail(serverError()), fail(serverError()), fail(serverError())]);
    const { waits, sleep } = recordingSleep();
    const error = await rejection(
      withRetries(inner, { sleep, random: () => 0.5, initialDelayMs: 100 }).generate(request()),
    );
    expect(waits).toEqual([75, 150]);
    expect(inner.requests).toHaveLength(3);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ kind: 'server', status: 500, retryable: false });
    expect((error as Error).message).toContain('gave up after 2 retries');
  });

  it('caps the back-off at maxDelayMs', async () => {
    const inner = scripted([fail(serverError()), fail(serverError()), fail(serverError()), succeed]);
    const { waits, sleep } = recordingSleep();
    await withRetries(inner, {
      sleep,
      random: () => 1,
      maxRetries: 3,
      initialDelayMs: 1000,
      maxDelayMs: 1500,
    }).generate(request());
    expect(waits).toEqual([1000, 1500, 1500]);
  });

  it('does not retry a non-retryable error, nor plain errors', async () => {
    const badRequest = new ModelError('bad_request', '400', { status: 400 });
    const inner = scripted([fail(badRequest)]);
    expect(await rejection(withRetries(inner, { sleep: async () => {} }).generate(request()))).toBe(
      badRequest,
    );
    expect(inner.requests).toHaveLength(1);
    const plain = new Error('bug');
    expect(await rejection(withRetries(scripted([fail(plain)])).generate(request()))).toBe(plain);
  });

  it('with maxRetries 0 passes the first retryable error through unchanged', async () => {
    const error = rateLimited();
    expect(await rejection(withRetries(scripted([fail(error)]), { maxRetries: 0 }).generate(request()))).toBe(
      error,
    );
  });

  it('does not retry once a delta went out: a typed, non-retryable error of the same kind', async () => {
    const deltas: ModelDelta[] = [];
    const inner = scripted([
      async (req) => {
        req.onDelta?.({ type: 'text', text: 'Hel' });
        throw new ModelError('network', 'socket hang up', { retryable: true });
      },
      succeed,
    ]);
    const error = await rejection(
      withRetries(inner, { sleep: async () => {} }).generate(request({ onDelta: (d) => deltas.push(d) })),
    );
    expect(error).toMatchObject({ kind: 'network', retryable: false });
    expect((error as Error).message).toContain('not retried');
    expect(inner.requests).toHaveLength(1);
    expect(deltas).toEqual([{ type: 'text', text: 'Hel' }]);
  });

  it('ends a stalled attempt as ModelError timeout and aborts its signal (simulated clock)', async () => {
    const clock = new SimulatedClock();
    let innerSignal: AbortSignal | undefined;
    const inner = scripted([
      (req) => {
        innerSignal = req.signal;
        return new Promise(() => {}); // ignores its signal on purpose: the wrapper must not hang
      },
    ]);
    const pending = withRetries(inner, { clock, timeoutMs: 5000, maxRetries: 0 }).generate(request());
    await untilCalls(inner, 1);
    clock.increment(4999);
    expect(innerSignal?.aborted).toBe(false);
    clock.increment(1);
    const error = await rejection(pending);
    expect(error).toMatchObject({ kind: 'timeout', retryable: true });
    expect(innerSignal?.aborted).toBe(true);
  });

  it('restarts the stall timer on every delta, and retries a stall before any delta', async () => {
    const clock = new SimulatedClock();
    let emit: ((delta: ModelDelta) => void) | undefined;
    let finish: ((response: ModelResponse) => void) | undefined;
    const inner = scripted([
      () => new Promise(() => {}),
      (req) =>
        new Promise((resolve) => {
          emit = req.onDelta;
          finish = resolve;
        }),
    ]);
    const pending = withRetries(inner, { clock, timeoutMs: 100, sleep: async () => {} }).generate(
      request({ onDelta: () => {} }),
    );
    await untilCalls(inner, 1);
    clock.increment(100);
    await untilCalls(inner, 2);
    clock.increment(60);
    emit?.({ type: 'text', text: 'a' });
    clock.increment(60);
    emit?.({ type: 'text', text: 'b' });
    clock.increment(60);
    finish?.(ok);
    expect(await pending).toEqual(ok);
  });

  it('asks the fallback once retries are exhausted on a retryable error', async () => {
    const inner = scripted([fail(serverError()), fail(serverError())]);
    const fallback = scripted([succeed], 'backup');
    const response = await withRetries(inner, { maxRetries: 1, fallback, sleep: async () => {} }).generate(
      request(),
    );
    expect(response).toEqual(ok);
    expect(inner.requests).toHaveLength(2);
    expect(fallback.requests).toHaveLength(1);
  });

  it('never asks the fallback for a non-retryable error or after a delta went out', async () => {
    const fallback = scripted([succeed, succeed], 'backup');
    const auth = new ModelError('authentication', '401', { status: 401 });
    expect(await rejection(withRetries(scripted([fail(auth)]), { fallback }).generate(request()))).toBe(auth);
    const streamed = scripted([
      async (req) => {
        req.onDelta?.({ type: 'text', text: 'x' });
        throw new ModelError('truncated_stream', 'cut', { retryable: true });
      },
    ]);
    expect(await rejection(withRetries(streamed, { fallback }).generate(request()))).toMatchObject({
      kind: 'truncated_stream',
    });
    expect(fallback.requests).toHaveLength(0);
  });

  it('refuses a retry-after longer than maxRetryAfterMs instead of blocking the run', async () => {
    const { waits, sleep } = recordingSleep();
    const error = await rejection(
      withRetries(scripted([fail(rateLimited(120_000))]), { sleep, maxRetryAfterMs: 60_000 }).generate(
        request(),
      ),
    );
    expect(waits).toEqual([]);
    expect((error as Error).message).toContain('more than maxRetryAfterMs');
  });

  it('honours an abort during the back-off with an AbortError (the real sleep, no real wait)', async () => {
    const controller = new AbortController();
    const inner = scripted([
      async () => {
        queueMicrotask(() => controller.abort());
        throw rateLimited(60_000);
      },
      succeed,
    ]);
    const error = await rejection(withRetries(inner).generate(request({ signal: controller.signal })));
    expect(error).toMatchObject({ name: 'AbortError' });
    expect(inner.requests).toHaveLength(1);
  });

  it('rejects at once when the caller aborts, even if the provider ignores its signal', async () => {
    const controller = new AbortController();
    const inner = scripted([() => new Promise(() => {})]);
    const pending = withRetries(inner).generate(request({ signal: controller.signal }));
    await untilCalls(inner, 1);
    controller.abort();
    expect(await rejection(pending)).toMatchObject({ name: 'AbortError' });
    expect(inner.requests[0]?.signal.aborted).toBe(true);
  });

  it('keeps the provider and model names', () => {
    const wrapped = withRetries(scripted([], 'openai-chat'));
    expect([wrapped.provider, wrapped.model]).toEqual(['openai-chat', 'm']);
  });
});
