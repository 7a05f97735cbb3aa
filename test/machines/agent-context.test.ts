import { describe, expect, it } from 'vitest';
import { type Actor, createActor, type SnapshotFrom } from 'xstate';
import { defaultLimits } from '../../src/core/limits.ts';
import {
  type AgentCheckpoint,
  type AgentContext,
  type AgentEvent,
  type AgentMachine,
  type AgentMachineInput,
  agentMachine,
  agentOutputOf,
  type EffectCommand,
} from '../../src/machines/agent.ts';
import { generatePaths, reply, smallLimits, usage } from './agent-paths.ts';

/**
 * The agent context stays under V8's Object.assign cliff: every XState `assign` copies the context with
 * Object.assign, which V8 does in ~0.05 µs up to 19 keys and 4-6 µs from 20 (bench/experiments/context-copy.ts).
 * Also: the groups that keep it there are not copied by the steps, and the output is flat again.
 */

const maxContextKeys = 19;

/** Effects that answer each command at once with the next scripted event of its kind. */
/** Answers what the machine emits as a run's effects would: the scripted model replies, ok tools, passing checks. */
function scriptEffects(actor: Actor<typeof agentMachine>, modelReplies: AgentEvent[]): void {
  let next = 0;
  actor.on('*', (command: EffectCommand) => {
    if (command.type === 'model.call') {
      const event = modelReplies[next++];
      if (event) actor.send(event);
      return;
    }
    if (command.type === 'guardrails.check') {
      actor.send({ type: 'guardrails.done' });
      return;
    }
    actor.send({
      type: 'tools.done',
      results: command.calls.map((call) => ({
        callId: call.id,
        name: call.name,
        content: 'ok',
        isError: false,
        executed: true,
        degraded: false,
        attempts: 1,
      })),
    });
  });
}

function input(overrides: Partial<AgentMachineInput> = {}): AgentMachineInput {
  return {
    sessionId: 's',
    agent: 'a',
    limits: defaultLimits,
    toolNames: ['t'],
    hasOutputSchema: true,
    history: [{ role: 'user', content: 'go' }],
    baseLength: 0,
    ...overrides,
  };
}

/** Runs the machine to its end, keeping every context it went through. */
function runAll(
  modelReplies: AgentEvent[],
  machineInput: AgentMachineInput,
): { contexts: AgentContext[]; final: SnapshotFrom<AgentMachine> } {
  const actor = createActor(agentMachine, { input: machineInput });
  scriptEffects(actor, modelReplies);
  const contexts: AgentContext[] = [];
  actor.subscribe((snapshot) => contexts.push(snapshot.context));
  actor.start();
  return { contexts, final: actor.getSnapshot() };
}

const toolCall = (id: string) => ({ id, name: 't', args: { n: id } });

/** Tool step, an answer that does not decode, a retry in finalOutput that does: every answer-writing action. */
const decodingRun: AgentEvent[] = [
  { type: 'model.response', response: reply({ toolCalls: [toolCall('c1')], stopReason: 'tool_use' }) },
  { type: 'model.response', response: reply({ text: 'no json' }), decoded: { ok: false, error: 'bad' } },
  { type: 'model.response', response: reply({ text: 'still no' }), decoded: { ok: false, error: 'bad' } },
  { type: 'model.response', response: reply({ text: '{"x":1}' }), decoded: { ok: true, value: { x: 1 } } },
];

describe('agent context size', () => {
  it(`has at most ${maxContextKeys} top-level keys in every snapshot of a run`, () => {
    const { contexts, final } = runAll(decodingRun, input());
    expect(final.status).toBe('done');
    expect(final.value).toBe('completed');
    expect(contexts.length).toBeGreaterThan(3);
    for (const context of contexts) expect(Object.keys(context).length).toBeLessThanOrEqual(maxContextKeys);
  });

  it('keeps the fixed configuration as one object the steps never copy', () => {
    const { contexts } = runAll(decodingRun, input());
    const config = contexts[0]?.config;
    expect(config).toBeDefined();
    for (const context of contexts) expect(context.config).toBe(config);
  });

  it('stays under the limit when resumed, taking only the checkpoint fields from a stored checkpoint', () => {
    const checkpoint: AgentCheckpoint = {
      history: [{ role: 'user', content: 'go' }],
      step: 1,
      modelCalls: 1,
      toolCallsRun: 0,
      toolCallCounts: {},
      callSignatures: {},
      degradedTools: [],
      usage,
      openCalls: [],
      decision: null,
      retryCount: 0,
      forcedFinalAnswer: false,
      approvals: null,
      phase: 'toolUse',
    };
    // A checkpoint read back from a store is JSON: whatever else it carries must not become context.
    const stored = { ...checkpoint, sessionId: 'other', text: 'stale', extra: 1 } as AgentCheckpoint;
    const { contexts, final } = runAll(
      [
        {
          type: 'model.response',
          response: reply({ text: '{"x":2}' }),
          decoded: { ok: true, value: { x: 2 } },
        },
      ],
      input({ resume: stored }),
    );
    expect(final.value).toBe('completed');
    for (const context of contexts) {
      expect(Object.keys(context).length).toBeLessThanOrEqual(maxContextKeys);
      expect(context).not.toHaveProperty('extra');
      expect(context).not.toHaveProperty('sessionId');
    }
    expect(final.output).toMatchObject({ sessionId: 's', step: 2, modelCalls: 2, output: { x: 2 } });
  });
});

