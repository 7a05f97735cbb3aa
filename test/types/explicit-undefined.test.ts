import { createAgentSystem, defaultLimits, defineAgent, run, stream, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { z } from 'zod';

/**
 * The option types accept an explicit `undefined` (see exact-optional.ts); at run time it must mean what leaving
 * the field out means: the default, not `undefined` spread over it.
 */
describe('options given as undefined behave as options left out', () => {
  it('defineAgent, tool, run and stream', async () => {
    const echo = tool({
      name: 'echo',
      description: 'Echoes.',
      input: z.object({ text: z.string() }),
      execute: ({ text }) => text,
      timeoutMs: undefined,
      maxRetries: undefined,
      fatal: undefined,
      secret: undefined,
    });
    const agent = defineAgent({
      name: 'plain',
      instructions: '',
      model: scriptedModel([{ text: 'done' }], { loop: true, model: undefined, keepRequests: undefined }),
      tools: [echo],
      output: undefined,
      description: undefined,
      handoffs: undefined,
      limits: {
        maxSteps: undefined,
        maxToolCallsPerTool: undefined,
        toolTimeoutMs: undefined,
        timeoutMs: undefined,
      },
      settings: { temperature: undefined },
    });
    expect(agent.limits).toEqual(defaultLimits);
    const options = {
      signal: undefined,
      sessionId: undefined,
      history: undefined,
      clock: undefined,
      inspect: undefined,
      resources: undefined,
      tenant: undefined,
      parentScope: undefined,
    };
    expect(await run(agent, 'x', options)).toMatchObject({ status: 'completed', text: 'done' });
    const s = stream(agent, 'x', options);
    for await (const _ of s);
    expect(await s.result).toMatchObject({ status: 'completed', text: 'done' });
  });

  it('supervision fields given as undefined keep the defaults (system and session)', async () => {
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: 'ok' }], { loop: true }),
    });
    const system = createAgentSystem({
      supervision: { strategy: undefined, maxRestarts: undefined, backoffMs: undefined },
      store: undefined,
      clock: undefined,
      resources: undefined,
    });
    const session = system.spawn(agent, 'x', {
      sessionId: undefined,
      supervision: { maxBackoffMs: undefined },
    });
    expect(await session.result).toMatchObject({ status: 'completed', text: 'ok' });
    await system.shutdown();
  });

  it('a resource manager config with its clock given as undefined keeps the system clock', async () => {
    const clock = new SimulatedClock();
    clock.set(1_000_000);
    const system = createAgentSystem({
      clock,
      resources: { clock: undefined, budgets: { perTenant: { tokens: 1_000, windowMs: 1_000 } } },
    });
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: 'ok', usage: { input: 10, output: 5 } }]),
    });
    await system.spawn(agent, 'x').result;
    expect(system.usage({ tenant: 'default' }).tenant?.windowTokens).toBe(15);
    // On the system's (simulated) clock the window has passed; on the wall clock it would not have.
    clock.increment(2_000);
    expect(system.usage({ tenant: 'default' }).tenant?.windowTokens).toBe(0);
    await system.shutdown();
  });
});
