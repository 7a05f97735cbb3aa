import { AssertionError } from 'node:assert';
import { decodeOutput } from '../agent/decode-output.ts';
import type { Agent } from '../agent/define-agent.ts';
import { ConfigError, ModelError } from '../core/errors.ts';
import type { GuardrailStage } from '../core/events.ts';
import type { GuardrailBlock } from '../core/guardrail-block.ts';
import { type AgentLimits, type ResolvedLimits, resolveLimits } from '../core/limits.ts';
import type { RunInput } from '../core/messages.ts';
import type { ModelResponse } from '../core/model.ts';
import type { RunResult } from '../core/result.ts';
import { type RunStatus, type StopReason, statusOf } from '../core/stop-reason.ts';
import type { Guardrail } from '../guardrails/guardrail.ts';
import { guardrailInput } from '../guardrails/guardrail-plan.ts';
import type { AgentEvent } from '../machines/agent.ts';
import { run } from '../sessions/run.ts';
import type { AgentSnapshot } from './agent-graph.ts';
import { exploreAgent } from './agent-reach.ts';
import { agentVariant } from './agent-variant.ts';
import { coveringWalks } from './covering-walks.ts';
import type { PathCoverage } from './path-coverage.ts';
import {
  type PathGuardrailAction,
  type PathGuardrailDecision,
  pathBlockMessage,
  pathGuardrails,
} from './path-guardrails.ts';
import { exampleFromSchema } from './schema-values.ts';
import { type ScriptedTurn, scriptedModel } from './scripted-model.ts';

/** One step of a path: what the model, a tool or the caller does next. */
export type PathStep =
  | { kind: 'model'; turn: ScriptedTurn; description: string }
  | { kind: 'tool'; outcome: 'ok' | 'fails'; description: string }
  | { kind: 'abort'; description: string }
  | {
      /**
       * A guardrail of the agent decides: on `allow` the agent's guardrails check for real, on `block` the guardrail
       * named blocks (its check is not run). A streaming output guardrail blocks while the model gives `turn`.
       */
      kind: 'guardrail';
      stage: GuardrailStage;
      guardrail: string;
      decision: PathGuardrailDecision;
      turn?: ScriptedTurn;
      description: string;
    };

/** How a path's run must end, as the statechart predicts it. */
export interface PathExpectation {
  stopReason: StopReason;
  status: RunStatus;
  /** Model calls the run makes. */
  modelCalls: number;
  /** The final state of the agent statechart (`completed`, `stopped`, `failed`). */
  state: string;
  /** The guardrail that blocks the run (`result.guardrail.name`), on a path that ends guardrail_blocked by one. */
  guardrail?: string;
}

/** A path through the agent statechart for one agent, ready to run in your test runner. */
export interface AgentPath<TOutput> {
  /** What happens on the path and how it ends: `model calls search → tool ok → model answers ⇒ completed`. */
  name: string;
  /** The model's turns, in order (give them to `scriptedModel` to run the path yourself). */
  script: ScriptedTurn[];
  /**
   * Every step: model turns, tool outcomes (the path's tool is stubbed to answer "ok" or throw), guardrail decisions
   * and aborts.
   */
  steps: PathStep[];
  expected: PathExpectation;
  /**
   * Runs the agent on the path: its model scripted, the path's tool stubbed, the other tools untouched, its
   * guardrails checking for real except the one a `block` step names, which blocks.
   */
  run(): Promise<RunResult<TOutput>>;
}

export interface AgentPathsOptions {
  /**
   * The limits the paths are generated for and run with. By default the agent's own, made small so that every
   * ending is a few steps away (at most 3 steps, 2 identical calls, 3 calls per tool, 1 decode retry); `'agent'`
   * keeps them exactly (large limits mean long paths, and generating them takes seconds); an object is merged over
   * the agent's own.
   */
  limits?: AgentLimits | 'agent' | undefined;
  /** The tool the paths call. Default: the agent's first tool (handoff tools aside). */
  tool?: string | undefined;
  /** What each run is asked. Default 'Go.' */
  input?: RunInput | undefined;
  /** Record every path's run into this coverage recorder, and tell it what the paths can reach. */
  coverage?: PathCoverage | undefined;
  /** At most this many paths (the shortest first). Default 500. */
  maxPaths?: number | undefined;
}

