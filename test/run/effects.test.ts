import { defineAgent, type ModelRequest } from 'troupe';
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { systemClock } from '../../src/core/clock.ts';
import { EventBus } from '../../src/core/event-bus.ts';
import type { AgentEvent } from '../../src/machines/agent.ts';
import { agentInput, hostAgent } from '../../src/run/host.ts';
import { attachRuntime } from '../../src/run/run-runtime.ts';
import { runtimeAgentMachine } from '../../src/run/runtime-agent-machine.ts';
import { until } from '../support/until.ts';

/**
 * The agent machine's effects live on the actor that runs it: the commands the machine emits reach the gates, and
 * the signal every call gets is aborted when the run ends, however it ends.
 */

/** An agent actor, started, whose model call never answers; `signal` is the one the call got. */
function pendingModelCall() {
  const requests: ModelRequest[] = [];
  const agent = defineAgent({
    name: 'waiter',
    instructions: 'wait',
    model: {
      provider: 'test',
      model: 'pending',
      generate: (request) => {
        requests.push(request);
        return new Promise(() => {});
      },
    },
  });
  const bus = new EventBus('effects-test', systemClock);
  const hosted = hostAgent({ key: 'effects-test', agent, bus, clock: systemClock });
  const actor = createActor(runtimeAgentMachine(), {
    input: agentInput(agent, 'effects-test', [{ role: 'user', content: 'go' }], 0),
  });
  attachRuntime(actor, hosted.runtime);
  const errors: unknown[] = [];
  actor.subscribe({ error: (error) => errors.push(error) });
  actor.start();
  return { actor, requests, errors };
}

describe('the effects of an agent actor', () => {
  it('start the model call the machine emits, with a signal that aborts when the run is aborted', async () => {
    const { actor, requests } = pendingModelCall();
    await until(() => requests.length === 1);
    const signal = requests[0]?.signal;
    expect(signal?.aborted).toBe(false);
    actor.send({ type: 'abort', reason: 'test' });
    expect(actor.getSnapshot().status).toBe('done');
    expect(signal?.aborted).toBe(true);
  });

  it('abort the call in flight when the actor is stopped', async () => {
    const { actor, requests } = pendingModelCall();
    await until(() => requests.length === 1);
    actor.stop();
    expect(requests[0]?.signal?.aborted).toBe(true);
  });

  it('abort the call in flight when a step of the machine throws (the actor fails)', async () => {
    const { actor, requests, errors } = pendingModelCall();
    await until(() => requests.length === 1);
    // A response the machine cannot read: its guards throw, and the actor fails with that error.
    actor.send({ type: 'model.response', response: null } as unknown as AgentEvent);
    expect(actor.getSnapshot().status).toBe('error');
    expect(errors).toHaveLength(1);
    expect(requests[0]?.signal?.aborted).toBe(true);
  });
});
