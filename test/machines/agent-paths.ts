import type { SnapshotFrom } from 'xstate';
import type { StatePath } from 'xstate/graph';
import type { Clock } from '../../src/core/clock.ts';
import { defaultLimits, type ResolvedLimits } from '../../src/core/limits.ts';
import type { ModelResponse } from '../../src/core/model.ts';
import type {
  AgentCheckpoint,
  AgentEvent,
  AgentMachine,
  AgentMachineInput,
} from '../../src/machines/agent.ts';
import { createResourceManager, type ResourceManager } from '../../src/resources/resource-manager.ts';
import { shortestAgentPaths } from '../../src/testing/agent-graph.ts';

/**
 * Model-based test support for the agent statechart: the events the traversal may send (with payloads, since the
 * guards read them), the limits and configurations agent.paths.test.ts traverses under, the traversal itself, and the
 * list of every transition in the machine definition.
 */

/** The usage of every scripted model response, and a response: an empty `end_turn` one unless `partial` says. */
export const usage = { input: 1, output: 1, cached: 0, reasoning: 0 };
export const reply = (partial: Partial<ModelResponse>): ModelResponse => ({
  text: '',
  toolCalls: [],
  stopReason: 'end_turn',
  usage,
  ...partial,
});

/** The answer text that decodes against the test schema `{ x: number }`, and one that does not. */
export const goodAnswer = '{"x":1}';
export const badAnswer = 'not json';

/** A block as the guardrail events of the paths carry it. */
export const pathBlock = { name: 'g', stage: 'output' as const, message: 'blocked on the path' };

/** What the guardrail states answer: a check that allows, one that blocks. */
export const guardrailEvents: AgentEvent[] = [
  { type: 'guardrails.done' },
  { type: 'guardrails.done', blocked: pathBlock },
];

/** A block during a model call (a streaming output guardrail's, or a parallel input guardrail's). */
export const guardrailBlockedEvent: AgentEvent = {
  type: 'guardrail.blocked',
  block: pathBlock,
  modelCalled: true,
};

/** A batch whose call a tool guardrail blocked. */
export const toolBlockedEvent: AgentEvent = {
  type: 'tools.done',
  results: ['c1', 'c2'].map((callId) => ({
    callId,
    name: 't',
    content: 'Error: blocked by guardrail "g"',
    isError: true,
    executed: true,
    degraded: false,
    attempts: 1,
    blocked: { ...pathBlock, stage: 'tool_output' as const, tool: 't', callId: callId },
  })),
};

export function modelEvents(hasOutputSchema: boolean): AgentEvent[] {
  const decoded = (ok: boolean) =>
    hasOutputSchema
      ? { decoded: ok ? { ok: true as const, value: { x: 1 } } : { ok: false as const, error: 'bad' } }
      : {};
  return [
    {
      type: 'model.response',
      response: reply({ toolCalls: [{ id: 'c1', name: 't', args: { n: 1 } }], stopReason: 'tool_use' }),
    },
    {
      type: 'model.response',
      response: reply({ toolCalls: [{ id: 'c2', name: 't', args: { n: 2 } }], stopReason: 'tool_use' }),
    },
    { type: 'model.response', response: reply({ text: goodAnswer }), ...decoded(true) },
    ...(hasOutputSchema
      ? [{ type: 'model.response' as const, response: reply({ text: badAnswer }), ...decoded(false) }]
      : []),
    // The effects actor decodes every text-only response when there is a schema, so these carry a failed decode.
    {
      type: 'model.response',
      response: reply({
        stopReason: undefined,
        reasoning: [{ provider: 'test', data: { thinking: 'hmm' } }],
      }),
      ...decoded(false),
    },
    { type: 'model.response', response: reply({ stopReason: 'refusal', refusal: 'no' }), ...decoded(false) },
    // A turn the provider paused (pause_turn): continued within the step limit, never taken as the answer.
    {
      type: 'model.response',
      response: reply({ text: 'searching', stopReason: 'pause_turn' }),
      ...decoded(false),
    },
    { type: 'model.response', response: reply({ stopReason: 'max_tokens' }), ...decoded(false) },
    { type: 'model.error', error: { name: 'ModelError', code: 'model_server', message: 'boom' } },
    { type: 'model.denied', reason: 'budget_exhausted', message: 'token budget of the path exhausted' },
  ];
}

/**
 * A resource manager for replays: a real one, except that a call whose next path event is `model.denied` is
 * denied (and that event consumed) before the model is asked, as a used-up budget would.
 */