describe('agent context size on every path', () => {
  // The small limits of agent.paths.test.ts (./agent-paths.ts): every state and transition is reached in a few steps.
  it.each([
    { name: 'tools + schema, final answer at the step limit', tools: true, schema: true, final: true },
    { name: 'tools, no schema', tools: true, schema: false, final: false },
    { name: 'no tools + schema', tools: false, schema: true, final: false },
  ])(
    `has at most ${maxContextKeys} keys in every state of every path ($name)`,
    ({ name, tools, schema, final }) => {
      const limits = { ...smallLimits, finalAnswerOnMaxSteps: final };
      const paths = generatePaths({ name, limits, tools, schema });
      expect(paths.length).toBeGreaterThan(10);
      let largest = 0;
      for (const path of paths)
        for (const step of path.steps) largest = Math.max(largest, Object.keys(step.state.context).length);
      expect(largest).toBeGreaterThan(0);
      expect(largest).toBeLessThanOrEqual(maxContextKeys);
    },
  );
});

describe('agent machine output', () => {
  it('is the context with its groups flattened: the shape results and the session read', () => {
    const { final } = runAll(decodingRun, input({ sessionId: 'flat', agent: 'b', baseLength: 1 }));
    const output = final.output;
    expect(output).toMatchObject({
      sessionId: 'flat',
      agent: 'b',
      baseLength: 1,
      hasOutputSchema: true,
      toolNames: ['t'],
      handoffTools: {},
      text: '{"x":1}',
      truncated: false,
      output: { x: 1 },
      outputDecoded: true,
      decodeError: null,
      stopReason: 'completed',
      step: 2,
      modelCalls: 4,
      retryCount: 1,
      toolCallsRun: 1,
    });
    expect(output).not.toHaveProperty('config');
    expect(output).not.toHaveProperty('answer');
    expect(output).toEqual(agentOutputOf(final.context));
  });

  it('carries the last answer of a run that stopped (decode_failed keeps the undecoded text and its error)', () => {
    const failing: AgentEvent[] = [
      { type: 'model.response', response: reply({ text: 'a' }), decoded: { ok: false, error: 'e1' } },
      { type: 'model.response', response: reply({ text: 'b' }), decoded: { ok: false, error: 'e2' } },
    ];
    const { final } = runAll(
      failing,
      input({ toolNames: [], limits: { ...defaultLimits, maxDecodeRetries: 1 } }),
    );
    expect(final.output).toMatchObject({
      stopReason: 'decode_failed',
      text: 'b',
      outputDecoded: false,
      output: null,
      decodeError: 'e2',
    });
  });
});

describe('agent context at the start of a run', () => {
  it('shares its empty counts, degraded tools and handoff tools with every run, and no step writes them', () => {
    const first = runAll(decodingRun, input());
    const second = runAll(decodingRun, input());
    const [a, b] = [first.contexts[0] as AgentContext, second.contexts[0] as AgentContext];
    expect(a.toolCallCounts).toBe(b.toolCallCounts);
    expect(a.callSignatures).toBe(b.callSignatures);
    expect(a.degradedTools).toBe(b.degradedTools);
    expect(a.config.handoffTools).toBe(b.config.handoffTools);
    for (const shared of [a.toolCallCounts, a.callSignatures, a.degradedTools, a.config.handoffTools])
      expect(Object.isFrozen(shared)).toBe(true);
    // The run's tool step counted its call in records of its own; the shared ones stay empty.
    expect(first.final.context.toolCallCounts).toEqual({ t: 1 });
    expect(a.toolCallCounts).toEqual({});
    expect(a.callSignatures).toEqual({});
  });
});
