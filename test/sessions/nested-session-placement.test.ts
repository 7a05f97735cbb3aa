import {
  agentTool,
  createAgentSystem,
  defineAgent,
  type RunEvent,
  stream,
  type ToolContext,
  tool,
} from 'troupe';
import { scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * An agent used as a tool that itself hands off (so it runs in a private session of its own): its tools see the
 * user's session id and where they run, like any nested agent's tools, and its events carry the nested route.
 */

function agents(seen: Pick<ToolContext, 'agent' | 'sessionId' | 'route'>[]) {
  const where = tool({
    name: 'where',
    description: 'records its context',
    input: z.object({}),
    execute: (_args, ctx) => {
      seen.push({ agent: ctx.agent, sessionId: ctx.sessionId, route: ctx.route });
      return 'ok';
    },
  });
  const other = defineAgent({
    name: 'other',
    description: 'takes over',
    instructions: 'x',
    model: scriptedModel(
      [
        { toolCalls: [{ id: 'o1', name: 'where', args: {} }], stopReason: 'tool_use' },
        { text: 'other done' },
      ],
      { loop: true },
    ),
    tools: [where],
  });
  const inner = defineAgent({
    name: 'inner',
    description: 'nested, hands off',
    instructions: 'x',
    model: scriptedModel(
      [
        { toolCalls: [{ id: 'i1', name: 'where', args: {} }], stopReason: 'tool_use' },
        { toolCalls: [{ id: 'i2', name: 'transfer_to_other', args: {} }], stopReason: 'tool_use' },
      ],
      { loop: true },
    ),
    tools: [where],
    handoffs: [other],
  });
  return defineAgent({
    name: 'top',
    instructions: 'x',
    model: scriptedModel(
      [
        { toolCalls: [{ id: 't1', name: 'inner', args: { input: 'go' } }], stopReason: 'tool_use' },
        { text: 'top done' },
      ],
      { loop: true },
    ),
    tools: [agentTool(inner)],
  });
}

const expected = (sessionId: string) => [
  { agent: 'inner', sessionId, route: 'top>t1/inner' },
  { agent: 'other', sessionId, route: 'top>t1/other' },
];

describe('a nested agent that hands off', () => {
  it('run(): its events carry the nested route, depth 1', async () => {
    const s = stream(agents([]), 'go', { sessionId: 'user-42' });
    const events: RunEvent[] = [];
    for await (const event of s) events.push(event);
    expect((await s.result).text).toBe('top done');
    const nested = events.filter((e) => e.agent !== 'top');
    expect(nested.length).toBeGreaterThan(0);
    for (const event of nested) expect(event).toMatchObject({ route: `top>t1/${event.agent}`, depth: 1 });
  });

  it("run(): its tools see the user's session id and their route", async () => {
    const seen: Pick<ToolContext, 'agent' | 'sessionId' | 'route'>[] = [];
    await stream(agents(seen), 'go', { sessionId: 'user-42' }).result;
    expect(seen).toEqual(expected('user-42'));
  });

  it("in a session: its tools see the user's session id and their route", async () => {
    const seen: Pick<ToolContext, 'agent' | 'sessionId' | 'route'>[] = [];
    const system = createAgentSystem();
    const session = system.spawn(agents(seen), 'go', { sessionId: 'user-43' });
    await session.result;
    await system.shutdown();
    expect(seen).toEqual(expected('user-43'));
  });
});
