import type { z } from 'zod';
import { ConfigError } from '../core/errors.ts';
import { type AgentLimits, type ResolvedLimits, resolveLimits } from '../core/limits.ts';
import { isModelProvider, type ModelProvider, type ModelSettings, type OutputSpec } from '../core/model.ts';
import { checkModelSettings } from '../core/model-settings.ts';
import { checkOptionObject, isPlainObject } from '../core/options.ts';
import { isPrototypeName } from '../core/records.ts';
import { zod } from '../core/zod.ts';
import {
  type AgentGuardrailOptions,
  type AgentGuardrails,
  resolveGuardrails,
} from '../guardrails/guardrail.ts';
import { applyStopWhen, type StopWhen } from '../policies/stop-condition.ts';
import type { ToolPermissionPolicy } from '../policies/tool-permissions.ts';
import type { ContextType, Instructions } from '../run/run-context.ts';
import { ToolRegistry } from '../tools/registry.ts';
import { type Tool, toJsonSchema } from '../tools/tool.ts';
import type { ToolSource } from '../tools/tool-source.ts';
import {
  defaultMaxHandoffDepth,
  defaultMaxHandoffRevisits,
  type HandoffInputFilter,
  type HandoffTarget,
  handoffTool,
  handoffToolName,
  targetName,
} from './handoff.ts';

export interface AgentOptions<
  TSchema extends z.ZodType | undefined = undefined,
  THandoffs extends readonly HandoffTarget[] = readonly HandoffTarget[],
  TContext = unknown,
  TTools extends readonly (Tool | ToolSource)[] = readonly (Tool | ToolSource)[],
> {
  /** Shown on every event the agent produces. 1-64 letters, digits, `_`, `-` or `.`. */
  name: string;
  /**
   * The system prompt: a string, or a function of the run context (`({ context }) => ...`, async allowed) computed
   * before each model call.
   */
  instructions: Instructions<TContext>;
  /**
   * The run context the agent needs, `contextType<AppContext>()`: runs, sessions and turns of this agent must be
   * given a `context` of that type, and its tools and instruction function receive it. Without it, an instruction
   * function's annotated parameter gives the type, or the agent needs no context (and takes no tool that needs one).
   */
  contextType?: ContextType<TContext> | undefined;
  model: ModelProvider;
  /**
   * The tools the model may call: `tool(...)` definitions, and tool sources such as MCP servers (`mcpServer(...)`
   * from `troupe/mcp`). A tool defined with a contextType needs a context this agent's context type satisfies; an
   * agent that declares no context takes no such tool.
   */
  tools?: (TTools & ToolsFor<TTools, NoInfer<TContext>>) | undefined;
  /**
   * Decides for each tool call, before it runs, whether this caller may make it: `allow`, `deny` (the model gets an
   * error result; the tool never runs) or `ask` (the call waits for a person, as with `needsApproval`). It gets the
   * run context, e.g. `permissions.byRole({ admin: ['*'], user: ['search'] }, (context) => context.role)`. A policy
   * that throws denies. Every decision to deny or ask is a `permission` event.
   */
  permissions?: ToolPermissionPolicy<NoInfer<TContext>> | undefined;
  /** A zod schema for a structured final answer; the result's `output` is typed from it. */
  output?: TSchema | undefined;
  /** Loop limits, each optional (see `defaultLimits`): the simple form of `stopWhen`. */
  limits?: AgentLimits | undefined;
  /**
   * When the run stops, as data composed from `stepCountIs`, `toolCallCountIs` and `duplicateToolCallCountIs`: one
   * condition or a list, the first met stops the run (with `max_steps`, `tool_call_limit` or `duplicate_tool_call`,
   * after the last tool-less answer `limits` asks for). It adds to `limits`: whichever is met sooner stops the run.
   */
  stopWhen?: StopWhen | undefined;
  /** Default model settings for every call of this agent. */
  settings?: ModelSettings | undefined;
  /** What the agent is for; shown to other agents' models (handoff tools, agentTool). */
  description?: string | undefined;
  /**
   * Agents (or agent names) this one may hand the conversation to; the model sees `transfer_to_<name>` tools. The
   * agent's output type includes what every agent given here can answer with; a name could be any agent, so a
   * target given by name makes it `unknown`.
   */
  handoffs?: THandoffs | undefined;
  /** What history a handoff target sees; default: the whole conversation. */
  handoffInputFilter?: HandoffInputFilter | undefined;
  /** Handoffs per turn before the turn ends with `handoff_limit` (this agent as the entry). Default 5. */
  maxHandoffDepth?: number | undefined;
  /** How often an agent already on the handoff path may be handed to again; beyond, it is refused. Default 1. */
  maxHandoffRevisits?: number | undefined;
  /**
   * Checks of the run's input, its final answer, tool calls' arguments and tools' results, each deciding allow, warn
   * or block (the run ends with guardrail_blocked). See `guardrail()`.
   */
  guardrails?: AgentGuardrailOptions<NoInfer<TContext>> | undefined;
}

