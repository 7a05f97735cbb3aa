import { createAgentSystem, defineAgent, type RunEvent, tool } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * A message queued behind a running turn that never starts (the session is stopped first) ends `aborted`, and its
 * result describes that turn, nothing it did not do: no steps, no spend, and only its own message in its
 * historyDelta (summing usage over turn results counts nothing twice).
 */

const echo = tool({ name: 'echo', description: 'echoes', input: z.object({}), execute: () => 'echoed' });

async function until(predicate: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !predicate(); i++) await new Promise((resolve) => setTimeout(resolve, 2));
  expect(predicate()).toBe(true);
}

describe('a queued turn ended before it started', () => {
  it("reports none of the running turn's messages, steps or spend as its own", async () => {
    const model = scriptedModel([
      { text: 'one done' },
      {
        toolCalls: [{ id: 'e1', name: 'echo', args: {} }],
        stopReason: 'tool_use',
        usage: { input: 5, output: 50 },
      },
      { text: 'slow', delayMs: 60_000 },
    ]);
    const system = createAgentSystem();
    const session = system.spawn(defineAgent({ name: 'a', instructions: '', model, tools: [echo] }), 'one', {
      sessionId: 'queued',
    });
    await session.result;
    const events: RunEvent[] = [];
    const reading = (async () => {
      for await (const event of session.events({ after: -1 })) events.push(event);
    })();
    const second = session.send('two');
    const third = session.send('three');
    await until(() => model.calls === 3);
    await session.stop();
    await system.shutdown();
    await reading;
    const running = await second;
    const queued = await third;
    expect(running).toMatchObject({ stopReason: 'aborted', toolCallCount: 1, usage: { output: 50 } });
    expect(queued).toMatchObject({ status: 'stopped', stopReason: 'aborted' });
    // Nothing of turn two is turn three's.
    expect(queued.historyDelta.some((m) => m.role === 'user' && m.content === 'two')).toBe(false);
    expect(queued.history.slice(queued.history.length - queued.historyDelta.length)).toEqual(
      queued.historyDelta,
    );
    expect(queued).toMatchObject({
      steps: [],
      toolCallCount: 0,
      modelCalls: 0,
      usage: { input: 0, output: 0, cached: 0, reasoning: 0 },
    });
    // And it never started: no run_start of its input.
    expect(events.some((e) => e.type === 'run_start' && e.data.input === 'three')).toBe(false);
  });
});