/**
 * The paths through the agent statechart that end a run, for this agent's configuration (its limits, whether it
 * has tools and an output schema), from a walk of every state the machine can reach: shortest paths to every way
 * the machine can end, one per final transition. Each comes with a model script, the tool outcomes, the predicted stop reason, and a
 * `run()` that plays it on the real runtime. Run them in your test runner:
 *
 *     for (const path of agentPaths(agent)) it(path.name, async () => expectPath(await path.run(), path));
 *
 * An agent with guardrails also gets the paths where they check: each guardrail stage it has allows (its guardrails
 * run for real) or blocks (the stage's first guardrail is made to block), ending guardrail_blocked.
 *
 * Every transition the agent can take is on some path: after the shortest path to each ending, the shortest path
 * through each transition those miss (ended by the caller's abort). Handoffs, approvals, budgets and timeouts are not
 * on these paths (a session or a resource manager decides them): calls that wait for approval are approved.
 */
export function agentPaths<TOutput>(
  agent: Agent<TOutput>,
  options: AgentPathsOptions = {},
): AgentPath<TOutput>[] {
  const where = `agentPaths(${JSON.stringify(agent.name)})`;
  const limits = pathLimits(agent.limits, options.limits, where);
  const ownTools = agent.tools.names.filter((name) => !Object.hasOwn(agent.handoffTools, name));
  const toolName = options.tool ?? ownTools[0];
  if (toolName !== undefined && !ownTools.includes(toolName))
    throw new ConfigError(
      `${where}: the agent has no tool "${toolName}" (it has ${ownTools.join(', ') || 'none'}).`,
    );
  const events = pathEvents(agent as Agent<unknown>, toolName, limits);
  const reach = exploreAgent(
    {
      sessionId: 'paths',
      agent: agent.name,
      limits,
      // Handoff tools count: an agent with only handoffs still calls its model with tools on, as the runtime does.
      toolNames: agent.tools.names,
      hasOutputSchema: agent.outputSchema !== undefined,
      history: [{ role: 'user', content: 'Go.' }],
      baseLength: 0,
      ...guardrailInput(agent.guardrails),
    },
    events.map((event) => event.event),
    // Parallel input guardrails check beside the first model call only.
    (snapshot, event) =>
      event.type !== 'guardrail.blocked' || event.modelCalled || snapshot.context.modelCalls === 0,
  );
  const walks = coveringWalks(reach, abortEvent);
  options.coverage?.expectReachable({ states: reach.states, transitions: [...reach.transitions.keys()] });
  const described = new Map(events.map((event) => [JSON.stringify(event.event), event.step]));
  const names = new Set<string>();
  const paths = walks.slice(0, options.maxPaths ?? 500).map((walk): AgentPath<TOutput> => {
    const steps = walk.events.map((event, index) => {
      const known = described.get(JSON.stringify(event)) as PathEvent['step'];
      return typeof known === 'function' ? known(walk.states[index] as AgentSnapshot) : known;
    });
    const end = walk.states[walk.states.length - 1] as AgentSnapshot;
    const stopReason = end.context.stopReason as StopReason;
    const last = steps[steps.length - 1];
    const story = `${steps.map((step) => step.description).join(' → ')} ⇒ ${stopReason}`;
    let name = story;
    for (let n = 2; names.has(name); n++) name = `${story} (${n})`;
    names.add(name);
    return {
      name,
      script: steps.flatMap((step) => (step.kind === 'model' ? [step.turn] : [])),
      steps,
      expected: {
        stopReason,
        status: statusOf(stopReason),
        modelCalls: end.context.modelCalls,
        state: String(end.value),
        ...(last?.kind === 'guardrail' && last.decision === 'block' ? { guardrail: last.guardrail } : {}),
      },
      run: () => runPath(agent, steps, limits, toolName, options),
    };
  });
  return paths;
}

/**
 * Throws an AssertionError unless the run ended as the path predicts: its stop reason, status and number of model
 * calls, and the guardrail that blocked it.
 */
