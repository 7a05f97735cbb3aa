import { type Agent, defineAgent, type RunResult, run, stream } from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';

/**
 * After a handoff the result holds the answer of whichever agent answered, so `output` is typed as the union of
 * what the reachable agents can output. These assertions are checked by `tsc` (npm test type-checks test/).
 */

const Refund = z.object({ refunded: z.number() });
const Answer = z.object({ answer: z.string() });
const Route = z.object({ route: z.string() });
type Refund = z.output<typeof Refund>;
type Answer = z.output<typeof Answer>;
type Route = z.output<typeof Route>;

const handoffTo = (name: string) => ({
  toolCalls: [{ name: `transfer_to_${name}`, args: {} }],
  stopReason: 'tool_use' as const,
});

describe('the output type of an agent with handoffs', () => {
  it('is its own output when it hands off to nobody', () => {
    const billing = defineAgent({
      name: 'billing',
      instructions: '',
      model: scriptedModel([]),
      output: Refund,
    });
    const plain = defineAgent({ name: 'plain', instructions: '', model: scriptedModel([]) });
    expectTypeOf(billing).toEqualTypeOf<Agent<Refund>>();
    expectTypeOf(plain).toEqualTypeOf<Agent<undefined>>();
    const empty = defineAgent({ name: 'empty', instructions: '', model: scriptedModel([]), handoffs: [] });
    expectTypeOf(empty).toEqualTypeOf<Agent<undefined>>();
  });

  it('is the union of what every agent reachable through handoffs given as agents outputs, recursively', () => {
    const model = scriptedModel([]);
    const billing = defineAgent({ name: 'billing', instructions: '', model, output: Refund });
    const docs = defineAgent({ name: 'docs', instructions: '', model });
    const support = defineAgent({
      name: 'support',
      instructions: '',
      model,
      output: Answer,
      handoffs: [docs],
    });
    expectTypeOf(support).toEqualTypeOf<Agent<Answer | undefined>>();
    const triage = defineAgent({
      name: 'triage',
      instructions: '',
      model,
      output: Route,
      handoffs: [billing, support],
    });
    expectTypeOf(triage).toEqualTypeOf<Agent<Route | Refund | Answer | undefined>>();
    // The entry's own output type alone would be a lie: the answer may come from billing or support.
    // @ts-expect-error the output may be a Refund or an Answer (or nothing, from docs)
    const onlyRoute: Agent<Route> = triage;
    expectTypeOf(onlyRoute).not.toBeAny();
    type Output = Awaited<ReturnType<typeof run<Route | Refund | Answer | undefined>>>['output'];
    expectTypeOf<Output>().toEqualTypeOf<Route | Refund | Answer | undefined>();
  });

  it('is unknown when a target is given by name (it could be any agent)', () => {
    const model = scriptedModel([]);
    const billing = defineAgent({ name: 'billing', instructions: '', model, output: Refund });
    const byName = defineAgent({ name: 'front', instructions: '', model, output: Route, handoffs: ['back'] });
    expectTypeOf(byName).toEqualTypeOf<Agent<unknown>>();
    const mixed = defineAgent({ name: 'mixed', instructions: '', model, handoffs: [billing, 'back'] });
    expectTypeOf(mixed).toEqualTypeOf<Agent<unknown>>();
    // ...and so is every agent that reaches it through a handoff given as an agent.
    const entry = defineAgent({ name: 'entry', instructions: '', model, output: Refund, handoffs: [byName] });
    expectTypeOf(entry).toEqualTypeOf<Agent<unknown>>();
  });

  it('types run() and stream() results after a handoff as the union, and the value is the target’s output', async () => {
    const billing = defineAgent({
      name: 'billing',
      instructions: '',
      model: scriptedModel([{ text: '{"refunded": 12}' }], { loop: true }),
      output: Refund,
    });
    const triage = defineAgent({
      name: 'triage',
      instructions: '',
      model: scriptedModel([handoffTo('billing')], { loop: true }),
      output: Route,
      handoffs: [billing],
    });
    const result = await run(triage, 'refund me');
    expectTypeOf(result).toEqualTypeOf<RunResult<Route | Refund>>();
    expect(result.agent).toBe('billing');
    expect(result.output).toEqual({ refunded: 12 });
    // @ts-expect-error the answer may be billing's, which has no `route`
    expect(result.output?.route).toBeUndefined();

    const streamed = stream(triage, 'refund me');
    expectTypeOf(streamed.result).resolves.toEqualTypeOf<RunResult<Route | Refund>>();
    expect((await streamed.result).output).toEqual({ refunded: 12 });
  });
});
