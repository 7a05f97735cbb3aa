import { agentTool, createAgentSystem, defineAgent, parallel, run, stream, tool } from 'troupe';
import { expectRun, scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * A run's result counts what the agents it used as tools spent: `usage` and `modelCalls` are totals, `nested` is
 * the part spent by the agents used as tools, on every entry point.
 */

const usage = (input: number, output: number) => ({ input, output, cached: 0, reasoning: 0 });

const lookup = tool({
  name: 'lookup',
  description: 'Looks up.',
  input: z.object({}),
  execute: () => 'found',
});

/** A lead (2 calls, 100/10 each) that asks a researcher (2 calls, 400/40 each) once, through agentTool. */
function team() {
  const researcher = defineAgent({
    name: 'researcher',
    description: 'Finds facts.',
    instructions: '',
    model: scriptedModel([
      { toolCalls: [{ id: 'r1', name: 'lookup', args: {} }], stopReason: 'tool_use', usage: usage(400, 40) },
      { text: 'the facts', usage: usage(400, 40) },
    ]),
    tools: [lookup],
  });
  return defineAgent({
    name: 'lead',
    instructions: '',
    model: scriptedModel([
      {
        toolCalls: [{ id: 'a1', name: 'researcher', args: { input: 'find it' } }],
        stopReason: 'tool_use',
        usage: usage(100, 10),
      },
      { text: 'lead: done', usage: usage(100, 10) },
    ]),
    tools: [agentTool(researcher)],
  });
}

const total = usage(1000, 100);
const nested = { usage: usage(800, 80), modelCalls: 2 };

describe("a run's result counts the agents it used as tools", () => {
  it('run(): usage and model calls include the sub-agent, nested says which part', async () => {
    const result = await run(team(), 'go');
    expect(result.stopReason).toBe('completed');
    expect(result.usage).toEqual(total);
    expect(result.modelCalls).toBe(4);
    expect(result.nested).toEqual(nested);
    // The agent's own model turns stay its steps.
    expect(result.steps).toHaveLength(2);
  });

  it('stream(): the result and the run_end event carry the totals', async () => {
    const running = stream(team(), 'go');
    const ends: unknown[] = [];
    for await (const event of running)
      if (event.type === 'run_end' && event.depth === 0) ends.push(event.data);
    const result = await running.result;
    expect(result.usage).toEqual(total);
    expect(ends).toEqual([expect.objectContaining({ modelCalls: 4, usage: total })]);
  });

  it('a session turn: the turn result includes the sub-agent (a child of the session)', async () => {
    const system = createAgentSystem();
    try {
      const result = await system.spawn(team(), 'go').result;
      expect(result.stopReason).toBe('completed');
      expect(result.usage).toEqual(total);
      expect(result.modelCalls).toBe(4);
    } finally {
      await system.shutdown();
    }
  });

  it('parallel(): each member result includes what its sub-agents spent', async () => {
    const group = parallel([team(), team()], { merge: 'concat' });
    const outcome = await group.run('go');
    for (const result of outcome.results) {
      expect(result.usage).toEqual(total);
      expect(result.modelCalls).toBe(4);
      expect(result.nested).toEqual(nested);
    }
  });

  it('an agent used as a tool inside one counts its own sub-agents too', async () => {
    const inner = team();
    const outer = defineAgent({
      name: 'outer',
      instructions: '',
      model: scriptedModel([
        {
          toolCalls: [{ id: 'o1', name: 'lead', args: { input: 'go' } }],
          stopReason: 'tool_use',
          usage: usage(1, 1),
        },
        { text: 'outer: done', usage: usage(1, 1) },
      ]),
      tools: [agentTool({ ...inner, description: 'Leads.' })],
    });
    const result = await run(outer, 'go');
    expect(result.usage).toEqual(usage(1002, 102));
    expect(result.modelCalls).toBe(6);
    expect(result.nested).toEqual({ usage: total, modelCalls: 4 });
  });

  it('a handoff: the turn counts what the agent handed to spent through its agents used as tools', async () => {
    const closer = { ...team(), name: 'closer' };
    const triage = defineAgent({
      name: 'triage',
      instructions: '',
      model: scriptedModel([
        {
          toolCalls: [{ id: 'h1', name: 'transfer_to_closer', args: {} }],
          stopReason: 'tool_use',
          usage: usage(7, 7),
        },
      ]),
      handoffs: [closer],
    });
    const result = await run(triage, 'go');
    expect(result).toMatchObject({ status: 'completed', path: ['triage', 'closer'] });
    expect(result.usage).toEqual(usage(1007, 107));
    expect(result.modelCalls).toBe(5);
  });

  it('expectRun().toUseAtMostModelCalls() counts the sub-agent calls', async () => {
    const result = await run(team(), 'go');
    expectRun(result).toUseAtMostModelCalls(4);
    expect(() => expectRun(result).toUseAtMostModelCalls(3)).toThrow();
  });

  it('a run without agents used as tools has no nested part', async () => {
    const solo = defineAgent({ name: 'solo', instructions: '', model: scriptedModel([{ text: 'hi' }]) });
    const result = await run(solo, 'go');
    expect(result.nested).toBeUndefined();
    expect(result.modelCalls).toBe(1);
  });
});