export function pathResources(
  peek: () => AgentEvent | undefined,
  consume: () => void,
  clock: Clock,
): ResourceManager {
  const real = createResourceManager({ clock });
  return {
    ...real,
    reserve: (request, signal) => {
      const next = peek();
      if (next?.type !== 'model.denied') return real.reserve(request, signal);
      consume();
      return Promise.resolve({
        granted: false,
        reason: 'budget_exhausted',
        scope: request.session,
        message: next.message,
      });
    },
  };
}

export const toolEvents: AgentEvent[] = [
  {
    type: 'tools.done',
    results: ['c1', 'c2'].map((callId) => ({
      callId,
      name: 't',
      content: 'ok',
      isError: false,
      executed: true,
      degraded: false,
      attempts: 1,
    })),
  },
  {
    type: 'tools.done',
    results: ['c1', 'c2'].map((callId) => ({
      callId,
      name: 't',
      content: 'Error: failed',
      isError: true,
      executed: true,
      degraded: true,
      attempts: 1,
    })),
  },
];

export const controlEvents: AgentEvent[] = [{ type: 'abort' }, { type: 'timeout' }];

export interface PathConfig {
  name: string;
  limits: ResolvedLimits;
  tools: boolean;
  schema: boolean;
  /** Input (blocking and parallel), output (whole and streaming) and tool guardrails. */
  guardrails?: boolean;
}

/** Small limits: every state and transition is reached within a few steps. */
export const smallLimits: ResolvedLimits = {
  ...defaultLimits,
  maxSteps: 2,
  maxDecodeRetries: 1,
  maxDuplicateToolCalls: 1,
  maxToolCallsPerTool: 1,
  maxToolRetries: 0,
};

/** The configurations agent.paths.test.ts generates paths for (and replays on the real runtime). */
export const pathConfigs: PathConfig[] = [
  { name: 'tools + schema', limits: smallLimits, tools: true, schema: true },
  {
    name: 'tools + schema + final answer at the step limit',
    limits: { ...smallLimits, finalAnswerOnMaxSteps: true },
    tools: true,
    schema: true,
  },
  { name: 'tools, no schema', limits: smallLimits, tools: true, schema: false },
  {
    name: 'tools, no schema, no answer at tool-call limits',
    limits: { ...smallLimits, finalAnswerOnToolLimits: false },
    tools: true,
    schema: false,
  },
  { name: 'no tools + schema', limits: smallLimits, tools: false, schema: true },
  { name: 'tools + schema + guardrails', limits: smallLimits, tools: true, schema: true, guardrails: true },
  {
    name: 'no tools, no schema + guardrails',
    limits: smallLimits,
    tools: false,
    schema: false,
    guardrails: true,
  },
];

export function machineInput(config: PathConfig): AgentMachineInput {
  return {
    sessionId: 'paths',
    agent: 'pathfinder',
    limits: config.limits,
    toolNames: config.tools ? ['t'] : [],
    hasOutputSchema: config.schema,
    history: [{ role: 'user', content: 'go' }],
    baseLength: 0,
    ...(config.guardrails
      ? { guardrails: { input: true, parallelInput: true, output: true, tools: config.tools } }
      : {}),
  };
}

/**
 * Shortest paths to every (state, incoming transition) pair, so that every event edge the machine can take is the
 * last step of some path (the traversal is the one `agentPaths` of troupe/testing uses).
 */
export function generatePaths(config: PathConfig): StatePath<SnapshotFrom<AgentMachine>, AgentEvent>[] {
  return shortestAgentPaths(machineInput(config), [
    ...modelEvents(config.schema),
    ...toolEvents,
    ...controlEvents,
    ...(config.guardrails ? [...guardrailEvents, guardrailBlockedEvent, toolBlockedEvent] : []),
  ]);
}

/**
 * A checkpoint to resume from at `step` (as many model calls, no tool run yet): with `open` calls and a
 * `continue_with_tools` decision for them, or with none open and no decision.
 */
export function agentCheckpoint({
  step,
  open,
  history,
  usage,
}: {
  step: number;
  open: AgentCheckpoint['openCalls'];
  history: AgentCheckpoint['history'];
  usage: AgentCheckpoint['usage'];
}): AgentCheckpoint {
  return {
    history,
    step,
    modelCalls: step,
    toolCallsRun: 0,
    toolCallCounts: {},
    callSignatures: {},
    degradedTools: [],
    usage,
    openCalls: [...open],
    decision: open.length > 0 ? { kind: 'continue_with_tools', calls: [...open] } : null,
    retryCount: 0,
    forcedFinalAnswer: false,
    approvals: null,
    phase: 'toolUse',
  };
}

export {
  allTransitions,
  sessionOnlyEvents,
  sessionOnlyGuards,
  sessionOnlyStates,
  transitionName,
} from '../../src/testing/agent-graph.ts';
