import { describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/agent/define-agent.ts';
import { ConfigError } from '../../src/core/errors.ts';
import { restateAgents } from '../../src/restate/agent-objects.ts';
import { agentTool } from '../../src/system/agent-tool.ts';
import { scriptedModel } from '../../src/testing/scripted-model.ts';

const agent = (name: string, extra = {}) =>
  defineAgent({ name, description: `${name} agent`, instructions: '', model: scriptedModel([]), ...extra });

describe('restateAgents', () => {
  it('serves the given agents and every agent they reach by handoff or as a tool', () => {
    const researcher = agent('researcher');
    const billing = agent('billing', { tools: [agentTool(researcher)] });
    const triage = agent('triage', { handoffs: [billing] });
    expect(restateAgents([triage]).map((object) => object.name)).toEqual(['triage', 'billing', 'researcher']);
  });

  it('refuses names Restate refuses, duplicates, unknown handoffs and bad options, with ConfigErrors', () => {
    expect(() => restateAgents([agent('7up')])).toThrow(/not a name Restate accepts/);
    expect(() => restateAgents([agent('a'), agent('a')])).toThrow(/Two different agents are named "a"/);
    expect(() => restateAgents([agent('a', { handoffs: ['ghost'] })])).toThrow(/hands off to "ghost"/);
    expect(() => restateAgents([agent('a')], { objectName: () => 'same' })).not.toThrow();
    expect(() => restateAgents([agent('a'), agent('b')], { objectName: () => 'same' })).toThrow(
      /two agents would be served as the object "same"/,
    );
    expect(() => restateAgents([agent('a')], { maxEffectRetries: 0 })).toThrow(ConfigError);
    expect(() => restateAgents([agent('a')], { inactivityTimeout: -1 })).toThrow(ConfigError);
    expect(() => restateAgents([agent('a')], { supervision: { strategy: 'retry' as never } })).toThrow(
      /supervision.strategy/,
    );
    expect(() => restateAgents([])).toThrow(ConfigError);
  });

  it('names objects as objectName says, and resolves handoffs given by name among the agents given', () => {
    const billing = agent('billing');
    const triage = agent('triage', { handoffs: ['billing'] });
    const objects = restateAgents([triage, billing], { objectName: (a) => `desk.${a.name}` });
    expect(objects.map((object) => object.name)).toEqual(['desk.triage', 'desk.billing']);
  });
});
