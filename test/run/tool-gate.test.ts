import { createAgentSystem, defineAgent, type PermissionDecision, run, tool } from 'troupe';
import { type ScriptedTurn, scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { until } from '../support/until.ts';

/**
 * The tool gate asks a call's schema once: the value checked there is the one the policy and people decide on and
 * the one the tool runs with. A schema that answers differently the second time (a flaky or stateful refinement, a
 * custom schema that throws once) can never slip a call past the permission policy or an approval.
 */

const removeCall: ScriptedTurn = {
  toolCalls: [{ id: 'c1', name: 'remove', args: { what: 'everything' } }],
  stopReason: 'tool_use',
};

/** A schema whose refinement fails (or throws) the first time it is asked and passes from then on. */
function flakySchema(first: 'fails' | 'throws') {
  let asked = 0;
  const schema = z.object({ what: z.string() }).refine(() => {
    asked++;
    if (asked > 1) return true;
    if (first === 'throws') throw new Error('directory unreachable');
    return false;
  }, 'not today');
  return { schema, asked: () => asked };
}

function removeTool(schema: z.ZodType<{ what: string }>, needsApproval = false) {
  const ran: unknown[] = [];
  const remove = tool({
    name: 'remove',
    description: 'Removes things.',
    input: schema,
    needsApproval,
    execute: (args) => {
      ran.push(args);
      return 'removed';
    },
  });
  return { remove, ran };
}

function answers(history: readonly { role: string; content?: unknown }[]): string[] {
  return history.filter((message) => message.role === 'tool').map((message) => String(message.content));
}

describe('the tool gate asks the schema once', () => {
  it('a call whose check fails is refused with the schema error and never runs, even if a second check would pass', async () => {
    const flaky = flakySchema('fails');
    const { remove, ran } = removeTool(flaky.schema);
    const asked: string[] = [];
    const agent = defineAgent({
      name: 'clerk',
      instructions: '',
      model: scriptedModel([removeCall, { text: 'done' }]),
      tools: [remove],
      permissions: (call): PermissionDecision => {
        asked.push(call.tool);
        return { decision: 'deny', reason: 'nobody removes' };
      },
    });
    const result = await run(agent, 'go');
    expect(ran).toEqual([]);
    expect(flaky.asked()).toBe(1);
    expect(asked).toEqual([]); // invalid arguments: nobody is asked
    expect(answers(result.history)).toEqual([
      'Error: invalid arguments for tool "remove": (root): not today. Arguments received: {"what":"everything"}',
    ]);
  });

  it('a check that throws fails closed: an error result, no approval asked, the tool never runs', async () => {
    const flaky = flakySchema('throws');
    const { remove, ran } = removeTool(flaky.schema, true);
    const requests: string[] = [];
    const agent = defineAgent({
      name: 'clerk',
      instructions: '',
      model: scriptedModel([removeCall, { text: 'done' }]),
      tools: [remove],
    });
    const result = await run(agent, 'go', {
      onApproval: (request) => {
        requests.push(request.callId);
        return { type: 'approve' };
      },
    });
    expect(ran).toEqual([]);
    expect(requests).toEqual([]);
    expect(flaky.asked()).toBe(1);
    expect(answers(result.history)).toEqual([
      'Error: checking the arguments of tool "remove" failed: directory unreachable',
    ]);
  });

  it('the value the policy let through is the value the tool runs with (a transform is applied once)', async () => {
    let parses = 0;
    const counting = z.object({ what: z.string().transform((what) => `${what}#${++parses}`) });
    const { remove, ran } = removeTool(counting);
    const agent = defineAgent({
      name: 'clerk',
      instructions: '',
      model: scriptedModel([removeCall, { text: 'done' }]),
      tools: [remove],
      permissions: () => 'allow',
    });
    await run(agent, 'go');
    expect(ran).toEqual([{ what: 'everything#1' }]);
    expect(parses).toBe(1);
  });

  it('in a session, a call that waits for approval is checked again once approved, and runs with that value', async () => {
    let parses = 0;
    const counting = z.object({ what: z.string().transform((what) => `${what}#${++parses}`) });
    const { remove, ran } = removeTool(counting, true);
    const agent = defineAgent({
      name: 'clerk',
      instructions: '',
      model: scriptedModel([removeCall, { text: 'done' }]),
      tools: [remove],
    });
    const system = createAgentSystem();
    const session = system.spawn(agent, 'go');
    await until(() => session.pendingApprovals().length === 1);
    await session.approve('c1');
    await session.result;
    expect(ran).toEqual([{ what: 'everything#2' }]);
    expect(parses).toBe(2);
    await system.shutdown();
  });
});
