import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { defineAgent, type ModelProvider, type RunEvent, type RunResult, run, stream, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { CompiledActor } from '../../src/engine/compiled-actor.ts';
import { isCompiledMachine } from '../../src/engine/compiled-machine.ts';
import { runtimeAgentMachine } from '../../src/run/runtime-agent-machine.ts';

/**
 * run() and stream() with the engine's own actor (CompiledActor), which runs what nothing inspects, against XState's
 * actor, which runs the same run with an inspector: the same results, events and histories, however the run ends
 * (tools, a structured answer, a failing instruction function, an abort before and during the run, a timeout).
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

/** An inspector that looks at nothing: it keeps a run on XState's actor. */
const onXState = { inspect: () => undefined };

/** The scenarios, each a fresh agent and model for every call, on XState's actor or the engine's own. */
const scenarios: Record<
  string,
  (actor: { inspect?: () => undefined }) => {
    start: () => Promise<{ result: RunResult<unknown>; events: RunEvent[] }>;
  }
> = {
  tools: (actor) => {
    const model = scriptedModel([
      { text: 'adding', toolCalls: [{ name: 'add', args: { a: 1, b: 2 } }], stopReason: 'tool_use' },
      { toolCalls: [{ name: 'add', args: { a: 3, b: 'x' } }], stopReason: 'tool_use' },
      { text: 'It is 3', stopReason: 'end_turn' },
    ]);
    return streamed(defineAgent({ name: 'a', instructions: 'add', model, tools: [add] }), actor);
  },
  structured: (actor) => {
    const model = scriptedModel([{ text: 'not json' }, { text: '{"n":4}' }]);
    return streamed(
      defineAgent({ name: 'a', instructions: '', model, output: z.object({ n: z.number() }) }),
      actor,
    );
  },
  'failing instructions': (actor) => {
    const model = scriptedModel([{ text: 'x' }]);
    const instructions = () => {
      throw new Error('no instructions today');
    };
    return streamed(defineAgent({ name: 'a', instructions, model }), actor);
  },
  'aborted before the start': (actor) => {
    const model = scriptedModel([{ text: 'x' }]);
    return streamed(defineAgent({ name: 'a', instructions: '', model }), {
      ...actor,
      signal: AbortSignal.abort(),
    });
  },
  'aborted during a tool': (actor) => {
    const controller = new AbortController();
    const model = scriptedModel([{ toolCalls: [{ name: 'hang', args: {} }] }]);
    const agent = defineAgent({ name: 'a', instructions: '', model, tools: [hang] });
    return streamed(agent, { ...actor, signal: controller.signal }, (event) => {
      if (event.type === 'tool_call') controller.abort();
    });
  },
  'timed out': (actor) => {
    const model = scriptedModel([{ toolCalls: [{ name: 'hang', args: {} }] }]);
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model,
      tools: [hang],
      limits: { timeoutMs: 5 },
    });
    return streamed(agent, actor);
  },
};

function streamed(
  agent: ReturnType<typeof defineAgent>,
  options: { signal?: AbortSignal; inspect?: () => undefined },
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
  vi.restoreAllMocks();
});

describe('run() and stream() on the engine’s own actor', () => {
  for (const [name, scenario] of Object.entries(scenarios)) {
    it(`gives what XState's actor gives: ${name}`, async () => {
      const started = vi.spyOn(CompiledActor.prototype, 'start');
      const expected = comparable(await scenario(onXState).start());
      expect(started).not.toHaveBeenCalled();
      const actual = comparable(await scenario({}).start());
      // On the compiled interpreter, the run ran on the engine's own actor.
      expect(started.mock.calls.length).toBe(isCompiledMachine(runtimeAgentMachine()) ? 1 : 0);
      expect(actual).toEqual(expected);
    });
  }

  it('keeps XState’s actor for a run with an inspector', async () => {
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

/** V8's collector, made callable in this process. */
function collector(): (options?: { type: 'major' | 'minor' }) => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as (options?: { type: 'major' | 'minor' }) => void;
}

function oldSpaceUsed(): number {
  return getHeapSpaceStatistics().find((space) => space.space_name === 'old_space')?.space_used_size ?? 0;
}

// On XState's interpreter a finished run stays reachable to the young generation (its microstep assigns a closure
// to the actor scope's actionExecutor, which V8 allocates old): this holds on the compiled interpreter.
describe.skipIf(!isCompiledMachine(runtimeAgentMachine()))('a finished run on the engine’s own actor', () => {
  it('is left to the young generation: collections after it promote nothing of it', async () => {
    const gc = collector();
    // A model that keeps nothing of its calls (the scripted model records them).
    const text = 'an answer of some length '.repeat(40);
    const usage = { input: 1, output: 1, cached: 0, reasoning: 0 };
    const model: ModelProvider = {
      provider: 'test',
      model: 'test',
      generate: async () => ({ text, toolCalls: [], stopReason: 'end_turn', usage }),
    };
    const agent = defineAgent({ name: 'a', instructions: '', model });
    for (let i = 0; i < 100; i++) await run(agent, 'go');
    gc();
    const before = oldSpaceUsed();
    const runs = 200;
    for (let i = 0; i < runs; i++) {
      await run(agent, 'go');
      // Two young-generation collections: what survives both is promoted to the old generation.
      if (i % 10 === 9) {
        gc({ type: 'minor' });
        gc({ type: 'minor' });
      }
    }
    // A finished run kept alive until the next full collection promotes its whole final state: several KB each
    // (its history holds a 1 KB answer). What the process itself adds meanwhile (compiled code, feedback) is less.
    expect((oldSpaceUsed() - before) / runs).toBeLessThan(1024);
  });
});
