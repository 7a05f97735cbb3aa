import {
  type ApprovalRequest,
  agentTool,
  createAgentSystem,
  defineAgent,
  type PermissionDecision,
  run,
  tool,
} from 'troupe';
import { type ScriptedTurn, scriptedModel } from 'troupe/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { until } from '../support/until.ts';

/**
 * An agent used as a tool is a tool call like any other: the caller's permission policy is asked about it, an `ask`
 * waits for a person, and the decision reaches it; the caller's approval handler also decides the sub-agent's own
 * calls that wait for people.
 */

const askResearcher: ScriptedTurn = {
  toolCalls: [{ id: 'a1', name: 'researcher', args: { input: 'find it' } }],
  stopReason: 'tool_use',
};

function team(policy: ((call: { tool: string }) => PermissionDecision) | undefined, approvalTool = false) {
  const looked: string[] = [];
  const lookup = tool({
    name: 'lookup',
    description: 'Looks things up.',
    input: z.object({ q: z.string() }),
    needsApproval: approvalTool,
    execute: ({ q }) => {
      looked.push(q);
      return `found ${q}`;
    },
  });
  const researcherModel = scriptedModel([
    { toolCalls: [{ id: 'l1', name: 'lookup', args: { q: 'facts' } }], stopReason: 'tool_use' },
    { text: 'the facts' },
  ]);
  const researcher = defineAgent({
    name: 'researcher',
    description: 'Finds facts.',
    instructions: '',
    model: researcherModel,
    tools: [lookup],
  });
  const lead = defineAgent({
    name: 'lead',
    instructions: '',
    model: scriptedModel([askResearcher, { text: 'lead: done' }]),
    tools: [agentTool(researcher)],
    ...(policy ? { permissions: policy } : {}),
  });
  return { lead, looked, researcherModel };
}

const toolAnswers = (history: readonly { role: string; content?: unknown }[]): string[] =>
  history.filter((message) => message.role === 'tool').map((message) => String(message.content));

describe('agents used as tools pass the tool gate', () => {
  it('a policy that denies the agent tool denies it, in a session and in run(): the sub-agent never runs', async () => {
    const deny = (call: { tool: string }): PermissionDecision =>
      call.tool === 'researcher' ? { decision: 'deny', reason: 'no research today' } : 'allow';
    const inSession = team(deny);
    const system = createAgentSystem();
    const result = await system.spawn(inSession.lead, 'go').result;
    await system.shutdown();
    const inRun = team(deny);
    const ran = await run(inRun.lead, 'go');
    for (const [outcome, { looked, researcherModel }] of [
      [result, inSession],
      [ran, inRun],
    ] as const) {
      expect(outcome).toMatchObject({ status: 'completed', text: 'lead: done' });
      expect(toolAnswers(outcome.history)).toEqual([
        'Error: permission denied: the call to "researcher" was not run: no research today',
      ]);
      expect(looked).toEqual([]);
      expect(researcherModel.calls).toBe(0);
    }
  });

  it('a policy that asks makes the agent tool wait for a person: approve runs it, reject never does', async () => {
    for (const decision of ['approve', 'reject'] as const) {
      const { lead, looked, researcherModel } = team((call) =>
        call.tool === 'researcher' ? 'ask' : 'allow',
      );
      const system = createAgentSystem();
      const session = system.spawn(lead, 'go');
      await until(() => session.pendingApprovals().length === 1);
      expect(session.pendingApprovals()[0]).toMatchObject({
        callId: 'a1',
        tool: 'researcher',
        agent: 'lead',
      });
      expect(researcherModel.calls).toBe(0);
      if (decision === 'approve') await session.approve('a1');
      else await session.reject('a1', 'not needed');
      const result = await session.result;
      expect(result.text).toBe('lead: done');
      if (decision === 'approve') {
        expect(looked).toEqual(['facts']);
        expect(toolAnswers(result.history)).toEqual(['the facts']);
      } else {
        expect(looked).toEqual([]);
        expect(researcherModel.calls).toBe(0);
        expect(toolAnswers(result.history)).toEqual(['Not run: a person rejected this call: not needed']);
      }
      await system.shutdown();
    }
  });

  it("run()'s onApproval decides the calls of an agent used as a tool that wait for people", async () => {
    // A caller without a policy runs on its own actor; one with a policy runs in a private session.
    for (const [decision, policy] of [
      ['approve', undefined],
      ['reject', undefined],
      ['approve', () => 'allow' as const],
      ['reject', () => 'allow' as const],
    ] as const) {
      const { lead, looked } = team(policy, true);
      const requests: ApprovalRequest[] = [];
      const result = await run(lead, 'go', {
        onApproval: (request) => {
          requests.push(request);
          return decision === 'approve' ? { type: 'approve' } : { type: 'reject', reason: 'no lookups' };
        },
      });
      expect(requests).toMatchObject([{ agent: 'researcher', tool: 'lookup', callId: 'l1' }]);
      expect(result).toMatchObject({ status: 'completed', text: 'lead: done' });
      expect(looked).toEqual(decision === 'approve' ? ['facts'] : []);
    }
  });
});