/**
 * A defined agent: checked once, immutable, reusable across any number of runs. `TOutput` is what a run started
 * with this agent can end with: its own output, or, after a handoff, the output of any agent it can reach.
 */
export interface Agent<TOutput = undefined, TContext = unknown> {
  readonly kind: 'agent';
  readonly name: string;
  /** The system prompt, or the function of the run context that computes it. */
  readonly instructions: Instructions<TContext>;
  readonly model: ModelProvider;
  readonly tools: ToolRegistry;
  /** This agent's own schema (its answers are among `TOutput`; a handoff target's may be others). */
  readonly outputSchema: z.ZodType<TOutput> | undefined;
  /** The output schema as JSON Schema, sent in the final-output phase. */
  readonly outputSpec: OutputSpec | undefined;
  readonly limits: ResolvedLimits;
  readonly settings: ModelSettings;
  readonly description: string;
  readonly handoffs: readonly HandoffTarget[];
  /** Handoff tool name -> target agent name. */
  readonly handoffTools: Readonly<Record<string, string>>;
  readonly handoffInputFilter: HandoffInputFilter | undefined;
  readonly maxHandoffDepth: number;
  readonly maxHandoffRevisits: number;
  /** The agent's guardrails by when they run; undefined when it has none. */
  readonly guardrails: AgentGuardrails | undefined;
  /** The tool-permission policy, if any (see AgentOptions.permissions). */
  readonly permissions: ToolPermissionPolicy<TContext> | undefined;
}

/** The context an agent's tools get: its own, or `undefined` for an agent that declares none. */
type ToolContextOf<TContext> = unknown extends TContext ? undefined : TContext;

/**
 * What one entry of the list must be: a tool source as it is, a tool one that accepts the agent's context. It
 * distributes over a union, so an entry typed `Tool | ToolSource` (a list built elsewhere, `[...tools, ...servers]`)
 * is checked member by member.
 */
type ToolEntryFor<TEntry, TContext> = TEntry extends ToolSource
  ? ToolSource
  : Tool<unknown, unknown, ToolContextOf<TContext>>;

/** Each of the tools, as one that accepts the agent's context: a tool needing another context does not fit. */
type ToolsFor<TTools extends readonly (Tool | ToolSource)[], TContext> = {
  readonly [K in keyof TTools]: ToolEntryFor<TTools[K], TContext>;
};

export type OutputOf<TSchema> = TSchema extends z.ZodType ? z.output<TSchema> : undefined;

/**
 * What the agents in a handoff list can answer with. An agent carries the outputs of everything it reaches through
 * its own handoffs, so this is recursive; a target given by name could be any agent, so it contributes `unknown`.
 */
export type HandoffOutputOf<THandoffs extends readonly HandoffTarget[]> = TargetOutput<THandoffs[number]>;

type TargetOutput<TTarget> = TTarget extends Agent<infer TOutput> ? TOutput : unknown;

const agentNamePattern = /^[a-zA-Z0-9_.-]{1,64}$/;

const agentOptionKeys: readonly string[] = [
  'name',
  'instructions',
  'contextType',
  'model',
  'tools',
  'output',
  'limits',
  'stopWhen',
  'settings',
  'description',
  'handoffs',
  'handoffInputFilter',
  'maxHandoffDepth',
  'maxHandoffRevisits',
  'guardrails',
  'permissions',
];

/**
 * Defines an agent. Everything is checked here, so a bad definition fails at start-up with a ConfigError (or a
 * DuplicateToolError) rather than in the middle of a run.
 */
export function defineAgent<
  TSchema extends z.ZodType | undefined = undefined,
  const THandoffs extends readonly HandoffTarget[] = readonly [],
  TContext = unknown,
  const TTools extends readonly (Tool | ToolSource)[] = readonly [],
