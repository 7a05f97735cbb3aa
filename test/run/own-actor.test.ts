import { defineAgent, type RunEvent, type RunResult, run, stream, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { CompiledActor, ownActorSwitch } from '../../src/engine/compiled-actor.ts';
import { isCompiledMachine } from '../../src/engine/compiled-machine.ts';
import { runtimeAgentMachine } from '../../src/run/runtime-agent-machine.ts';

/**
 * run() and stream() with the engine's own actor (CompiledActor) for runs nothing inspects, against XState's actor:
 * the same results, events and histories, however the run ends (tools, a structured answer, a failing instruction
 * function, an abort before and during the run, a timeout), and a run with an inspector stays on XState's actor.
 */

const add = tool({
  name: 'add',
  description: 'Adds two numbers',
  input: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => a + b,
});

const hang = tool({
  name: 'hang',
  description: 'never answers',
  input: z.object({}),
  execute: () => new Promise(() => undefined),
});

/** The scenarios, each a fresh agent and model for every call. */
const scenarios: Record<
  string,
  () => { start: () => Promise<{ result: RunResult<unknown>; events: RunEvent[] }> }
> = {
  tools: () => {
    const model = scriptedModel([
      { text: 'adding', toolCalls: [{ name: 'add', args: { a: 1, b: 2 } }], stopReason: 'tool_use' },
      { toolCalls: [{ name: 'add', args: { a: 3, b: 'x' } }], stopReason: 'tool_use' },
      { text: 'It is 3', stopReason: 'end_turn' },
    ]);
    return streamed(defineAgent({ name: 'a', instructions: 'add', model, tools: [add] }), {});
  },
  structured: () => {
    const model = scriptedModel([{ text: 'not json' }, { text: '{"n":4}' }]);
    return streamed(
      defineAgent({ name: 'a', instructions: '', model, output: z.object({ n: z.number() }) }),
      {},
    );
  },
  'failing instructions': () => {
    const model = scriptedModel([{ text: 'x' }]);
    const instructions = () => {
      throw new Error('no instructions today');
    };
    return streamed(defineAgent({ name: 'a', instructions, model }), {});
  },
  'aborted before the start': () => {
    const model = scriptedModel([{ text: 'x' }]);
    return streamed(defineAgent({ name: 'a', instructions: '', model }), { signal: AbortSignal.abort() });
  },
  'aborted during a tool': () => {
    const controller = new AbortController();
    const model = scriptedModel([{ toolCalls: [{ name: 'hang', args: {} }] }]);
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [hang] });
    return streamed(agent, { signal: controller.signal }, (event) => {
      if (event.type === 'tool_call') controller.abort();
    });
  },
  'timed out': () => {
    const model = scriptedModel([{ toolCalls: [{ name: 'hang', args: {} }] }]);
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model,
      tools: [hang],
      limits: { timeoutMs: 5 },
    });
    return streamed(agent, {});
  },
};

function streamed(
  agent: ReturnType<typeof defineAgent>,
  options: { signal?: AbortSignal },
  onEvent?: (event: RunEvent) => void,
) {
  return {
    start: async () => {
      const events: RunEvent[] = [];
      const s = stream(agent, 'go', { ...options, sessionId: 'own-actor' });
      for await (const event of s) {
        events.push(event);
        onEvent?.(event);
      }
      return { result: await s.result, events };
    },
  };
}

/** A run's outcome without what differs between any two runs (times). */
function comparable(outcome: { result: RunResult<unknown>; events: RunEvent[] }): unknown {
  return JSON.parse(
    JSON.stringify(outcome, (key, value) =>
      key === 'time' || key === 'durationMs' || key === 'ms' ? 0 : value,
    ),
  );
}

afterEach(() => {
  ownActorSwitch.enabled = false;
  vi.restoreAllMocks();
});

describe('run() and stream() on the engine’s own actor', () => {
  for (const [name, scenario] of Object.entries(scenarios)) {
    it(`gives what XState's actor gives: ${name}`, async () => {
      const expected = comparable(await scenario().start());
      ownActorSwitch.enabled = true;
      const started = vi.spyOn(CompiledActor.prototype, 'start');
      const actual = comparable(await scenario().start());
      // On the compiled interpreter, the run ran on the engine's own actor.
      expect(started.mock.calls.length).toBe(isCompiledMachine(runtimeAgentMachine()) ? 1 : 0);
      expect(actual).toEqual(expected);
    });
  }

  it('keeps XState’s actor for a run with an inspector', async () => {
    ownActorSwitch.enabled = true;
    const started = vi.spyOn(CompiledActor.prototype, 'start');
    const seen: string[] = [];
    const model = scriptedModel([{ text: 'hi' }]);
    const result = await run(defineAgent({ name: 'a', instructions: '', model }), 'go', {
      inspect: (event) => seen.push(event.type),
    });
    expect(result.text).toBe('hi');
    expect(started).not.toHaveBeenCalled();
    expect(seen).toContain('@xstate.snapshot');
  });
});
