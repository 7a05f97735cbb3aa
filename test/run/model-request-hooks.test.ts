import {
  createResourceManager,
  defineAgent,
  type ModelProvider,
  type ModelRequest,
  stream,
  tool,
} from 'troupe';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * A run's model calls share the request's delta and breaker hooks (one of each per run, not per call): a provider
 * written by a user still streams through them on every call, and each call's streamed tool arguments are guarded
 * on their own.
 */

const usage = { input: 1, output: 1, cached: 0, reasoning: 0 };

/** A provider that streams `pieces` of each turn's tool-call arguments (or its text) through `onDelta`. */
function streamingModel(
  turns: { args?: string[]; text?: string }[],
  requests: ModelRequest[],
): ModelProvider {
  return {
    provider: 'test',
    model: 'streaming',
    async generate(request: ModelRequest) {
      requests.push(request);
      const turn = turns[requests.length - 1] ?? { text: 'done' };
      if (turn.args) {
        const id = `c${requests.length}`;
        for (const [index, argsDelta] of turn.args.entries())
          request.onDelta?.({
            type: 'tool_call',
            index: 0,
            ...(index === 0 ? { id, name: 'login' } : {}),
            argsDelta,
          });
        return {
          text: '',
          toolCalls: [{ id, name: 'login', args: JSON.parse(turn.args.join('')) }],
          stopReason: 'tool_use',
          usage,
        };
      }
      const text = turn.text ?? '';
      for (const word of text.split(' ')) request.onDelta?.({ type: 'text', text: word });
      return { text, toolCalls: [], stopReason: 'end_turn', usage };
    },
  };
}

const login = tool({
  name: 'login',
  description: 'logs in',
  input: z.object({ user: z.string(), passcode: z.string().optional() }),
  secret: ['passcode'],
  execute: () => 'ok',
});

/** A stream of an agent with the `login` tool whose model plays `turns`, keeping each request it is given. */
function loginRun(turns: Parameters<typeof streamingModel>[0], requests: ModelRequest[]) {
  return stream(
    defineAgent({ name: 'a', instructions: '', model: streamingModel(turns, requests), tools: [login] }),
    'go',
  );
}

describe("a run's model request hooks", () => {
  it("stream a user's provider on every call, one delta hook and one breaker hook for all the run's calls", async () => {
    const requests: ModelRequest[] = [];
    const s = loginRun(
      [{ args: ['{"user": ', '"ada"}'] }, { args: ['{"user": "bob"}'] }, { text: 'all done' }],
      requests,
    );
    const shown: string[] = [];
    const text: string[] = [];
    for await (const event of s) {
      if (event.type === 'tool_call_delta') shown.push(event.data.argsDelta);
      if (event.type === 'delta') text.push(event.data.content);
    }
    const result = await s.result;
    expect(result.text).toBe('all done');
    expect(shown).toEqual(['{"user": ', '"ada"}', '{"user": "bob"}']);
    expect(text).toEqual(['all', 'done']);
    expect(requests).toHaveLength(3);
    const [first, ...others] = requests as [ModelRequest, ...ModelRequest[]];
    expect(first.onDelta).toBeTypeOf('function');
    expect(first.onBreaker).toBeTypeOf('function');
    for (const request of others) {
      expect(request.onDelta).toBe(first.onDelta);
      expect(request.onBreaker).toBe(first.onBreaker);
    }
  });

  it('are shared under a resource manager too, each request capped by its grant and each call settled', async () => {
    const requests: ModelRequest[] = [];
    const manager = createResourceManager({ budgets: { perTenant: { tokens: 1_000_000 } } });
    const s = stream(
      defineAgent({
        name: 'a',
        instructions: 'Log in.',
        model: streamingModel([{ args: ['{"user": ', '"ada"}'] }, { text: 'all done' }], requests),
        tools: [login],
      }),
      'go',
      { resources: manager },
    );
    const shown: string[] = [];
    const spent: number[] = [];
    for await (const event of s) {
      if (event.type === 'tool_call_delta') shown.push(event.data.argsDelta);
      if (event.type === 'spend') spent.push(event.data.tokens);
    }
    const result = await s.result;
    expect(result.text).toBe('all done');
    expect(shown).toEqual(['{"user": ', '"ada"}']);
    expect(spent).toEqual([2, 2]);
    expect(requests).toHaveLength(2);
    const [first, second] = requests as [ModelRequest, ModelRequest];
    expect(first.settings.maxOutputTokens).toBeTypeOf('number');
    expect(second.settings.maxOutputTokens).toBe(first.settings.maxOutputTokens);
    expect(second.onDelta).toBe(first.onDelta);
    expect(second.onBreaker).toBe(first.onBreaker);
    expect(manager.usage({ tenant: 'default' }).tenant?.spentTokens).toBe(4);
    manager.stop();
  });

  it("guard each call's streamed tool arguments on their own: a secret key in one call hides nothing of the next", async () => {
    const requests: ModelRequest[] = [];
    const s = loginRun(
      [
        { args: ['{"user": "ada", "pass', 'code": "hunter2"}'] },
        { args: ['{"user": ', '"bob"}'] },
        { text: 'done' },
      ],
      requests,
    );
    const shown: string[] = [];
    for await (const event of s) if (event.type === 'tool_call_delta') shown.push(event.data.argsDelta);
    await s.result;
    expect(shown.join('')).not.toContain('hunter2');
    expect(shown.slice(-2)).toEqual(['{"user": ', '"bob"}']);
  });
});
