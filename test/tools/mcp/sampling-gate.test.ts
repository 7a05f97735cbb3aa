import {
  defineAgent,
  guardrail,
  ModelError,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type RunEvent,
  stream,
} from 'troupe';
import { mcpServer } from 'troupe/mcp';
import { withRetries } from 'troupe/providers';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/core/clock.ts';
import { EventBus } from '../../../src/core/event-bus.ts';
import { bindCaller, type RunRuntime } from '../../../src/run/run-runtime.ts';
import { serveSampling } from '../../../src/tools/mcp/sampling.ts';
import type { ToolContext } from '../../../src/tools/tool.ts';
import { AskingServer } from './asking-server.ts';

/** Whether a model request is the server's sampling request (its system prompt is the server's). */
function isSampling(request: ModelRequest): boolean {
  return request.messages[0]?.content === 'Be brief.';
}

const answer = (text: string): ModelResponse => ({
  text,
  toolCalls: [],
  usage: { input: 1, output: 1, cached: 0, reasoning: 0 },
  stopReason: 'end_turn',
});

describe('sampling goes through the model gate', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  async function started(): Promise<AskingServer> {
    const server = new AskingServer('stateful');
    await server.start();
    cleanups.push(() => server.stop());
    return server;
  }

  async function runWithEvents(agent: Parameters<typeof stream>[0]) {
    const events: RunEvent[] = [];
    const running = stream(agent, 'go');
    for await (const event of running) events.push(event);
    return { result: await running.result, events };
  }

  it("checks the sampled messages with the agent's input guardrails: a block refuses the request", async () => {
    const asking = await started();
    const server = mcpServer({ name: 'asking', url: asking.url, sampling: true });
    cleanups.push(() => server.close());
    let turns = 0;
    const model = scriptedModel((request) => {
      if (isSampling(request)) return { text: 'never' };
      return turns++ === 0
        ? { toolCalls: [{ id: 'c1', name: 'summarize', args: { text: 'a long text' } }] }
        : { text: 'done' };
    });
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model,
      tools: [server],
      guardrails: {
        input: [
          guardrail({
            name: 'no-summaries',
            check: (_value, { text }) =>
              /Summarize/.test(text) ? { decision: 'block', message: 'not here' } : { decision: 'allow' },
          }),
        ],
      },
    });
    const { result, events } = await runWithEvents(agent);
    expect(result.stopReason).toBe('completed');
    expect(model.requests.filter(isSampling)).toHaveLength(0);
    const sampling = events.find((event) => event.type === 'mcp_sampling');
    expect(sampling?.data).toMatchObject({
      outcome: 'refused',
      reason: expect.stringMatching(/no-summaries/),
    });
    expect(asking.log.answers[0]).toMatch(/^sampling-error:.*guardrail "no-summaries" blocked it: not here/);
    const checks = events.filter(
      (event) => event.type === 'guardrail' && event.data.tool === 'asking/sampling',
    );
    expect(checks).toHaveLength(1);
    expect(checks[0]?.data).toMatchObject({ decision: 'block', callId: 'c1' });
  });

  it("reports the model's circuit breaker opening on a sampling call as a breaker event of the run", async () => {
    const asking = await started();
    const server = mcpServer({ name: 'asking', url: asking.url, sampling: true });
    cleanups.push(() => server.close());
    let turns = 0;
    const inner: ModelProvider = {
      provider: 'test',
      model: `flaky-${Date.now()}`,
      generate: async (request: ModelRequest) => {
        if (isSampling(request))
          throw new ModelError('server', 'overloaded', { status: 503, retryable: true });
        return turns++ === 0
          ? {
              text: '',
              toolCalls: [{ id: 'c1', name: 'summarize', args: { text: 'a long text' } }],
              usage: { input: 1, output: 1, cached: 0, reasoning: 0 },
              stopReason: 'tool_use',
            }
          : answer('done');
      },
    };
    const model = withRetries(inner, { maxRetries: 0, breaker: { threshold: 1, halfOpenAfterMs: 60_000 } });
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [server] });
    const { result, events } = await runWithEvents(agent);
    // The breaker the sampling call opened is the agent's too: its next call fails fast.
    expect(result.error?.code).toBe('model_circuit_open');
    const breaker = events.filter((event) => event.type === 'breaker');
    expect(breaker.map((event) => event.data.state)).toEqual(['open']);
    expect(asking.log.answers[0]).toMatch(/^sampling-error:.*overloaded/);
  });
});

describe('sampling in a run with a durable executor', () => {
  /** A run's runtime whose effects go through `journal`: recorded by key, replayed when the key is known. */
  function runtimeWith(model: ModelProvider, journal: Map<string, unknown>): RunRuntime {
    return {
      key: 'r',
      agent: { name: 'a', model } as unknown as RunRuntime['agent'],
      bus: new EventBus('s', systemClock),
      clock: systemClock,
      onDelta: () => undefined,
      nestedSteps: 0,
      runEffect: async <T>(key: string, _kind: string, effect: () => Promise<T>): Promise<T> => {
        if (journal.has(key)) return journal.get(key) as T;
        const value = await effect();
        journal.set(key, JSON.parse(JSON.stringify(value)));
        return value;
      },
    };
  }

  function toolContext(runtime: RunRuntime): ToolContext {
    const context = { sessionId: 's', callId: 'c1', agent: 'a', route: 'a' } as unknown as ToolContext;
    bindCaller(context, runtime);
    return context;
  }

  const params = {
    systemPrompt: 'Be brief.',
    messages: [{ role: 'user' as const, content: { type: 'text' as const, text: 'Summarize: x' } }],
    maxTokens: 50,
  };
  const settings = { model: undefined, maxTokens: undefined, needsApproval: false };

  it('records the answer, and a replay answers the server without calling the model again', async () => {
    const journal = new Map<string, unknown>();
    const first = scriptedModel([{ text: 'short' }]);
    const signal = new AbortController().signal;
    const answered = await serveSampling(
      'asking',
      settings,
      params,
      toolContext(runtimeWith(first, journal)),
      1,
      signal,
    );
    expect(answered.content).toEqual({ type: 'text', text: 'short' });
    expect(first.calls).toBe(1);
    expect([...journal.keys()]).toEqual(['a/model/sampling/c1/1']);

    // The replay (the process that re-runs the tool call after a crash) gets the recorded answer.
    const replayed = scriptedModel([{ text: 'another answer' }]);
    const again = await serveSampling(
      'asking',
      settings,
      params,
      toolContext(runtimeWith(replayed, journal)),
      1,
      signal,
    );
    expect(again).toEqual(answered);
    expect(replayed.calls).toBe(0);
  });
});