>(
  options: AgentOptions<TSchema, THandoffs, TContext, TTools>,
): Agent<OutputOf<TSchema> | HandoffOutputOf<THandoffs>, TContext> {
  if (!isPlainObject(options)) throw new ConfigError('defineAgent(): options must be an object.');
  const where = `defineAgent(${JSON.stringify(options.name)})`;
  if (typeof options.name !== 'string' || !agentNamePattern.test(options.name)) {
    throw new ConfigError(`${where}: name must be 1-64 letters, digits, "_", "-" or ".".`);
  }
  if (isPrototypeName(options.name))
    throw new ConfigError(
      `${where}: "${options.name}" is a built-in property name of JavaScript objects; choose another name.`,
    );
  checkOptionObject(options, agentOptionKeys, where);
  if (typeof options.instructions !== 'string' && typeof options.instructions !== 'function')
    throw new ConfigError(`${where}: instructions must be a string or a function of the run context.`);
  if (options.permissions !== undefined && typeof options.permissions !== 'function')
    throw new ConfigError(
      `${where}: permissions must be a function (call, info) => 'allow' | 'deny' | 'ask', e.g. permissions.byRole(...).`,
    );
  if (options.contextType !== undefined && options.contextType?.kind !== 'context-type')
    throw new ConfigError(`${where}: contextType must be contextType<YourContext>().`);
  if (!isModelProvider(options.model)) {
    throw new ConfigError(
      `${where}: model must be a ModelProvider (for example scriptedModel([...]) from 'troupe/testing').`,
    );
  }
  if (options.tools !== undefined && !Array.isArray(options.tools)) {
    throw new ConfigError(`${where}: tools must be an array of tool(...) definitions.`);
  }
  if (options.output !== undefined && !(options.output instanceof zod().ZodType)) {
    throw new ConfigError(`${where}: output must be a zod schema.`);
  }
  const outputSchema = options.output as z.ZodType<OutputOf<TSchema>> | undefined;
  const handoffs = checkHandoffs(options, where);
  const handoffTools: Record<string, string> = {};
  for (const target of handoffs) handoffTools[handoffToolName(targetName(target))] = targetName(target);
  const count = (key: 'maxHandoffDepth' | 'maxHandoffRevisits', fallback: number): number => {
    const value = options[key];
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
      throw new ConfigError(`${where}: ${key} must be an integer >= 0, got ${String(value)}.`);
    return value;
  };
  return Object.freeze({
    kind: 'agent',
    name: options.name,
    instructions: options.instructions,
    model: options.model,
    tools: new ToolRegistry([...(options.tools ?? []), ...handoffs.map(handoffTool)]),
    outputSchema,
    outputSpec: outputSchema
      ? {
          name: `${options.name.replace(/\./g, '_')}_output`,
          schema: toJsonSchema(outputSchema, where, true),
        }
      : undefined,
    limits: applyStopWhen(resolveLimits(options.limits, where), options.stopWhen, where),
    settings: checkModelSettings(options.settings, where),
    description: options.description ?? '',
    handoffs,
    handoffTools: Object.freeze(handoffTools),
    handoffInputFilter: options.handoffInputFilter,
    maxHandoffDepth: count('maxHandoffDepth', defaultMaxHandoffDepth),
    maxHandoffRevisits: count('maxHandoffRevisits', defaultMaxHandoffRevisits),
    guardrails: resolveGuardrails(options.guardrails, where),
    permissions: options.permissions,
  });
}

function checkHandoffs(
  options: Pick<AgentOptions<z.ZodType | undefined>, 'handoffs' | 'description' | 'handoffInputFilter'>,
  where: string,
): HandoffTarget[] {
  const given = options.handoffs ?? [];
  if (!Array.isArray(given)) throw new ConfigError(`${where}: handoffs must be an array of agents or names.`);
  if (options.description !== undefined && typeof options.description !== 'string')
    throw new ConfigError(`${where}: description must be a string.`);
  if (options.handoffInputFilter !== undefined && typeof options.handoffInputFilter !== 'function')
    throw new ConfigError(`${where}: handoffInputFilter must be a function.`);
  const seen = new Set<string>();
  for (const target of given) {
    const name = typeof target === 'string' ? target : target?.kind === 'agent' ? target.name : undefined;
    if (name === undefined || !agentNamePattern.test(name) || isPrototypeName(name))
      throw new ConfigError(`${where}: every handoff must be an agent from defineAgent() or an agent name.`);
    if (seen.has(name)) throw new ConfigError(`${where}: handoff to "${name}" is listed twice.`);
    seen.add(name);
  }
  return [...given];
}