export function expectPath(
  result: RunResult<unknown>,
  path: Pick<AgentPath<unknown>, 'name' | 'expected'>,
): void {
  const actual: Record<string, unknown> = {
    stopReason: result.stopReason,
    status: result.status,
    modelCalls: result.modelCalls,
  };
  const expected: Record<string, unknown> = {
    stopReason: path.expected.stopReason,
    status: path.expected.status,
    modelCalls: path.expected.modelCalls,
  };
  if (path.expected.guardrail !== undefined || result.guardrail !== undefined) {
    actual.guardrail = result.guardrail?.name ?? null;
    expected.guardrail = path.expected.guardrail ?? null;
  }
  if (JSON.stringify(actual) !== JSON.stringify(expected))
    throw new AssertionError({
      message: `path "${path.name}": expected ${JSON.stringify(expected)}, the run gave ${JSON.stringify(actual)}${result.error ? ` (${result.error.name}: ${result.error.message})` : ''}`,
      actual,
      expected,
      operator: 'expectPath',
    });
}

function pathLimits(
  own: ResolvedLimits,
  given: AgentLimits | 'agent' | undefined,
  where: string,
): ResolvedLimits {
  if (given === 'agent') return own;
  if (given === undefined)
    return {
      ...own,
      maxSteps: Math.min(own.maxSteps, 3),
      maxDuplicateToolCalls: Math.min(own.maxDuplicateToolCalls, 2),
      maxToolCallsPerTool: own.maxToolCallsPerTool === null ? null : Math.min(own.maxToolCallsPerTool, 3),
      maxDecodeRetries: Math.min(own.maxDecodeRetries, 1),
    };
  return resolveLimits(
    {
      ...own,
      toolTimeoutMs: own.toolTimeoutMs ?? undefined,
      timeoutMs: own.timeoutMs ?? undefined,
      ...given,
    },
    where,
  );
}

interface PathEvent {
  event: AgentEvent;
  /** The step, or how to tell it from the state the event is taken in (one event serves several guardrail stages). */
  step: PathStep | ((before: AgentSnapshot) => PathStep);
}

/** The caller's abort: it ends a run from any state, and ends the walks that cover a transition midway. */
const abortEvent: AgentEvent = { type: 'abort' };

const usage = { input: 1, output: 1, cached: 0, reasoning: 0 };

function response(partial: Partial<ModelResponse>): ModelResponse {
  return { text: '', toolCalls: [], stopReason: 'end_turn', usage, ...partial };
}

function turnOf(r: ModelResponse): ScriptedTurn {
  // Without ids: the scripted model numbers each call, so a repeated call gets an id of its own, as from a real model.
  const toolCalls = r.toolCalls.map(({ name, args }) => ({ name, args }));
  const turn: ScriptedTurn = { text: r.text, toolCalls, usage: r.usage };
  if (r.stopReason !== undefined && r.stopReason !== 'unknown') turn.stopReason = r.stopReason;
  if (r.refusal !== undefined) turn.refusal = r.refusal;
  return turn;
}

