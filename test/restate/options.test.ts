import { describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/agent/define-agent.ts';
import { createAuditLog } from '../../src/audit/audit-log.ts';
import { memoryAuditSink } from '../../src/audit/memory-audit-sink.ts';
import { ConfigError } from '../../src/core/errors.ts';
import { createResourceManager } from '../../src/resources/resource-manager.ts';
import { restateAgents } from '../../src/restate/agent-objects.ts';
import { serveAgents } from '../../src/restate/serve.ts';
import { contextType } from '../../src/run/run-context.ts';
import { agentTool } from '../../src/sessions/agent-tool.ts';
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

  it('refuses every option name it does not know, and the in-process options that cannot hold, saying why', () => {
    const refused = (options: object, pattern: RegExp) => {
      expect(() => restateAgents([agent('a')], options as never)).toThrow(ConfigError);
      expect(() => restateAgents([agent('a')], options as never)).toThrow(pattern);
    };
    refused({ budgett: { tokens: 10 } }, /restateAgents\(\): unknown option "budgett" \(known: .*budget/);
    refused(
      { resources: createResourceManager() },
      /"resources" does not apply on Restate: a resource manager lives in one process/,
    );
    refused({ inspect: () => undefined }, /"inspect" does not apply on Restate/);
    refused({ onApproval: () => ({ type: 'approve' }) }, /"onApproval" does not apply on Restate/);
    refused({ store: {} }, /"store" does not apply on Restate/);
    refused({ pii: { kinds: ['postcode'] } }, /unknown pii kind "postcode"/);
    refused({ audit: {} }, /audit must be an audit log/);
    refused({ budget: { tokens: -1 } }, /budget.tokens must be a number > 0/);
    refused({ context: 'admin' }, /context must be a function/);
    // serveAgents takes restateAgents' options and its own, and refuses the rest before it listens.
    expect(() => serveAgents([agent('a')], { prot: 9080 } as never)).toThrow(
      /serveAgents\(\): unknown option "prot"/,
    );
  });

  it('records the ConfigError it refuses options with in the audit log given', () => {
    const sink = memoryAuditSink();
    const audit = createAuditLog({ sink });
    expect(() => restateAgents([agent('a')], { audit, tenant: 'acme' } as never)).toThrow(ConfigError);
    return audit.flush().then(() => {
      expect(sink.records).toHaveLength(1);
      expect(sink.records[0]).toMatchObject({ type: 'config_error', data: { where: 'restateAgents()' } });
    });
  });

  it('refuses a budget when an agent used as a tool needs a session of its own, which the budget cannot reach', () => {
    const billing = agent('billing');
    const desk = agent('desk', { description: 'The desk.', handoffs: [billing] });
    const concierge = agent('concierge', { tools: [agentTool(desk)] });
    expect(() => restateAgents([concierge], { budget: { tokens: 100 } })).toThrow(
      /agent "concierge" uses "desk" as a tool, which has handoffs or fatal tools/,
    );
    expect(() => restateAgents([concierge])).not.toThrow();
  });

  it('takes the features that hold on Restate', () => {
    const audit = createAuditLog();
    expect(() =>
      restateAgents([agent('a')], {
        pii: { kinds: ['email'] },
        audit,
        budget: { tokens: 1_000 },
        context: () => ({ user: 'u' }),
      }),
    ).not.toThrow();
  });

  it('types the context function by the agents’ context type, and requires it when they declare one', () => {
    const withContext = defineAgent({
      name: 'w',
      instructions: '',
      contextType: contextType<{ user: string }>(),
      model: scriptedModel([]),
    });
    const typed = () => {
      // @ts-expect-error the agents declare a context: the context function is required
      restateAgents([withContext]);
      // @ts-expect-error the function must return the agents' context type
      restateAgents([withContext], { context: () => ({ user: 1 }) });
    };
    expect(typed).toBeTypeOf('function');
    expect(
      restateAgents([withContext], { context: async ({ sessionId }) => ({ user: sessionId }) }),
    ).toHaveLength(1);
    expect(restateAgents([agent('plain')])).toHaveLength(1);
  });
});
