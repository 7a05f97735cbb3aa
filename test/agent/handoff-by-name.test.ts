import { ConfigError, createAgentSystem, defineAgent, type RunEvent, run, stream } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';

/**
 * Two agents that hand off to each other: one must name the other by string (it is not defined yet). run() and
 * stream() find the named agent among the agents reached through handoffs given as agents.
 */
const handoffTo = (name: string) => ({
  toolCalls: [{ name: `transfer_to_${name}`, args: { reason: 'yours' } }],
  stopReason: 'tool_use' as const,
});

function pair() {
  const b = defineAgent({
    name: 'B',
    instructions: 'Hand back to A.',
    model: scriptedModel([handoffTo('A')], { loop: true }),
    handoffs: ['A'],
  });
  const a = defineAgent({
    name: 'A',
    instructions: 'Hand off to B once, then answer.',
    model: scriptedModel([handoffTo('B'), { text: 'A answers.' }], { loop: true }),
    handoffs: [b],
  });
  return { a, b };
}

describe('handoffs by name between agents reached through run() and stream()', () => {
  it('run(): A hands off to B (given as an agent), B hands back to "A" (by name), A answers', async () => {
    const { a } = pair();
    const result = await run(a, 'hello');
    expect(result).toMatchObject({
      status: 'completed',
      agent: 'A',
      text: 'A answers.',
      path: ['A', 'B', 'A'],
    });
  });

  it('stream(): the same conversation, with both handoffs as events', async () => {
    const { a } = pair();
    const s = stream(a, 'hello');
    const events: RunEvent[] = [];
    for await (const event of s) events.push(event);
    const handoffs = events.flatMap((event) =>
      event.type === 'handoff' ? [`${event.agent}->${event.data.to}:${event.data.outcome}`] : [],
    );
    expect(handoffs).toEqual(['A->B:accepted', 'B->A:accepted']);
    expect(await s.result).toMatchObject({ status: 'completed', agent: 'A', text: 'A answers.' });
  });

  it('still fails early, typed, for a name nothing reaches, and for two different agents with one name', async () => {
    const lost = defineAgent({
      name: 'lost',
      instructions: '',
      model: scriptedModel([]),
      handoffs: ['nobody'],
    });
    await expect(run(lost, 'hi')).rejects.toThrow(ConfigError);
    await expect(run(lost, 'hi')).rejects.toThrow(/"lost" hands off to "nobody"/);

    const { a } = pair();
    const impostor = defineAgent({ name: 'A', instructions: '', model: scriptedModel([]) });
    const system = createAgentSystem({ agents: [impostor] });
    expect(() => system.spawn(a, 'hi')).toThrow(/Two different agents are named "A"/);
    await system.shutdown();
  });
});