/** The events the traversal may send, each with the step that plays it on the real runtime. */
function pathEvents(
  agent: Agent<unknown>,
  toolName: string | undefined,
  limits: Agent<unknown>['limits'],
): PathEvent[] {
  const schema = agent.outputSchema;
  const decoded = (text: string) => (schema ? { decoded: decodeOutput(text, schema) } : {});
  const model = (r: ModelResponse, description: string): PathEvent => ({
    event: { type: 'model.response', response: r, ...decoded(r.text) },
    step: { kind: 'model', turn: turnOf(r), description },
  });
  const events: PathEvent[] = [];
  if (toolName !== undefined) {
    const parameters = agent.tools.get(toolName).parameters;
    // Enough distinct calls to reach the step limit before duplicate detection ends the run (two at least, four at most).
    const variants = Math.min(4, Math.max(2, Math.ceil(limits.maxSteps / limits.maxDuplicateToolCalls)));
    for (let variant = 0; variant < variants; variant++) {
      const call = {
        id: `call_${variant + 1}`,
        name: toolName,
        args: exampleFromSchema(parameters, variant),
      };
      events.push(
        model(
          response({ toolCalls: [call], stopReason: 'tool_use' }),
          `model calls ${toolName} #${variant + 1}`,
        ),
      );
    }
  }
  const answer = agent.outputSpec ? JSON.stringify(exampleFromSchema(agent.outputSpec.schema)) : 'Done.';
  events.push(model(response({ text: answer }), 'model answers'));
  if (schema) events.push(model(response({ text: 'not json' }), 'model answers with bad JSON'));
  events.push(model(response({ stopReason: undefined }), 'model says nothing'));
  events.push(
    model(response({ stopReason: 'refusal', refusal: 'I cannot help with that.' }), 'model refuses'),
  );
  events.push(model(response({ stopReason: 'max_tokens' }), 'model is cut off (max_tokens)'));
  events.push({
    event: {
      type: 'model.error',
      error: { name: 'ModelError', code: 'model_server', message: 'path: the provider failed' },
    },
    step: {
      kind: 'model',
      turn: { error: new ModelError('server', 'path: the provider failed') },
      description: 'model fails',
    },
  });
  if (toolName !== undefined) {
    for (const outcome of ['ok', 'fails'] as const)
      events.push({
        event: {
          type: 'tools.done',
          results: [
            {
              callId: 'call',
              name: toolName,
              content: outcome === 'ok' ? 'ok' : 'Error: failed',
              isError: outcome === 'fails',
              executed: true,
              degraded: outcome === 'fails',
              attempts: 1,
            },
          ],
        },
        step: {
          kind: 'tool',
          outcome,
          description: outcome === 'ok' ? `${toolName} answers` : `${toolName} fails`,
        },
      });
  }
  if (agent.guardrails) events.push(...guardrailEvents(agent, toolName, answer));
  events.push({ event: abortEvent, step: { kind: 'abort', description: 'the caller aborts' } });
  return events;
}

/** A guardrail that stops the run when it blocks (a tool guardrail may only answer the model instead). */
const stops = (guardrail: Guardrail) => guardrail.onBlock === 'stop';

/** The guardrail events of an agent with guardrails: what its stages decide, each with the step that plays it. */
function guardrailEvents(agent: Agent<unknown>, toolName: string | undefined, answer: string): PathEvent[] {
  const guardrails = agent.guardrails;
  if (!guardrails) return [];
  const events: PathEvent[] = [];
  const block = (name: string, stage: GuardrailStage): GuardrailBlock => ({
    name,
    stage,
    message: pathBlockMessage,
  });
  const say = (decision: PathGuardrailDecision, name: string, stage: GuardrailStage) =>
    decision === 'allow'
      ? `${stage} guardrails allow`
      : `guardrail "${name}" blocks the ${stage.replace('_', ' ')}`;
  // Whole-input and whole-answer checks answer the same event: the state it is taken in tells the stage.
  const firstInput = guardrails.input[0];
  const firstOutput = guardrails.output[0];
  if (firstInput || firstOutput)
    for (const decision of ['allow', 'block'] as const)
      events.push({
        event:
          decision === 'allow'
            ? { type: 'guardrails.done' }
            : { type: 'guardrails.done', blocked: block('path', 'input') },
        step: (before) => {
          const stage = before.matches({ running: 'checkingInput' }) ? 'input' : 'output';
          const name = ((stage === 'input' ? firstInput : firstOutput) as Guardrail).name;
          return {
            kind: 'guardrail',
            stage,
            guardrail: name,
            decision,
            description: say(decision, name, stage),
          };
        },
      });
  const parallel = guardrails.parallelInput[0];
  if (parallel)
    events.push({
      event: { type: 'guardrail.blocked', block: block(parallel.name, 'input'), modelCalled: false },
      step: {
        kind: 'guardrail',
        stage: 'input',
        guardrail: parallel.name,
        decision: 'block',
        description: say('block', parallel.name, 'input'),
      },
    });
  const streaming = guardrails.streamingOutput[0];
  if (streaming)
    events.push({
      event: { type: 'guardrail.blocked', block: block(streaming.name, 'output'), modelCalled: true },
      step: {
        kind: 'guardrail',
        stage: 'output',
        guardrail: streaming.name,
        decision: 'block',
        turn: { text: answer },
        description: `guardrail "${streaming.name}" blocks the streamed answer`,
      },
    });
  const toolGuardrail = guardrails.toolInput.find(stops) ?? guardrails.toolOutput.find(stops);
  if (toolName !== undefined && toolGuardrail) {
    const stage = guardrails.toolInput.includes(toolGuardrail) ? 'tool_input' : 'tool_output';
    events.push({
      event: {
        type: 'tools.done',
        results: [
          {
            callId: 'call',
            name: toolName,
            content: `Error: blocked by guardrail "${toolGuardrail.name}": ${pathBlockMessage}`,
            isError: true,
            executed: stage === 'tool_output',
            degraded: false,
            attempts: stage === 'tool_output' ? 1 : 0,
            blocked: { ...block(toolGuardrail.name, stage), tool: toolName, callId: 'call' },
          },
        ],
      },
      step: {
        kind: 'guardrail',
        stage,
        guardrail: toolGuardrail.name,
        decision: 'block',
        description: `guardrail "${toolGuardrail.name}" blocks ${toolName}'s ${stage === 'tool_input' ? 'call' : 'result'}`,
      },
    });
  }
  return events;
}

