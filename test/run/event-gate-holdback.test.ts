import { blockedPatterns, createAgentSystem, defineAgent, stream } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';

/**
 * The event gate's output hold-back: no event carries an answer's text before the output guardrail that covers it
 * has let it through. A blocked answer leaves nothing of its text in the stream, a session's events or its log.
 */

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const seen: T[] = [];
  for await (const item of items) seen.push(item);
  return seen;
}

const secret = 'the launch code is 0000';

describe('output guardrails hold the answer back', () => {
  it('a whole-answer check that blocks: no event carries the text, model_response says only what was spent', async () => {
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: secret, usage: { input: 5, output: 7 } }]),
      guardrails: { output: [blockedPatterns([/0000/])] },
    });
    const run = stream(agent, 'tell me');
    const events = await collect(run);
    const result = await run.result;
    expect(result.stopReason).toBe('guardrail_blocked');
    expect(JSON.stringify(events)).not.toContain('launch code');
    const response = events.find((event) => event.type === 'model_response');
    expect(response?.data).toMatchObject({ text: '', toolCallCount: 0 });
    expect(result.text).toBe('');
  });

  it('a whole-answer check that allows: the text leaves after the check, in one model_response, no deltas', async () => {
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: 'all fine here' }]),
      guardrails: { output: [blockedPatterns([/0000/])] },
    });
    const run = stream(agent, 'tell me');
    const events = await collect(run);
    expect((await run.result).text).toBe('all fine here');
    const types = events.map((event) => event.type);
    expect(types).not.toContain('delta');
    const checkAt = events.findIndex((event) => event.type === 'guardrail' && event.data.stage === 'output');
    const responseAt = events.findIndex((event) => event.type === 'model_response');
    expect(checkAt).toBeGreaterThan(-1);
    expect(responseAt).toBeGreaterThan(checkAt);
    expect(events[responseAt]?.data).toMatchObject({ text: 'all fine here' });
  });

  it('a refusal is checked like an answer, and a blocked one never reaches the result or the events', async () => {
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: '', refusal: `I will not say ${secret}`, stopReason: 'refusal' }]),
      guardrails: { output: [blockedPatterns([/0000/])] },
    });
    const run = stream(agent, 'tell me');
    const events = await collect(run);
    const result = await run.result;
    expect(result.stopReason).toBe('guardrail_blocked');
    expect(result.guardrail).toMatchObject({ name: 'blocked-patterns', stage: 'output' });
    expect(result.text).not.toContain('launch code');
    expect(JSON.stringify(result.history)).not.toContain('launch code');
    expect(JSON.stringify(events)).not.toContain('launch code');
  });

  it('a refusal that passes its check still ends the run as a refusal', async () => {
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ text: '', refusal: 'I cannot help with that.', stopReason: 'refusal' }]),
      guardrails: { output: [blockedPatterns([/0000/])] },
    });
    const run = stream(agent, 'tell me');
    const events = await collect(run);
    const result = await run.result;
    expect(result.stopReason).toBe('guardrail_blocked');
    expect(result.text).toBe('I cannot help with that.');
    expect(events.some((event) => event.type === 'guardrail' && event.data.stage === 'output')).toBe(true);
  });

  it('an asynchronous streaming check: model_response waits for its final verdict', async () => {
    const agent = defineAgent({
      name: 'a',
      instructions: '',
      model: scriptedModel([{ deltas: ['the launch ', 'code is 0000'] }]),
      guardrails: {
        output: [
          {
            name: 'slow',
            streaming: true,
            check: async (_value, info) => {
              await Promise.resolve();
              return info.text.includes('launch code')
                ? { decision: 'block' as const, message: 'no codes' }
                : { decision: 'allow' as const };
            },
          },
        ],
      },
    });
    const run = stream(agent, 'tell me');
    const events = await collect(run);
    expect((await run.result).stopReason).toBe('guardrail_blocked');
    expect(JSON.stringify(events)).not.toContain('launch code');
  });

  it('in a session: neither session.events() nor the stored log holds a blocked answer', async () => {
    const system = createAgentSystem();
    const session = system.spawn(
      defineAgent({
        name: 'a',
        instructions: '',
        model: scriptedModel([{ text: secret }]),
        guardrails: { output: [blockedPatterns([/0000/])] },
      }),
      'tell me',
    );
    const events = collect(session.events());
    expect((await session.result).stopReason).toBe('guardrail_blocked');
    expect(JSON.stringify(await events)).not.toContain('launch code');
    // The whole log, read back: up to the turn's end.
    const logged: unknown[] = [];
    for await (const event of session.events({ after: -1 })) {
      logged.push(event);
      if (event.type === 'run_end') break;
    }
    expect(logged.length).toBeGreaterThan(3);
    expect(JSON.stringify(logged)).not.toContain('launch code');
    await system.shutdown();
  });
});
