import {
  agentTool,
  createAgentSystem,
  createResourceManager,
  defineAgent,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  stream,
} from 'troupe';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { reserveModelCall } from '../../src/resources/model-reservation.ts';

/**
 * A model call's reservation goes back when its run stops waiting for the answer (the call's signal aborts), not
 * only when the provider answers: a provider that ignores the abort and never answers must not hold the budget of
 * the scopes that outlive the run (a sub-agent's caller, the session's next turn).
 */

const usage = { input: 1, output: 1, cached: 0, reasoning: 0 };
const request = (signal: AbortSignal): ModelRequest => ({
  messages: [{ role: 'user', content: 'hi' }],
  tools: [],
  settings: {},
  signal,
});

/** A provider that ignores its signal and never answers; `called` resolves when it is asked. */
function silentModel() {
  let asked: () => void = () => undefined;
  const called = new Promise<void>((resolve) => {
    asked = resolve;
  });
  const model: ModelProvider = {
    provider: 'test',
    model: 'silent',
    generate: () => {
      asked();
      return new Promise<ModelResponse>(() => undefined);
    },
  };
  return { model, called };
}

/** A provider that answers at once, with tool calls from `toolCalls` while it has any, then text. */
function answeringModel(toolCalls: ModelResponse['toolCalls'][] = []): ModelProvider {
  let index = 0;
  return {
    provider: 'test',
    model: 'answering',
    generate: async () => {
      const calls = toolCalls[index++] ?? [];
      return {
        text: calls.length > 0 ? '' : 'done',
        toolCalls: calls,
        stopReason: calls.length > 0 ? 'tool_use' : 'end_turn',
        usage,
      };
    },
  };
}

/** A manager with one open run of a 1,000-token budget, and a model call of that run granted at once. */
function grantedReservation() {
  const manager = createResourceManager();
  manager.openRun({ session: 's', provider: 'test', model: 'm', budget: { tokens: 1_000 } });
  const controller = new AbortController();
  const reservation = reserveModelCall(
    manager,
    's',
    request(controller.signal),
    { provider: 'test', model: 'm' },
    controller.signal,
  );
  if (reservation instanceof Promise || !reservation.granted) throw new Error('expected a grant at once');
  return { manager, controller, reservation };
}

describe('reserveModelCall', () => {
  it('gives a granted reservation back when its signal aborts; an answer after that is not counted', () => {
    const { manager, controller, reservation } = grantedReservation();
    expect(manager.usage({ session: 's' }).session?.reservedTokens).toBeGreaterThan(0);
    controller.abort();
    expect(manager.usage({ session: 's' }).session).toMatchObject({ reservedTokens: 0, spentTokens: 0 });
    reservation.settle({ input: 10, output: 10, cached: 0, reasoning: 0 });
    expect(manager.usage({ session: 's' }).session).toMatchObject({ reservedTokens: 0, spentTokens: 0 });
    manager.stop();
  });

  it('keeps a settled reservation settled when the signal aborts later', () => {
    const { manager, controller, reservation } = grantedReservation();
    reservation.settle({ input: 10, output: 10, cached: 0, reasoning: 0 });
    controller.abort();
    expect(manager.usage({ session: 's' }).session).toMatchObject({ reservedTokens: 0, spentTokens: 20 });
    manager.stop();
  });
});

describe('a call cut short by the end of its run', () => {
  it("a sub-agent in a session times out on a silent provider: its caller's next call is not held, the run ends", async () => {
    const clock = new SimulatedClock();
    const silent = silentModel();
    const helper = defineAgent({
      name: 'helper',
      description: 'Helps',
      instructions: '',
      model: silent.model,
      limits: { timeoutMs: 10 },
    });
    // The handoff makes the run a session, where the sub-agent's calls reserve on the caller's scope.
    const lead = defineAgent({
      name: 'lead',
      description: 'Leads',
      instructions: '',
      model: answeringModel([[{ id: 'c1', name: 'helper', args: { input: 'task' } }]]),
      tools: [agentTool(helper)],
      handoffs: [helper],
    });
    const manager = createResourceManager({ clock });
    const controller = new AbortController();
    const running = stream(lead, 'go', {
      resources: manager,
      budget: { tokens: 2_000 },
      sessionId: 'lead-run',
      clock,
      signal: controller.signal,
    });
    try {
      void silent.called.then(() => clock.increment(10));
      for await (const event of running) {
        if (event.type === 'run_end' && event.depth === 1) {
          expect(event.data.stopReason).toBe('timed_out');
          expect(manager.usage({ session: 'lead-run' }).session?.reservedTokens).toBe(0);
        }
      }
      const result = await running.result;
      expect(result.status).toBe('completed');
      expect(result.text).toBe('done');
    } finally {
      // Without the release the run would wait for the budget for ever: end it so the test fails instead of hanging.
      controller.abort();
      manager.stop();
    }
  });

  it("a session turn aborted on a silent provider: the session's next turn is not held", async () => {
    let calls = 0;
    const silent = silentModel();
    const answering = answeringModel();
    const model: ModelProvider = {
      provider: 'test',
      model: 'm',
      generate: (request) => (++calls === 2 ? silent.model.generate(request) : answering.generate(request)),
    };
    const agent = defineAgent({ name: 'a', description: 'Answers', instructions: '', model });
    const manager = createResourceManager();
    const system = createAgentSystem({ agents: [agent], resources: manager });
    try {
      const session = system.spawn(agent, 'first', { sessionId: 'chat', budget: { tokens: 2_000 } });
      expect((await session.result).status).toBe('completed');
      const controller = new AbortController();
      const second = session.send('second', { signal: controller.signal });
      await silent.called;
      controller.abort();
      expect((await second).stopReason).toBe('aborted');
      expect(manager.usage({ session: 'chat' }).session?.reservedTokens).toBe(0);
      expect((await session.send('third')).status).toBe('completed');
    } finally {
      await system.shutdown({ mode: 'abort' });
      manager.stop();
    }
  });
});