/** Runs the agent so that the model, the path's tool and the caller follow the path's steps in order. */
async function runPath<TOutput>(
  agent: Agent<TOutput>,
  steps: readonly PathStep[],
  limits: Agent<TOutput>['limits'],
  toolName: string | undefined,
  options: AgentPathsOptions,
): Promise<RunResult<TOutput>> {
  const controller = new AbortController();
  let cursor = 0;
  const next = (): PathStep | undefined => steps[cursor++];
  const peek = (): PathStep | undefined => steps[cursor];
  // The step of a streaming guardrail's block, once the model call it blocks has started.
  let streamed: PathStep | undefined;
  // An abort arrives while the effect it interrupts is in flight, as it would in production.
  const abortSoon = () => setTimeout(() => controller.abort(), 0);
  const model = scriptedModel((): ScriptedTurn => {
    const coming = peek();
    // A guardrail that checks beside the call takes its step: the model answers (or waits) while it blocks.
    if (coming?.kind === 'guardrail' && (coming.stage === 'input' || coming.stage === 'output')) {
      streamed = coming;
      return coming.turn ?? { delayMs: 1e9 };
    }
    const step = next();
    if (step?.kind === 'model') return step.turn;
    if (step?.kind === 'abort') {
      abortSoon();
      return { delayMs: 1e9 };
    }
    return {
      error: new ModelError(
        'unknown',
        `the path has no model turn for model call ${cursor} (its next step is ${step?.description ?? 'the end'})`,
      ),
    };
  });
  const stubs =
    toolName === undefined
      ? undefined
      : {
          [toolName]: (_args: unknown, context: { attempt: number; signal: AbortSignal }) => {
            // Retries of a failing call stay failures: only the first attempt of a call takes a step.
            if (context.attempt > 1) throw new Error('failed');
            // The tool answers; a tool_output guardrail then takes the step and blocks the result.
            if (peek()?.kind === 'guardrail') return 'ok';
            const step = next();
            if (step?.kind === 'tool') {
              if (step.outcome === 'fails') throw new Error('failed');
              return 'ok';
            }
            if (step?.kind === 'abort') abortSoon();
            return new Promise((_resolve, reject) =>
              context.signal.addEventListener('abort', () => reject(context.signal.reason)),
            );
          },
        };
  const variant = agentVariant(agent, model, stubs, limits);
  // The guardrail a path's step names decides as scripted when it checks (see pathGuardrails).
  const take = (stage: GuardrailStage, name: string, whole: boolean): PathGuardrailAction | undefined => {
    const step = peek();
    if (step?.kind === 'abort' && whole) {
      cursor++;
      abortSoon();
      return 'wait-for-abort';
    }
    if (step?.kind !== 'guardrail' || step.stage !== stage || step.guardrail !== name) return undefined;
    // A streaming check of an earlier reply must not take the block meant for a later one.
    if (step.turn !== undefined && streamed !== step) return undefined;
    cursor++;
    return step.decision;
  };
  const guarded = variant.guardrails
    ? Object.freeze({ ...variant, guardrails: pathGuardrails(variant.guardrails, take) })
    : variant;
  return run(guarded, options.input ?? 'Go.', {
    signal: controller.signal,
    // People's decisions are not on the paths: calls that wait for one are approved.
    onApproval: () => ({ type: 'approve' }),
    ...(options.coverage ? { inspect: options.coverage.inspect } : {}),
  });
}
