import { createResourceManager, defineAgent, type RunEvent, stream } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { OutputEstimates } from '../../src/resources/output-estimates.ts';
import { defaultOutputEstimate } from '../../src/resources/resource-binding.ts';

/** Reservations expect what the model has been writing, not a flat 1,024 tokens. */
describe('output estimates', () => {
  it("are the running mean of the run's calls to a model, else of all calls to it", () => {
    const estimates = new OutputEstimates();
    const [r1, r2, r3] = [[], [], []];
    expect(estimates.expected(r1, 'p', 'm')).toBeUndefined();
    estimates.record(r1, 'p', 'm', 40);
    estimates.record(r1, 'p', 'm', 61);
    estimates.record(r2, 'p', 'm', 400);
    expect(estimates.expected(r1, 'p', 'm')).toBe(51);
    expect(estimates.expected(r2, 'p', 'm')).toBe(400);
    // A new run starts from the model's mean over every run.
    expect(estimates.expected(r3, 'p', 'm')).toBe(167);
    expect(estimates.expected(undefined, 'p', 'm')).toBe(167);
    expect(estimates.expected(r1, 'p', 'other')).toBeUndefined();
    expect(estimates.expected(r1, 'q', 'm')).toBeUndefined();
  });

  it("a closed run's own means go; the model's stay", async () => {
    const manager = createResourceManager();
    const call = async (session: string, output: number) => {
      const outcome = await manager.reserve({
        session,
        provider: 'p',
        model: 'm',
        estimate: { input: 1, output: 1 },
      });
      if (!outcome.granted) throw new Error(outcome.message);
      manager.settle(outcome.grant, { input: 1, output, cached: 0, reasoning: 0 });
    };
    manager.openRun({ session: 'r1', provider: 'p', model: 'm' });
    manager.openRun({ session: 'r2', provider: 'p', model: 'm' });
    await call('r1', 40);
    await call('r1', 61);
    await call('r2', 400);
    expect(manager.expectedOutput('r1', 'p', 'm')).toBe(51);
    manager.closeRun('r1');
    expect(manager.expectedOutput('r1', 'p', 'm')).toBe(167);
    expect(manager.expectedOutput('r2', 'p', 'm')).toBe(400);
    manager.stop();
  });

  it('a run reserves the output its model has been writing, capped by maxOutputTokens', async () => {
    const manager = createResourceManager();
    const agent = (maxOutputTokens?: number) =>
      defineAgent({
        name: 'short',
        instructions: '',
        model: scriptedModel(
          () => ({ text: 'ok', stopReason: 'end_turn', usage: { input: 3, output: 40 } }),
          {
            model: 'm',
          },
        ),
        ...(maxOutputTokens !== undefined ? { settings: { maxOutputTokens } } : {}),
      });
    /** What the call's reservation gave back: its estimate minus the 43 tokens it used. */
    const returned = async (maxOutputTokens?: number) => {
      const s = stream(agent(maxOutputTokens), 'hi', { resources: manager });
      const events: RunEvent[] = [];
      for await (const event of s) events.push(event);
      const spend = events.find((event) => event.type === 'spend');
      return spend?.type === 'spend' ? spend.data.returnedTokens : undefined;
    };
    // The prompt "hi" is estimated at 5 tokens (1 of text, 4 of framing).
    expect(await returned()).toBe(5 + defaultOutputEstimate - 43);
    // The model wrote 40 tokens: the next run of it reserves 40, not the default.
    expect(await returned()).toBe(5 + 40 - 43);
    // Never more than the call may write: held to 16 output tokens, the model wrote 16.
    expect(await returned(16)).toBe(5 + 16 - (3 + 16));
    // Another run expects the model's mean over its three calls.
    expect(manager.expectedOutput('any run', 'scripted', 'm')).toBe(Math.ceil((40 + 40 + 16) / 3));
    manager.stop();
  });
});
