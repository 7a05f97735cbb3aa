import { AssertionError } from 'node:assert';
import { decodeOutput } from '../agent/decode-output.ts';
import type { Agent } from '../agent/define-agent.ts';
import { ConfigError, ModelError } from '../core/errors.ts';
import { type AgentLimits, type ResolvedLimits, resolveLimits } from '../core/limits.ts';
import type { RunInput } from '../core/messages.ts';
import type { ModelResponse } from '../core/model.ts';
import type { RunResult } from '../core/result.ts';
import { type RunStatus, type StopReason, statusOf } from '../core/stop-reason.ts';
import type { AgentEvent } from '../machines/agent.ts';
import { run } from '../run/run.ts';
import { shortestAgentPaths } from './agent-graph.ts';
import { agentVariant } from './agent-variant.ts';
import type { PathCoverage } from './path-coverage.ts';
import { exampleFromSchema } from './schema-values.ts';
import { type ScriptedTurn, scriptedModel } from './scripted-model.ts';

/** One step of a path: what the model, a tool or the caller does next. */
export type PathStep =
  | { kind: 'model'; turn: ScriptedTurn; description: string }
  | { kind: 'tool'; outcome: 'ok' | 'fails'; description: string }
  | { kind: 'abort'; description: string };

/** How a path's run must end, as the statechart predicts it. */
export interface PathExpectation {
  stopReason: StopReason;
  status: RunStatus;
  /** Model calls the run makes. */
  modelCalls: number;
  /** The final state of the agent statechart (`completed`, `stopped`, `failed`). */
  state: string;
}

/** A path through the agent statechart for one agent, ready to run in your test runner. */
export interface AgentPath<TOutput> {
  /** What happens on the path and how it ends: `model calls search → tool ok → model answers ⇒ completed`. */
  name: string;
  /** The model's turns, in order (give them to `scriptedModel` to run the path yourself). */
  script: ScriptedTurn[];
  /** Every step: model turns, tool outcomes (the path's tool is stubbed to answer "ok" or throw) and aborts. */
  steps: PathStep[];
  expected: PathExpectation;
  /** Runs the agent on the path: its model scripted, the path's tool stubbed, the other tools untouched. */
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
  /** Record every path's run into this coverage recorder. */
  coverage?: PathCoverage | undefined;
  /** At most this many paths (the shortest first). Default 500. */
  maxPaths?: number | undefined;
}

/**
 * The paths through the agent statechart that end a run, for this agent's configuration (its limits, whether it
 * has tools and an output schema), generated with xstate/graph: shortest paths to every way the machine can end,
 * one per final transition. Each comes with a model script, the tool outcomes, the predicted stop reason, and a
 * `run()` that plays it on the real runtime. Run them in your test runner:
 *
 *     for (const path of agentPaths(agent)) it(path.name, async () => expectPath(await path.run(), path));
 *
 * Handoffs, approvals, budgets and timeouts are not on these paths (a session or a resource manager decides them).
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
  const graphPaths = shortestAgentPaths(
    {
      sessionId: 'paths',
      agent: agent.name,
      limits,
      toolNames: ownTools,
      hasOutputSchema: agent.outputSchema !== undefined,
      history: [{ role: 'user', content: 'Go.' }],
      baseLength: 0,
    },
    events.map((event) => event.event),
  );
  // One path per final transition: the state it leaves, the event that ends it, and the stop reason.
  const byEnding = new Map<string, (typeof graphPaths)[number]>();
  for (const path of graphPaths) {
    if (path.state.status !== 'done') continue;
    const last = path.steps[path.steps.length - 1];
    const before = path.steps[path.steps.length - 2]?.state;
    const key = JSON.stringify([before?.value, last?.event, path.state.context.stopReason]);
    const known = byEnding.get(key);
    if (known === undefined || known.steps.length > path.steps.length) byEnding.set(key, path);
  }
  const described = new Map(events.map((event) => [JSON.stringify(event.event), event.step]));
  const names = new Set<string>();
  const paths = [...byEnding.values()]
    .sort((a, b) => a.steps.length - b.steps.length)
    .slice(0, options.maxPaths ?? 500)
    .map((path): AgentPath<TOutput> => {
      const steps = path.steps.slice(1).map((step) => described.get(JSON.stringify(step.event)) as PathStep);
      const stopReason = path.state.context.stopReason as StopReason;
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
          modelCalls: path.state.context.modelCalls,
          state: String(path.state.value),
        },
        run: () => runPath(agent, steps, limits, toolName, options),
      };
    });
  return paths;
}

/**
 * Throws an AssertionError unless the run ended as the path predicts: its stop reason, status and number of model
 * calls.
 */
export function expectPath(
  result: RunResult<unknown>,
  path: Pick<AgentPath<unknown>, 'name' | 'expected'>,
): void {
  const actual = { stopReason: result.stopReason, status: result.status, modelCalls: result.iterationsUsed };
  const expected = {
    stopReason: path.expected.stopReason,
    status: path.expected.status,
    modelCalls: path.expected.modelCalls,
  };
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
  step: PathStep;
}

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
  events.push({ event: { type: 'abort' }, step: { kind: 'abort', description: 'the caller aborts' } });
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
  // An abort arrives while the effect it interrupts is in flight, as it would in production.
  const abortSoon = () => setTimeout(() => controller.abort(), 0);
  const model = scriptedModel((): ScriptedTurn => {
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
  return run(agentVariant(agent, model, stubs, limits), options.input ?? 'Go.', {
    signal: controller.signal,
    ...(options.coverage ? { inspect: options.coverage.inspect } : {}),
  });
}
